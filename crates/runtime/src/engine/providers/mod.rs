//! The provider registry: every provider interface (the network that carries
//! messages, the AI that writes agent turns, the carrier that places
//! calls) is one file here that says its world, its default component and
//! the name `--component-override` replaces it by, and answers the import
//! the areas call. Nothing that calls a provider knows which one answers.
//!
//! Which adapter answers is decided per business and call
//! ([`Providers::messenger_for`], [`Providers::carrier_for`]): the plugin
//! the business chose (`provider_choices`, set by `switchboard admin
//! provider use`, loaded from `serve --plugin-dir` by
//! [`crate::plugins::Registry`]) with that business's settings, else the
//! embedded adapter with the `serve` flags' settings.
//!
//! Adding a provider interface: its WIT file in `wit/` and a world for its
//! adapters in `wit/worlds.wit`, one file here (copy `messenger.rs`'s shape),
//! then one field in [`Providers`] and one line each in [`Providers::load`]
//! and [`add_to_linker`], and its variant in `plugins::Interface`.

pub mod ai;
pub mod carrier;
pub mod messenger;

use super::imports::RequestState;
use super::switchboard::provider::log;
use crate::plugins::{self, Interface};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// How long one call into an embedded provider component may run.
pub const PROVIDER_DEADLINE: Duration = Duration::from_secs(30);

/// Settings of each provider component, by component name (from `serve`
/// flags such as `--messenger-setting NAME=VALUE`).
pub type ProviderSettings = HashMap<&'static str, HashMap<String, String>>;

/// The settings one call sees.
pub type Settings = Arc<HashMap<String, String>>;

/// The providers linked into this process, one field per interface, and the
/// plugins that may stand in for them per business.
pub struct Providers {
    pub messenger: Option<Arc<messenger::Messenger>>,
    pub carrier: Option<Arc<carrier::Carrier>>,
    messenger_settings: Settings,
    carrier_settings: Settings,
    pub plugins: plugins::Registry,
}

impl Providers {
    /// Takes each provider's component out of `compiled` (the embedded one
    /// or its override) and links it into its own world.
    pub fn load(engine: &Engine, compiled: &mut HashMap<String, Component>, settings: ProviderSettings, plugins: plugins::Registry) -> Result<Providers> {
        let settings_of = |name: &str| Arc::new(settings.get(name).cloned().unwrap_or_default());
        Ok(Providers {
            messenger: match compiled.remove(messenger::COMPONENT) {
                Some(c) => Some(Arc::new(messenger::Messenger::link(engine, &c, CallLimits::embedded(messenger::COMPONENT))?)),
                None => None,
            },
            carrier: match compiled.remove(carrier::COMPONENT) {
                Some(c) => Some(Arc::new(carrier::Carrier::link(engine, &c, CallLimits::embedded(carrier::COMPONENT))?)),
                None => None,
            },
            messenger_settings: settings_of(messenger::COMPONENT),
            carrier_settings: settings_of(carrier::COMPONENT),
            plugins,
        })
    }

    /// The messenger that answers for `business`, with its settings.
    pub fn messenger_for(&self, conn: &crate::db::Connection, business: &str) -> Result<(Arc<messenger::Messenger>, Settings), Unavailable> {
        match self.chosen(conn, business, Interface::Messenger)? {
            Some((plugins::Provider::Messenger(m), settings)) => Ok((m, settings)),
            Some(_) => Err(Unavailable::Mismatch),
            None => self.messenger.clone().map(|m| (m, self.messenger_settings.clone())).ok_or(Unavailable::NotConfigured),
        }
    }

    /// The carrier that answers for `business`, with its settings.
    pub fn carrier_for(&self, conn: &crate::db::Connection, business: &str) -> Result<(Arc<carrier::Carrier>, Settings), Unavailable> {
        match self.chosen(conn, business, Interface::Carrier)? {
            Some((plugins::Provider::Carrier(c), settings)) => Ok((c, settings)),
            Some(_) => Err(Unavailable::Mismatch),
            None => self.carrier.clone().map(|c| (c, self.carrier_settings.clone())).ok_or(Unavailable::NotConfigured),
        }
    }

    /// The business's AI plugin, if it chose one (none: the native AI).
    pub fn ai_for(&self, conn: &crate::db::Connection, business: &str) -> Result<Option<(Arc<ai::plugin::AiPlugin>, Settings)>, Unavailable> {
        match self.chosen(conn, business, Interface::Ai)? {
            Some((plugins::Provider::Ai(a), settings)) => Ok(Some((a, settings))),
            Some(_) => Err(Unavailable::Mismatch),
            None => Ok(None),
        }
    }

    /// The business's plugin for `interface`, if it chose one.
    fn chosen(&self, conn: &crate::db::Connection, business: &str, interface: Interface) -> Result<Option<(plugins::Provider, Settings)>, Unavailable> {
        let read = plugins::choice::read(conn, business, interface).map_err(|e| {
            crate::logging::line("error", &format!("reading the {} choice of business {business}: {e}", interface.name()));
            Unavailable::Store
        })?;
        let Some(choice) = read else {
            return Ok(None);
        };
        let loaded = self.plugins.get(&choice.plugin).ok_or_else(|| Unavailable::PluginNotLoaded(choice.plugin.clone()))?;
        Ok(Some((loaded.provider.clone(), Arc::new(choice.settings))))
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
}

impl Unavailable {
    /// (code, message, retryable) for the interface's error record.
    pub fn describe(&self, what: &str) -> (String, String, bool) {
        match self {
            Unavailable::NotConfigured => (format!("{what}_not_configured"), format!("no {what} adapter is linked in this build"), false),
            Unavailable::PluginNotLoaded(name) => ("plugin_not_loaded".into(), format!("the business's {what} plugin `{name}` is not loaded in this process (serve --plugin-dir, then SIGHUP)"), true),
            Unavailable::Mismatch => ("plugin_mismatch".into(), format!("the business's chosen plugin is not a {what} plugin"), false),
            Unavailable::Store => ("provider_choice_unreadable".into(), "the business's provider choice could not be read".into(), true),
        }
    }
}

/// Links every provider import into the linker of area components and the
/// dispatcher.
pub fn add_to_linker(linker: &mut Linker<RequestState>) -> Result<()> {
    ai::add_to_linker(linker)?;
    messenger::add_to_linker(linker)?;
    carrier::add_to_linker(linker)?;
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
        crate::logging::line("error", &format!("{context} {}: call failed ({fault:?}): {e:#}", limits.name));
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
        crate::logging::line(super::imports::level_name(level), &format!("component={} {message}", self.name));
    }
}

/// `settings` as every provider world imports it.
pub fn get_setting(state: &ProviderState, name: &str) -> Option<String> {
    state.settings.get(name).cloned()
}

/// `provider-http.send` as every provider world imports it.
pub fn send_http(state: &ProviderState, req: plugins::http::Request) -> Result<plugins::http::Response, String> {
    let Some(grant) = &state.http else { return Err("this adapter may reach no host".into()) };
    let left = state.deadline.saturating_duration_since(Instant::now());
    grant.send(req, left)
}
