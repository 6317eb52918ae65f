//! The provider registry: every provider interface (the network that carries
//! messages, the carrier that places calls, the AI that writes agent turns)
//! is one file here implementing [`Provider`]: its world's bindings, its
//! embedded default component (which `--component-override` replaces), its
//! `serve` settings flag, what a plugin template of it declares, how it
//! links, and the host side of the import the areas call. `interfaces!`
//! below is the one list that composes them (Spin's factors, in small):
//! nothing else names the set, not the plugin registry, the command line nor
//! `admin provider`.
//!
//! Which adapter answers is decided per business and call
//! ([`Providers::adapter_for`]): the plugin the business chose
//! (`provider_choices`, set by `switchboard admin provider use`, loaded from
//! `serve --plugin-dir` by [`crate::plugins::Registry`]) with that
//! business's settings, else the embedded default with the `serve` flags'
//! settings.
//!
//! Adding a provider interface: its WIT (the contract: `kit/wit/<name>.wit`,
//! a world in `kit/wit/worlds.wit`, the import in the platform worlds), its
//! default adapter `components/sandbox-<name>/` (build.rs embeds every
//! `sandbox-*` component), one file here (`ai/mod.rs` is the worked example),
//! and one line in `interfaces!`.

/// Every provider interface: `module::Type` (the type implements
/// [`Provider`]), one line each, in the order `admin provider show` lists
/// them. The only place that knows the whole set.
macro_rules! interfaces {
    ($($module:ident :: $provider:ident,)*) => {
        $(pub mod $module;)*
        impl Interface {
            /// Every provider interface.
            pub const ALL: [Interface; [$(stringify!($module)),*].len()] = [$(Interface::of::<$module::$provider>()),*];
            const NAMES: &'static [&'static str] = &[$(<$module::$provider as Provider>::NAME),*];
        }
    };
}

interfaces! {
    messenger::Messenger,
    carrier::Carrier,
    ai::Ai,
}

use super::imports::RequestState;
use super::switchboard::provider::log;
use crate::plugins;
use anyhow::{Context, Result};
// The `settings` and `http` imports every provider world shares: generated
// with the messenger's world, named by the others' bindings (`with`).
pub use messenger::world::switchboard::provider::{http as provider_http, settings};
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// How long one call into an embedded provider component may run.
pub const PROVIDER_DEADLINE: Duration = Duration::from_secs(30);

/// One provider interface, declared in its own file: the linked adapter
/// type (embedded or a plugin, the same type) says everything about its
/// interface.
pub trait Provider: Send + Sync + Sized + 'static {
    /// The interface's name: `plugin.toml`'s `interface`, `admin provider
    /// use --interface`, `provider_choices.interface`.
    const NAME: &'static str;
    /// The world its adapters implement (`kit/wit/worlds.wit`).
    const WORLD: &'static str;
    /// The embedded default adapter (`components/<COMPONENT>`), the name
    /// `--component-override` replaces it by, and the component a plugin
    /// template copies.
    const COMPONENT: &'static str;
    /// What `admin provider show` calls the built-in adapter.
    const BUILT_IN: &'static str = "sandbox";
    /// The `serve` flag that sets the embedded adapter's settings, if any.
    const SETTINGS: Option<SettingsFlag> = None;
    /// The settings a plugin template's manifest declares.
    const TEMPLATE_SETTINGS: &'static [&'static str] = &[];

    /// Links `component` into this interface's world, with `limits` for
    /// every call (an embedded adapter's or a plugin's manifest's).
    fn link(engine: &Engine, component: &Component, limits: CallLimits) -> Result<Self>;

    /// Links the import the areas and the dispatcher call (its host side is
    /// in the interface's file).
    fn add_to_linker(linker: &mut Linker<RequestState>) -> Result<()>;
}

