//! The WebAssembly side of the host, in three parts:
//!
//! * this file: one wasmtime engine with the pooling allocator and its
//!   limits, each component compiled once per binary (precompiled artifacts
//!   cached in the user's cache folder: `crate::compiled`), an
//!   `InstancePre` per component, a bounded store per request or job step
//!   (kept warm for the same business's next one, [`warm`]; job steps in
//!   [`steps`] and [`batch`]);
//! * [`imports`]: the host side of every platform import a component sees
//!   (store, jobs, clock, ids, log, http-out) and the per-call state;
//! * [`providers`]: the registry of provider interfaces (messenger,
//!   carrier, ai), one file each implementing `Provider`, composed by one
//!   list, each answered by a provider component (its embedded default or
//!   a business's plugin);
//! * the leaves the others share: [`bindings`] (the platform worlds),
//!   [`embedded`] (the components build.rs embedded), [`limits`] (what a
//!   store may use) and [`basics`] (clock, ids and log, alike for every
//!   store).

#[cfg(test)]
mod async_bench;
pub mod basics;
mod batch;
pub mod bindings;
pub mod embedded;
pub mod imports;
pub mod limits;
mod prepare;
pub mod providers;
mod reads;
#[cfg(test)]
mod retrieval_bench;
mod steps;
mod warm;

use crate::compiled::load_or_compile;
pub use crate::compiled::{artifact_dir, deadline_ticks, pooling, Origin, EPOCH_TICK};
pub use crate::outbound::OutboundPolicy;
use anyhow::{Context, Result};
pub use imports::Capabilities;
use imports::RequestState;
pub use providers::ai::ServerAi;
use providers::{ProviderSettings, Providers};
pub use reads::AsyncAnswer;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, Store};

pub use bindings::{dispatcher_world, switchboard, types, voice_world, Job, Outcome, ResourceArea, ResourceAreaPre};
pub use embedded::COMPONENTS;
pub use limits::{store_limits, INSTANCE_MEMORY_LIMIT, MAX_INSTANCES};

use dispatcher_world::DispatcherPre;

/// The embedded component that runs background jobs.
pub const DISPATCHER: &str = "dispatcher";
/// How long one job step may run.
pub const JOB_DEADLINE: Duration = Duration::from_secs(60);

/// What `serve` configures for the components' imports (host/src/main.rs
/// builds it from the command line and hands it to [`Components::load`]):
/// one field per capability, so nothing a call reaches is a process-wide
/// global.
pub struct Setup {
    /// `http-out`: how webhook deliveries go out.
    pub outbound: OutboundPolicy,
    /// The embedded provider adapters' settings (`--<interface>-setting`).
    pub provider_settings: ProviderSettings,
    /// The plugins a business may choose instead of an embedded adapter.
    pub plugins: crate::plugins::Registry,
    /// The server's own AI (`--ai-endpoint`, `--ai-embeddings-model`).
    pub server_ai: providers::ai::ServerAi,
    /// The keys that open a business's secret plugin settings.
    pub keys: crate::plugins::sealed::Keys,
    /// The signing of recording links (`--public-url`,
    /// `--recording-link-ttl-ms`, the database's secret).
    pub recording_links: Option<crate::recording_links::RecordingLinks>,
    /// The engine's bench switches (`serve`'s hidden flags).
    pub switches: Switches,
}

impl Setup {
    /// Every capability at its default (no outbound policy of `serve`'s,
    /// no provider settings, the sandbox AI, no sealed keys, no recording
    /// links, the switches off) but the plugins: the in-crate tests' and
    /// benches' engine.
    #[cfg(test)]
    pub(crate) fn with_plugins(plugins: crate::plugins::Registry) -> Setup {
        Setup {
            outbound: Default::default(),
            provider_settings: Default::default(),
            plugins,
            server_ai: Default::default(),
            keys: Default::default(),
            recording_links: None,
            switches: Default::default(),
        }
    }
}

