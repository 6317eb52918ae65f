//! The provider registry: every provider interface (the network that carries
//! messages, the AI that writes agent turns, the carrier that places
//! calls) is one file here that says its world, its default component and
//! the name `--component-override` replaces it by, and answers the import
//! the areas call. Nothing that calls a provider knows which one answers.
//!
//! Adding a provider interface: its WIT file in `wit/` and a world for its
//! adapters in `wit/worlds.wit`, one file here (copy `messenger.rs`'s shape),
//! then one field in [`Providers`] and one line each in [`Providers::load`]
//! and [`add_to_linker`].

pub mod ai;
pub mod carrier;
pub mod messenger;

use super::imports::RequestState;
use super::switchboard::platform::log;
use anyhow::Result;
use std::collections::HashMap;
use std::sync::Arc;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// How long one call into a provider component may run.
pub const PROVIDER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// Settings of each provider component, by component name (from `serve`
/// flags such as `--messenger-setting NAME=VALUE`).
pub type ProviderSettings = HashMap<&'static str, HashMap<String, String>>;

/// The providers linked into this process, one field per interface.
pub struct Providers {
    pub messenger: Option<messenger::Messenger>,
    pub carrier: Option<carrier::Carrier>,
}

impl Providers {
    /// Takes each provider's component out of `compiled` (the embedded one
    /// or its override) and links it into its own world.
    pub fn load(engine: &Engine, compiled: &mut HashMap<String, Component>, settings: ProviderSettings) -> Result<Providers> {
        let settings_of = |name: &str| Arc::new(settings.get(name).cloned().unwrap_or_default());
        Ok(Providers {
            messenger: match compiled.remove(messenger::COMPONENT) {
                Some(c) => Some(messenger::Messenger::link(engine, &c, settings_of(messenger::COMPONENT))?),
                None => None,
            },
            carrier: match compiled.remove(carrier::COMPONENT) {
                Some(c) => Some(carrier::Carrier::link(engine, &c, settings_of(carrier::COMPONENT))?),
                None => None,
            },
        })
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

/// The state of one call into a provider component: no store access, only
/// the clock, ids, log and its own settings.
pub struct ProviderState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limits: StoreLimits,
    settings: Arc<HashMap<String, String>>,
    component: &'static str,
}

impl ProviderState {
    pub fn new(component: &'static str, settings: Arc<HashMap<String, String>>) -> ProviderState {
        ProviderState { wasi: WasiCtx::builder().build(), table: ResourceTable::new(), limits: super::store_limits(), settings, component }
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
        crate::logging::line(super::imports::level_name(level), &format!("component={} {message}", self.component));
    }
}

/// `settings` as every provider world imports it.
pub fn get_setting(state: &ProviderState, name: &str) -> Option<String> {
    state.settings.get(name).cloned()
}