/// `serve --<long> NAME=VALUE` (repeatable), and the variables
/// `<env_prefix><NAME>`: the embedded adapter's settings.
#[derive(Clone, Copy, Debug)]
pub struct SettingsFlag {
    pub long: &'static str,
    pub env_prefix: &'static str,
    pub help: &'static str,
}

/// A provider interface, as the rest of the process sees it (what it
/// declares in its file, without its types): `plugins::Interface`.
#[derive(Clone, Copy)]
pub struct Interface {
    name: &'static str,
    world: &'static str,
    component: &'static str,
    built_in: &'static str,
    settings: Option<SettingsFlag>,
    template_settings: &'static [&'static str],
    link: fn(&Engine, &Component, CallLimits) -> Result<Adapter>,
    add_to_linker: fn(&mut Linker<RequestState>) -> Result<()>,
}

/// A linked adapter of some interface (its [`Provider`] type, erased).
pub type Adapter = Arc<dyn Any + Send + Sync>;

fn link_erased<P: Provider>(engine: &Engine, component: &Component, limits: CallLimits) -> Result<Adapter> {
    Ok(Arc::new(P::link(engine, component, limits)?))
}

impl Interface {
    const fn of<P: Provider>() -> Interface {
        Interface {
            name: P::NAME,
            world: P::WORLD,
            component: P::COMPONENT,
            built_in: P::BUILT_IN,
            settings: P::SETTINGS,
            template_settings: P::TEMPLATE_SETTINGS,
            link: link_erased::<P>,
            add_to_linker: P::add_to_linker,
        }
    }

    /// The interface named `name`.
    pub fn named(name: &str) -> Option<Interface> {
        Interface::ALL.into_iter().find(|i| i.name == name)
    }

    pub fn name(self) -> &'static str {
        self.name
    }

    pub fn world(self) -> &'static str {
        self.world
    }

    /// The embedded default adapter's component.
    pub fn component(self) -> &'static str {
        self.component
    }

    /// What `admin provider show` calls the built-in adapter.
    pub fn built_in(self) -> &'static str {
        self.built_in
    }

    /// The `serve` flag of the embedded adapter's settings, if it has one.
    pub fn settings_flag(self) -> Option<SettingsFlag> {
        self.settings
    }

    /// The settings a plugin template's manifest declares.
    pub fn template_settings(self) -> &'static [&'static str] {
        self.template_settings
    }

    /// Links `component` into this interface's world.
    pub fn link(self, engine: &Engine, component: &Component, limits: CallLimits) -> Result<Adapter> {
        (self.link)(engine, component, limits)
    }
}

impl PartialEq for Interface {
    fn eq(&self, other: &Interface) -> bool {
        self.name == other.name
    }
}

impl Eq for Interface {}

impl std::fmt::Debug for Interface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl serde::Serialize for Interface {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

impl<'de> serde::Deserialize<'de> for Interface {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Interface, D::Error> {
        let name = String::deserialize(d)?;
        Interface::named(&name).ok_or_else(|| serde::de::Error::unknown_variant(&name, Interface::NAMES))
    }
}

/// Settings of each interface's embedded adapter, by interface name (from
/// its `serve` flag, such as `--messenger-setting NAME=VALUE`).
pub type ProviderSettings = HashMap<&'static str, HashMap<String, String>>;

/// The settings one call sees.
pub type Settings = Arc<HashMap<String, String>>;

/// The embedded adapters linked into this process, one per interface, and
/// the plugins that may stand in for them per business.
pub struct Providers {
    defaults: HashMap<&'static str, (Adapter, Settings)>,
    pub plugins: plugins::Registry,
    /// The server's own AI, asked when a business chose no `ai` plugin.
    pub server_ai: ai::ServerAi,
    /// Opens a business's secret plugin settings.
    pub keys: plugins::sealed::Keys,
}

impl Providers {
    /// No default adapter, for tests of a call's state that reach no provider.
    #[cfg(test)]
    pub(crate) fn none(plugins: plugins::Registry) -> Providers {
        Providers { defaults: HashMap::new(), plugins, server_ai: ai::ServerAi::default(), keys: Default::default() }
    }

