//! What every provider interface and its adapters share, named by the
//! interface files, the plugin registry and the manifest alike (and naming
//! none of them): the [`Provider`] trait an interface's adapter type
//! implements, the [`Interface`] it declares, a linked [`Adapter`] with its
//! [`CallLimits`] and [`Fault`]s, the [`Settings`] a call sees, and why no
//! adapter can answer ([`Unavailable`]). The list of interfaces is
//! `interfaces!` in `mod.rs`.

use crate::plugins::http;
use crate::plugins::sealed;
use anyhow::Result;
use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::Engine;

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
}

/// A linked adapter of some interface (its [`Provider`] type, erased).
pub type Adapter = Arc<dyn Any + Send + Sync>;

fn link_erased<P: Provider>(engine: &Engine, component: &Component, limits: CallLimits) -> Result<Adapter> {
    Ok(Arc::new(P::link(engine, component, limits)?))
}

impl Interface {
    /// The interface `P` declares.
    pub const fn of<P: Provider>() -> Interface {
        Interface { name: P::NAME, world: P::WORLD, component: P::COMPONENT, built_in: P::BUILT_IN, settings: P::SETTINGS, template_settings: P::TEMPLATE_SETTINGS, link: link_erased::<P> }
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

/// Settings of each interface's embedded adapter, by interface name (from
/// its `serve` flag, such as `--messenger-setting NAME=VALUE`).
pub type ProviderSettings = HashMap<&'static str, HashMap<String, String>>;

/// The settings one call sees.
pub type Settings = Arc<HashMap<String, String>>;

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
                ("plugin_settings_sealed".into(), format!("the business's {what} plugin settings are encrypted under a key this server does not have ({})", sealed::KEY_VAR), true)
            }
        }
    }
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
    pub http: Option<Arc<http::Grant>>,
    /// A plugin's faults are reported as the plugin's (see [`Fault::error`]).
    pub plugin: bool,
}

impl CallLimits {
    pub fn embedded(name: &str) -> CallLimits {
        CallLimits { name: name.into(), memory_bytes: crate::engine::limits::INSTANCE_MEMORY_LIMIT, deadline: PROVIDER_DEADLINE, fuel: None, http: None, plugin: false }
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
    pub fn of(e: &wasmtime::Error) -> Fault {
        match e.downcast_ref::<wasmtime::Trap>() {
            Some(wasmtime::Trap::Interrupt) => Fault::Timeout,
            Some(wasmtime::Trap::OutOfFuel) => Fault::OutOfFuel,
            _ if crate::engine::limits::hit_memory_limit(e) => Fault::Memory,
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