/// Switches of the engine that side-by-side benches turn (bench/README.md):
/// `serve`'s hidden flags, set as their `SWITCHBOARD_*` variables. The
/// default is every test's and bench's, and `serve`'s without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switches {
    /// An instance that answered may answer its business's next request
    /// ([`warm`]); off (`SWITCHBOARD_WARM_INSTANCES=0`), a fresh instance
    /// per call.
    pub warm_instances: bool,
    /// Reads run on the tokio worker ([`reads`]), on with
    /// `SWITCHBOARD_ASYNC_READS=1`; off, on the reader threads.
    pub async_reads: bool,
    /// wasmtime writes `/tmp/perf-PID.map`, so `perf` names guest
    /// functions (`SWITCHBOARD_PERF_MAP` set to anything).
    pub perf_map: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches { warm_instances: true, async_reads: false, perf_map: false }
    }
}

pub struct Components {
    engine: Engine,
    pres: HashMap<String, ResourceAreaPre<RequestState>>,
    dispatcher: Option<DispatcherPre<RequestState>>,
    caps: Arc<Capabilities>,
    warm: warm::WarmInstances,
    /// The dispatcher's instances kept between one business's job steps
    /// (`steps.rs`).
    warm_steps: warm::WarmInstances<dispatcher_world::Dispatcher>,
    /// Reads on the tokio worker (`reads.rs`).
    reads: reads::AsyncReads,
}

/// How a component call ended when it did not return normally.
pub enum CallError {
    /// The epoch deadline passed (a runaway loop).
    Deadline,
    /// A memory or table limit was hit.
    ResourceLimit,
    /// Any other trap or host error.
    Trap(String),
    /// All instance slots are busy.
    Capacity,
}

impl Components {
    /// The provider components and native providers of this process.
    pub fn providers(&self) -> &Providers {
        &self.caps.providers
    }

    /// The signing of recording links, when this process serves them.
    pub fn recording_links(&self) -> Option<&crate::recording_links::RecordingLinks> {
        self.caps.recording_links.as_ref()
    }

    /// Compiles the embedded components; `overrides` replaces one by name
    /// with a wasm file (development, fault tests, a patched build, a real
    /// provider adapter). `provider_settings` reach the provider components.
    /// Outbound targets must be public addresses (unless `--webhook-allow-private`).
    pub fn public_only(&self) -> bool {
        self.caps.outbound.public_only
    }

