//! One call into a provider adapter: its linker (WASI and its world's
//! imports), a fresh store bounded by the adapter's [`CallLimits`], and that
//! store's state, which answers the imports every provider world shares
//! (clock, ids, log, its own settings, outbound HTTP to the hosts a
//! plugin's manifest names).

use super::adapter::{CallLimits, Fault, Settings};
use crate::engine::basics::{clock_and_ids, log_event};
use crate::engine::bindings::switchboard::provider::log;
use crate::plugins::http;
use anyhow::{Context, Result};
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The imports every provider world shares besides clock, ids and log
/// (`settings`, `http`), generated once here; each interface's bindings
/// name these (`with`).
mod shared {
    wasmtime::component::bindgen!({
        path: "../../wit",
        inline: "
            package switchboard:host-provider-imports;

            world provider-imports {
                import switchboard:provider/clock@0.1.0;
                import switchboard:provider/ids@0.1.0;
                import switchboard:provider/log@0.1.0;
                import switchboard:provider/settings@0.1.0;
                import switchboard:provider/http@0.1.0;
            }
        ",
        with: {
            "switchboard:provider/clock": crate::engine::bindings::switchboard::provider::clock,
            "switchboard:provider/ids": crate::engine::bindings::switchboard::provider::ids,
            "switchboard:provider/log": crate::engine::bindings::switchboard::provider::log,
        },
    });
}
pub use shared::switchboard::provider::{http as provider_http, settings};

/// The bindings of one provider world (`provider_world!("carrier-provider")`
/// inside the interface file's `mod world`): the imports every provider
/// world shares name one host implementation (the platform's clock, ids and
/// log; `settings` and `http` from [`shared`]).
macro_rules! provider_world {
    ($world:literal) => {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: $world,
            with: {
                "switchboard:provider/clock": crate::engine::bindings::switchboard::provider::clock,
                "switchboard:provider/ids": crate::engine::bindings::switchboard::provider::ids,
                "switchboard:provider/log": crate::engine::bindings::switchboard::provider::log,
                "switchboard:provider/settings": crate::engine::providers::calls::settings,
                "switchboard:provider/http": crate::engine::providers::calls::provider_http,
            },
        });
    };
}
pub(crate) use provider_world;

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
    store.set_epoch_deadline(crate::compiled::deadline_ticks(limits.deadline));
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
    http: Option<Arc<http::Grant>>,
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

clock_and_ids!(ProviderState);

impl log::Host for ProviderState {
    fn log(&mut self, level: log::Level, message: String) {
        log_event(level, &format!("component={}", self.name), &message);
    }
}

// `settings` and `http` as every provider world imports them ([`shared`]).

impl settings::Host for ProviderState {
    fn get(&mut self, name: String) -> Option<String> {
        self.settings.get(&name).cloned()
    }
}

impl provider_http::Host for ProviderState {
    fn send(&mut self, r: provider_http::Request) -> Result<provider_http::Response, String> {
        let Some(grant) = &self.http else { return Err("this adapter may reach no host".into()) };
        let left = self.deadline.saturating_duration_since(Instant::now());
        let req = http::Request { method: r.method, url: r.url, headers: r.headers, body: r.body };
        grant.send(req, left).map(|a| provider_http::Response { status: a.status, headers: a.headers, body: a.body })
    }
}