    /// Takes each interface's default component out of `compiled` (the
    /// embedded one or its override) and links it into its world.
    pub fn load(
        engine: &Engine,
        compiled: &mut HashMap<String, Component>,
        mut settings: ProviderSettings,
        plugins: plugins::Registry,
        server_ai: ai::ServerAi,
        keys: plugins::sealed::Keys,
    ) -> Result<Providers> {
        let mut defaults = HashMap::new();
        for interface in Interface::ALL {
            if let Some(c) = compiled.remove(interface.component) {
                let adapter = interface.link(engine, &c, CallLimits::embedded(interface.component))?;
                defaults.insert(interface.name, (adapter, Arc::new(settings.remove(interface.name).unwrap_or_default())));
            }
        }
        Ok(Providers { defaults, plugins, server_ai, keys })
    }

    /// The adapter of `P` that answers for `business`, with its settings.
    pub fn adapter_for<P: Provider>(&self, conn: &crate::db::Connection, business: &str) -> Result<(Arc<P>, Settings), Unavailable> {
        match self.plugin_for::<P>(conn, business)? {
            Some(chosen) => Ok(chosen),
            None => self.embedded::<P>(),
        }
    }

    /// The embedded default of `P`, with the `serve` flags' settings.
    pub fn embedded<P: Provider>(&self) -> Result<(Arc<P>, Settings), Unavailable> {
        let (adapter, settings) = self.defaults.get(P::NAME).ok_or(Unavailable::NotConfigured)?;
        Ok((adapter.clone().downcast::<P>().map_err(|_| Unavailable::Mismatch)?, settings.clone()))
    }

    /// The business's plugin for `P`, if it chose one.
    pub fn plugin_for<P: Provider>(&self, conn: &crate::db::Connection, business: &str) -> Result<Option<(Arc<P>, Settings)>, Unavailable> {
        let interface = Interface::named(P::NAME).expect("every Provider is in the list");
        let read = plugins::choice::read(conn, business, interface).map_err(|e| {
            tracing::error!(interface = P::NAME, businessId = business, error = %e, "provider choice unreadable");
            Unavailable::Store
        })?;
        let Some(choice) = read else {
            return Ok(None);
        };
        self.chosen::<P>(&choice, business).map(Some)
    }