    pub fn load(cache_dir: &Path, overrides: &[(String, std::path::PathBuf)], setup: Setup) -> Result<Components> {
        let Setup { outbound, provider_settings, plugins, server_ai, keys, recording_links, switches } = setup;
        let mut config = Config::new();
        config.allocation_strategy(pooling(MAX_INSTANCES, INSTANCE_MEMORY_LIMIT)).epoch_interruption(true).wasm_component_model(true);
        // `perf` can name guest functions (perf-PID.map) when asked to.
        if switches.perf_map {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;

        let mut linker: Linker<RequestState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        ResourceArea::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        imports::add_to_linker(&mut linker)?;
        providers::add_to_linker(&mut linker, imports::provider_call)?;

        // Without it every artifact is compiled in memory (write_artifact fails).
        let _ = std::fs::create_dir_all(cache_dir);
        for (name, path) in overrides {
            if !COMPONENTS.iter().any(|(n, _)| n == name) {
                anyhow::bail!("--component-override names `{name}`, which is not a component of this build");
            }
            if !path.is_file() {
                anyhow::bail!("--component-override {name}={}: no such file", path.display());
            }
        }
        let mut compiled = HashMap::new();
        let started = std::time::Instant::now();
        let mut from_cache = 0;
        for (name, embedded) in COMPONENTS {
            let replacement = match overrides.iter().find(|(n, _)| n == name) {
                Some((_, path)) => Some(std::fs::read(path)?),
                None => None,
            };
            let wasm = replacement.as_deref().unwrap_or(embedded);
            let (component, origin) = load_or_compile(&engine, cache_dir, name, wasm)?;
            from_cache += usize::from(origin == Origin::Cache);
            compiled.insert(name.to_string(), component);
        }
        tracing::info!(
            fromCache = from_cache,
            compiled = compiled.len() - from_cache,
            cacheDir = %cache_dir.display(),
            durationMs = started.elapsed().as_millis() as u64,
            "components loaded"
        );
        // Provider components are linked into their own worlds by the registry.
        let providers = Providers::load(&engine, &mut compiled, provider_settings, plugins, server_ai, keys)?;
        let reads = reads::AsyncReads::link(&engine, compiled.iter().filter(|(name, _)| name.as_str() != DISPATCHER), switches)?;
        let mut pres = HashMap::new();
        let mut dispatcher = None;
        for (name, component) in compiled {
            let pre = linker.instantiate_pre(&component).map_err(anyhow::Error::from).with_context(|| format!("linking component {name}"))?;
            if name == DISPATCHER {
                dispatcher = Some(DispatcherPre::new(pre)?);
            } else {
                pres.insert(name, ResourceAreaPre::new(pre)?);
            }
        }

        // The epoch ticker: deadlines are counted in ticks.
        let ticker = engine.clone();
        std::thread::Builder::new().name("epoch-ticker".into()).spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            ticker.increment_epoch();
        })?;
        let caps = Arc::new(Capabilities { outbound, providers, recording_links });
        let warm_steps = warm::WarmInstances::with_limit(switches.warm_instances, steps::MAX_IDLE_STEPS);
        Ok(Components { engine, pres, dispatcher, caps, warm: warm::WarmInstances::new(switches.warm_instances), warm_steps, reads })
    }

    pub fn has(&self, name: &str) -> bool {
        self.pres.contains_key(name)
    }

    /// Whether an instantiation that failed with `e` may be tried once
    /// more: the pool was full and idle warm instances held slots, which
    /// are dropped now. A request, a prepare step and a job step all ask it.
    fn made_room(&self, e: &CallError) -> bool {
        matches!(e, CallError::Capacity) && self.warm.clear() + self.warm_steps.clear() + self.reads.clear_warm() > 0
    }

    fn store(&self, conn: Option<crate::db::Connection>, log_context: String, business_id: &str, deadline: Duration) -> Store<RequestState> {
        let state = RequestState::new(conn, log_context, business_id, self.caps.clone());
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(deadline_ticks(deadline));
        store
    }

    /// Calls `handle` of `name`: on a warm instance that last answered the
    /// same business (`warm.rs`), else a fresh one. Runs on a blocking
    /// thread; `conn` is handed back with whatever the component did (the
    /// caller commits or rolls back).
    pub fn call(&self, name: &str, conn: crate::db::Connection, req: &types::Request, deadline: Duration) -> (crate::db::Connection, Result<Result<types::Success, types::Failure>, CallError>) {
        let log_context = format!("component={name} requestId={}", req.request_id);
        let (mut store, instance, uses) = match self.warm.take(name, &req.business_id) {
            Some(warm::Warm { mut store, instance, uses, .. }) => {
                store.data_mut().renew(conn, log_context);
                store.set_epoch_deadline(deadline_ticks(deadline));
                crate::metrics::component_instance("warm");
                (store, Some(instance), uses)
            }
            None => {
                crate::metrics::component_instance("fresh");
                (self.store(Some(conn), log_context, &req.business_id, deadline), None, 0)
            }
        };
        let instance = match instance {
            Some(instance) => instance,
            None => match self.pres[name].instantiate(&mut store) {
                Ok(instance) => instance,
                Err(e) => {
                    let e = classify_instantiate(e);
                    if self.made_room(&e) {
                        return self.call(name, store.into_data().take_conn(), req, deadline);
                    }
                    return (store.into_data().take_conn(), Err(e));
                }
            },
        };
        let result = instance.switchboard_platform_handler().call_handle(&mut store, req).map_err(classify);
        let conn = store.data_mut().take_conn();
        if result.is_ok() {
            self.warm.put(name, &req.business_id, warm::Warm::new(store, instance, uses + 1));
        }
        (conn, result)
    }
}

fn classify_instantiate(e: wasmtime::Error) -> CallError {
    let text = format!("{e:#}");
    if text.contains("maximum concurrent") || text.contains("pooling") || text.contains("limit") {
        CallError::Capacity
    } else {
        CallError::Trap(text)
    }
}

fn classify(e: wasmtime::Error) -> CallError {
    if let Some(trap) = e.downcast_ref::<wasmtime::Trap>() {
        return match trap {
            wasmtime::Trap::Interrupt => CallError::Deadline,
            _ => CallError::Trap(format!("{e:#}")),
        };
    }
    if limits::hit_memory_limit(&e) {
        CallError::ResourceLimit
    } else {
        CallError::Trap(format!("{e:#}"))
    }
}