    /// The loaded plugin of `choice` as `P`, with its settings opened.
    pub fn chosen<P: Provider>(&self, choice: &plugins::choice::Choice, business: &str) -> Result<(Arc<P>, Settings), Unavailable> {
        let loaded = self.plugins.get(&choice.plugin).ok_or_else(|| Unavailable::PluginNotLoaded(choice.plugin.clone()))?;
        let adapter = loaded.provider.clone().downcast::<P>().map_err(|_| Unavailable::Mismatch)?;
        // The reason names the setting and the key's variable, never a value.
        let settings = choice.open(&self.keys).map_err(|e| {
            tracing::error!(interface = P::NAME, businessId = business, error = %format!("{e:#}"), "plugin settings of business do not open");
            Unavailable::SettingsSealed
        })?;
        Ok((adapter, Arc::new(settings)))
    }
}

/// Why no adapter can answer a call.
#[derive(Debug)]
pub enum Unavailable {
    /// No adapter of this interface is linked in the build.
    NotConfigured,
    /// The business chose a plugin this process has not loaded (retryable:
    /// a reload may bring it).
    PluginNotLoaded(String),
    /// The chosen plugin implements another interface.
    Mismatch,
    /// The choice could not be read.
    Store,
    /// The business's secret settings are sealed under a key this process
    /// does not have (retryable: a restart with the key brings them).
    SettingsSealed,
}

impl Unavailable {
    /// (code, message, retryable) for the interface's error record.
    pub fn describe(&self, what: &str) -> (String, String, bool) {
        match self {
            Unavailable::NotConfigured => (format!("{what}_not_configured"), format!("no {what} adapter is linked in this build"), false),
            Unavailable::PluginNotLoaded(name) => ("plugin_not_loaded".into(), format!("the business's {what} plugin `{name}` is not loaded in this process (serve --plugin-dir, then SIGHUP)"), true),
            Unavailable::Mismatch => ("plugin_mismatch".into(), format!("the business's chosen plugin is not a {what} plugin"), false),
            Unavailable::Store => ("provider_choice_unreadable".into(), "the business's provider choice could not be read".into(), true),
            Unavailable::SettingsSealed => {
                ("plugin_settings_sealed".into(), format!("the business's {what} plugin settings are encrypted under a key this server does not have ({})", plugins::sealed::KEY_VAR), true)
            }
        }
    }
}

/// Links every provider import into the linker of area components and the
/// dispatcher.
pub fn add_to_linker(linker: &mut Linker<RequestState>) -> Result<()> {
    for interface in Interface::ALL {
        (interface.add_to_linker)(linker)?;
    }
    Ok(())
}

/// What one call into an adapter may use: memory, wall time, fuel, and the
/// outbound hosts it may reach. Embedded adapters get the host's defaults
/// and no hosts; a plugin gets what its manifest asked for.
#[derive(Clone)]
pub struct CallLimits {
    /// Who answers, for the log (`sandbox-messenger`, `plugin:acme`).
    pub name: Arc<str>,
    pub memory_bytes: usize,
    pub deadline: Duration,
    /// Wasm fuel per call; `None` on an engine that does not count fuel.
    pub fuel: Option<u64>,
    pub http: Option<Arc<plugins::http::Grant>>,
    /// A plugin's faults are reported as the plugin's (see [`Fault::error`]).
    pub plugin: bool,
}

impl CallLimits {
    pub fn embedded(name: &str) -> CallLimits {
        CallLimits { name: name.into(), memory_bytes: super::INSTANCE_MEMORY_LIMIT, deadline: PROVIDER_DEADLINE, fuel: None, http: None, plugin: false }
    }
}

/// How a call into an adapter ended when it did not return.
#[derive(Debug)]
pub enum Fault {
    Timeout,
    OutOfFuel,
    Memory,
    Trap,
}

impl Fault {
    fn of(e: &wasmtime::Error) -> Fault {
        match e.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => Fault::Timeout,
            Some(wasmtime::Trap::OutOfFuel) => Fault::OutOfFuel,
            _ if super::hit_memory_limit(e) => Fault::Memory,
            _ => Fault::Trap,
        }
    }

    /// (code, message, retryable). An embedded adapter's fault is the
    /// provider being unavailable (retried); a plugin's names the plugin and
    /// the limit it hit. A runaway is not retried (it would run away again);
    /// a trap is, like any transient failure.
    pub fn error(&self, limits: &CallLimits, unavailable_code: &str, what: &str) -> (String, String, bool) {
        if !limits.plugin {
            return (unavailable_code.into(), format!("the {what} failed"), true);
        }
        let name = &limits.name;
        match self {
            Fault::Timeout => ("plugin_timeout".into(), format!("{name} ran past its time limit of {} ms", limits.deadline.as_millis()), false),
            Fault::OutOfFuel => ("plugin_out_of_fuel".into(), format!("{name} used up its fuel ({} units)", limits.fuel.unwrap_or(0)), false),
            Fault::Memory => ("plugin_memory_limit".into(), format!("{name} asked for more than its memory limit of {} MiB", limits.memory_bytes >> 20), false),
            Fault::Trap => ("plugin_trapped".into(), format!("{name} trapped"), true),
        }
    }
}

/// A provider world's linker (WASI plus the world's imports, added by
/// `add_world`) instantiating `component`, for the adapter named in `limits`.
pub fn instance_pre(
    engine: &Engine,
    component: &Component,
    limits: &CallLimits,
    add_world: impl FnOnce(&mut Linker<ProviderState>) -> wasmtime::Result<()>,
) -> Result<wasmtime::component::InstancePre<ProviderState>> {
    let mut linker: Linker<ProviderState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    add_world(&mut linker)?;
    linker.instantiate_pre(component).map_err(anyhow::Error::from).with_context(|| format!("linking component {}", limits.name))
}

/// Runs `f` in a fresh store bounded by `limits`; `f` calls the mark it is
/// given once its instance exists (the instantiation's share of the call
/// goes to the metrics). The trap's text stays in the log (it may not name
/// a recipient: adapters see only our ids).
pub fn call<T>(engine: &Engine, limits: &CallLimits, settings: Settings, context: &str, f: impl FnOnce(&mut Store<ProviderState>, &mut dyn FnMut()) -> wasmtime::Result<T>) -> Result<T, Fault> {
    let started = Instant::now();
    let mut store = Store::new(engine, ProviderState::new(limits, settings));
    store.limiter(|s| &mut s.limits);
    store.set_epoch_deadline(super::deadline_ticks(limits.deadline));
    if let Some(fuel) = limits.fuel {
        store.set_fuel(fuel).map_err(|_| Fault::Trap)?;
    }
    let adapter = if limits.plugin { "plugin" } else { "embedded" };
    let mut instantiated = None;
    let answer = f(&mut store, &mut || instantiated = Some(started.elapsed())).map_err(|e| {
        let fault = Fault::of(&e);
        tracing::error!(context, adapter = %limits.name, fault = ?fault, error = %format!("{e:#}"), "provider call failed");
        fault
    });
    let outcome = match &answer {
        Ok(_) => "ok",
        Err(Fault::Timeout) => "timeout",
        Err(Fault::OutOfFuel) => "fuel",
        Err(Fault::Memory) => "memory",
        Err(Fault::Trap) => "trap",
    };
    crate::metrics::provider_call(adapter, outcome, instantiated.unwrap_or_default(), started);
    answer
}

/// The state of one call into a provider component: no store access, only
/// the clock, ids, log, its own settings and (a plugin) the hosts its
/// manifest names.
pub struct ProviderState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: StoreLimits,
    settings: Settings,
    name: Arc<str>,
    http: Option<Arc<plugins::http::Grant>>,
    /// When the call's time is up (outbound HTTP gets what is left).
    deadline: Instant,
}

impl ProviderState {
    pub fn new(limits: &CallLimits, settings: Settings) -> ProviderState {
        ProviderState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new().memory_size(limits.memory_bytes).instances(16).trap_on_grow_failure(true).build(),
            settings,
            name: limits.name.clone(),
            http: limits.http.clone(),
            deadline: Instant::now() + limits.deadline,
        }
    }
}

impl WasiView for ProviderState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

super::imports::clock_and_ids!(ProviderState);

impl log::Host for ProviderState {
    fn log(&mut self, level: log::Level, message: String) {
        super::imports::log_event(level, &format!("component={}", self.name), &message);
    }
}

// `settings` and `http` as every provider world imports them (generated once,
// with the messenger's world; the other worlds' bindings name these).

impl settings::Host for ProviderState {
    fn get(&mut self, name: String) -> Option<String> {
        self.settings.get(&name).cloned()
    }
}

impl provider_http::Host for ProviderState {
    fn send(&mut self, r: provider_http::Request) -> Result<provider_http::Response, String> {
        let Some(grant) = &self.http else { return Err("this adapter may reach no host".into()) };
        let left = self.deadline.saturating_duration_since(Instant::now());
        let req = plugins::http::Request { method: r.method, url: r.url, headers: r.headers, body: r.body };
        grant.send(req, left).map(|a| provider_http::Response { status: a.status, headers: a.headers, body: a.body })
    }
}
