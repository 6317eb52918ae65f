//! The WebAssembly side of the host, in three parts:
//!
//! * this file: one wasmtime engine with the pooling allocator and its
//!   limits, each component compiled once per binary (precompiled artifacts
//!   cached in the user's cache folder, see [`artifact_dir`]), an
//!   `InstancePre` per component, a bounded store per request (kept warm
//!   for the same business's next request, [`warm`]) or job step;
//! * [`imports`]: the host side of every platform import a component sees
//!   (store, jobs, clock, ids, log, http-out) and the per-call state;
//! * [`providers`]: the registry of provider interfaces (messenger,
//!   carrier, ai), one file each implementing `Provider`, composed by one
//!   list, each answered by a provider component (its embedded default or
//!   a business's plugin).

#[cfg(test)]
mod async_bench;
pub mod imports;
mod prepare;
pub mod providers;
mod warm;

use anyhow::{Context, Result};
use imports::{LazyWrite, RequestState, StepContext};
use providers::{ProviderSettings, Providers};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimits, StoreLimitsBuilder};

include!(concat!(env!("OUT_DIR"), "/components.rs"));

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "resource-area",
});

pub use switchboard::platform::types;

/// The dispatcher's world shares every import with `resource-area` (and the
/// providers' interfaces), so one set of host implementations serves both.
pub mod dispatcher_world {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "dispatcher",
        with: {
            "switchboard:platform/types": super::switchboard::platform::types,
            "switchboard:platform/store": super::switchboard::platform::store,
            "switchboard:platform/jobs": super::switchboard::platform::jobs,
            "switchboard:provider/clock": super::switchboard::provider::clock,
            "switchboard:provider/ids": super::switchboard::provider::ids,
            "switchboard:provider/log": super::switchboard::provider::log,
        },
    });
}
pub use dispatcher_world::switchboard::platform::job_types::{Job, Outcome};

/// The voice area's world: `resource-area` plus the signed recording links
/// (answered in `recordings.rs`).
pub mod voice_world {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "voice-area",
        with: {
            "switchboard:platform/types": super::switchboard::platform::types,
            "switchboard:platform/store": super::switchboard::platform::store,
            "switchboard:platform/jobs": super::switchboard::platform::jobs,
            "switchboard:provider/clock": super::switchboard::provider::clock,
            "switchboard:provider/ids": super::switchboard::provider::ids,
            "switchboard:provider/log": super::switchboard::provider::log,
        },
    });
}
use dispatcher_world::DispatcherPre;

/// The embedded component that runs background jobs.
pub const DISPATCHER: &str = "dispatcher";
/// How long one job step may run.
pub const JOB_DEADLINE: Duration = Duration::from_secs(60);

/// Wall-clock tick of the epoch counter.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Linear memory a single instance may grow to.
pub const INSTANCE_MEMORY_LIMIT: usize = 256 << 20;
/// Instances alive at once (also bounds the pooling allocator's reservation).
pub const MAX_INSTANCES: u32 = 128;

/// The limits every store gets (request, job step or provider call).
pub fn store_limits() -> StoreLimits {
    StoreLimitsBuilder::new().memory_size(INSTANCE_MEMORY_LIMIT).instances(16).trap_on_grow_failure(true).build()
}

/// Epoch ticks for a deadline.
pub fn deadline_ticks(deadline: Duration) -> u64 {
    (deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
}

/// The pooling allocator of an engine: `instances` component instances at
/// once, each memory up to `max_memory` bytes (the embedded components', and
/// the plugins' engine).
pub fn pooling(instances: u32, max_memory: usize) -> InstanceAllocationStrategy {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances * 4)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .max_memory_size(max_memory)
        // Reusing a slot should not page-fault: with PAGEMAP_SCAN (Linux
        // 6.7+) only the pages a call dirtied are reset, by memset, up to
        // this much; without it the low bytes are memset and the rest is
        // returned with madvise.
        .linear_memory_keep_resident(16 << 20)
        .table_keep_resident(1 << 16)
        .pagemap_scan(wasmtime::Enabled::Auto);
    InstanceAllocationStrategy::Pooling(pool)
}

/// How webhook deliveries go out (`serve` flags).
#[derive(Debug, Clone)]
pub struct OutboundPolicy {
    pub timeout: Duration,
    pub retry_delays_ms: Vec<u64>,
    /// Refuse loopback, private, link-local and other non-public targets
    /// (the default; `serve --webhook-allow-private` turns it off).
    pub public_only: bool,
    /// The HTTP client, built on first use (after the flags set `timeout`)
    /// and shared, so deliveries to one receiver reuse kept-alive
    /// connections instead of opening one per POST.
    pub client: std::sync::OnceLock<reqwest::blocking::Client>,
}

impl Default for OutboundPolicy {
    fn default() -> Self {
        // 10 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h, 24 h:
        // eleven retries over about 2 days 4 hours.
        let minutes = [0.17, 0.5, 2.0, 10.0, 30.0, 60.0, 120.0, 240.0, 480.0, 720.0, 1440.0];
        OutboundPolicy { timeout: Duration::from_secs(10), retry_delays_ms: minutes.iter().map(|m| (m * 60_000.0) as u64).collect(), public_only: true, client: std::sync::OnceLock::new() }
    }
}

pub struct Components {
    outbound: Arc<OutboundPolicy>,
    engine: Engine,
    pres: HashMap<String, ResourceAreaPre<RequestState>>,
    dispatcher: Option<DispatcherPre<RequestState>>,
    providers: Arc<Providers>,
    warm: warm::WarmInstances,
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
    pub fn providers(&self) -> &Arc<Providers> {
        &self.providers
    }

    /// Compiles the embedded components; `overrides` replaces one by name
    /// with a wasm file (development, fault tests, a patched build, a real
    /// provider adapter). `provider_settings` reach the provider components.
    /// Outbound targets must be public addresses (unless `--webhook-allow-private`).
    pub fn public_only(&self) -> bool {
        self.outbound.public_only
    }

    pub fn load(cache_dir: &Path, overrides: &[(String, std::path::PathBuf)], outbound: OutboundPolicy, provider_settings: ProviderSettings, plugins: crate::plugins::Registry) -> Result<Components> {
        let mut config = Config::new();
        config.allocation_strategy(pooling(MAX_INSTANCES, INSTANCE_MEMORY_LIMIT)).epoch_interruption(true).wasm_component_model(true);
        // `perf` can name guest functions (perf-PID.map) when asked to.
        if std::env::var_os("SWITCHBOARD_PERF_MAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config)?;

        let mut linker: Linker<RequestState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        ResourceArea::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        imports::add_to_linker(&mut linker)?;
        providers::add_to_linker(&mut linker)?;

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
        crate::logging::line(
            "info",
            &format!("components: {from_cache} loaded from the cache in {}, {} compiled ({} ms)", cache_dir.display(), compiled.len() - from_cache, started.elapsed().as_millis()),
        );
        // Provider components are linked into their own worlds by the registry.
        let providers = Arc::new(Providers::load(&engine, &mut compiled, provider_settings, plugins)?);
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
        Ok(Components { outbound: Arc::new(outbound), engine, pres, dispatcher, providers, warm: warm::WarmInstances::new() })
    }

    pub fn has(&self, name: &str) -> bool {
        self.pres.contains_key(name)
    }

    /// Whether an instantiation that failed with `e` may be tried once
    /// more: the pool was full and idle warm instances held slots, which
    /// are dropped now. A request, a prepare step and a job step all ask it.
    fn made_room(&self, e: &CallError) -> bool {
        matches!(e, CallError::Capacity) && self.warm.clear() > 0
    }

    fn store(&self, conn: Option<crate::db::Connection>, log_context: String, business_id: &str, deadline: Duration) -> Store<RequestState> {
        let state = RequestState::new(conn, log_context, business_id, self.outbound.clone(), self.providers.clone());
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(deadline_ticks(deadline));
        store
    }

    /// Runs one job step in the dispatcher, on `conn`. Without `lazy_gate`
    /// the job runner has opened the transaction already; with it (a step
    /// that calls out) the step's first write takes the gate and begins it
    /// on the gate's writer connection, and the guard comes back with the
    /// step's own connection (the connection returned first is then the
    /// writer's), so the runner commits the completion in the same
    /// transaction.
    pub fn run_job(
        &self,
        conn: crate::db::Connection,
        job: &Job,
        lazy_gate: Option<crate::db::Gate>,
    ) -> (crate::db::Connection, Option<(crate::db::WriteGuard, crate::db::Connection)>, Result<Outcome, CallError>) {
        let Some(pre) = &self.dispatcher else {
            return (conn, None, Err(CallError::Trap("no dispatcher component in this build".into())));
        };
        let mut store = self.store(Some(conn), format!("component=dispatcher job={} kind={}", job.id, job.kind), &job.business_id, JOB_DEADLINE);
        store.data_mut().lazy = lazy_gate.map(LazyWrite::new);
        store.data_mut().step = Some(StepContext { job_id: job.id.clone(), fence: job.fence as i64 });
        let result = match pre.instantiate(&mut store) {
            Ok(inst) => inst.switchboard_platform_job_handler().call_run(&mut store, job).map_err(classify),
            Err(e) => match classify_instantiate(e) {
                // Nothing of the step ran: the same connection (with the
                // runner's transaction, if it opened one) and the same
                // gate go to a fresh store.
                e if !store.data().lazy.as_ref().is_some_and(LazyWrite::began) && self.made_room(&e) => {
                    let mut state = store.into_data();
                    let gate = state.lazy.take().map(LazyWrite::into_gate);
                    return self.run_job(state.take_conn(), job, gate);
                }
                e => Err(e),
            },
        };
        let mut state = store.into_data();
        (state.take_conn(), state.lazy.and_then(LazyWrite::into_parts), result)
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
    if hit_memory_limit(&e) {
        CallError::ResourceLimit
    } else {
        CallError::Trap(format!("{e:#}"))
    }
}

/// Whether a call failed on its store's memory limit. With
/// trap_on_grow_failure the error is not a Trap: look at the cause.
pub(crate) fn hit_memory_limit(e: &wasmtime::Error) -> bool {
    let text = format!("{e:?}");
    text.contains("forcing trap when growing memory") || text.contains("memory") && text.contains("limit")
}

/// The lock file of a folder of artifacts: one process compiles while the
/// others starting at the same time wait for its file instead of compiling
/// the same component again.
const LOCK_FILE: &str = ".compile.lock";
/// Artifacts kept per component name (the most recently loaded): a few
/// builds side by side (debug and release, an older commit) each find
/// theirs, and the folder does not grow with every build.
const KEEP_PER_NAME: usize = 4;

/// The folder of precompiled artifacts: `wanted` (`serve
/// --component-cache`), else `switchboard/components` in the user's cache
/// folder, so a fresh data dir reuses what an earlier start of the same
/// binary compiled. Falls back to the data dir's `cache/` when that folder
/// cannot be made, written, or is writable by group or others (an artifact
/// is native code the process runs).
pub fn artifact_dir(wanted: Option<&Path>, data_dir: &Path) -> PathBuf {
    let fallback = data_dir.join("cache");
    let Some(dir) = wanted.map(Path::to_path_buf).or_else(|| dirs::cache_dir().map(|d| d.join("switchboard").join("components"))) else {
        return fallback;
    };
    match private_dir(&dir) {
        Ok(()) => dir,
        Err(e) => {
            crate::logging::line("warn", &format!("component cache {}: {e}; using {}", dir.display(), fallback.display()));
            fallback
        }
    }
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700).create(dir)?;
        if std::fs::metadata(dir)?.permissions().mode() & 0o022 != 0 {
            return Err(std::io::Error::other("group or others may write to it"));
        }
    }
    #[cfg(not(unix))]
    builder.create(dir)?;
    std::fs::OpenOptions::new().create(true).append(true).open(dir.join(LOCK_FILE)).map(drop)
}

/// Where a component's native code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A precompiled artifact in the cache folder.
    Cache,
    /// Compiled by this process.
    Compiled,
}

/// Compiles a component once per (bytes, engine configuration, version)
/// and keeps the native artifact in `cache_dir`.
pub(crate) fn compile_cached(engine: &Engine, cache_dir: &Path, name: &str, wasm: &[u8]) -> Result<Component> {
    load_or_compile(engine, cache_dir, name, wasm).map(|(c, _)| c)
}

fn load_or_compile(engine: &Engine, cache_dir: &Path, name: &str, wasm: &[u8]) -> Result<(Component, Origin)> {
    let mut h = Sha256::new();
    h.update(wasm);
    let mut compat = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut compat);
    h.update(std::hash::Hasher::finish(&compat).to_le_bytes());
    h.update(env!("CARGO_PKG_VERSION"));
    let key = hex::encode(&h.finalize()[..12]);
    let path = cache_dir.join(format!("{name}-{key}.cwasm"));
    if let Some(c) = load_artifact(engine, &path) {
        return Ok((c, Origin::Cache));
    }
    // Several servers starting at once on a cold cache (the API tests): the
    // first compiles, the others wait here and then load its file. Without
    // a lock file (an unwritable folder) each compiles for itself.
    let lock = std::fs::OpenOptions::new().create(true).append(true).open(cache_dir.join(LOCK_FILE)).ok();
    if let Some(l) = &lock {
        let _ = l.lock();
        if let Some(c) = load_artifact(engine, &path) {
            return Ok((c, Origin::Cache));
        }
    }
    // wasmtime compiles a component's functions in parallel on rayon's
    // pool: here a pool of this compile's own, whose threads end with it,
    // so the memory they worked in can go back to the system (the host's
    // `mi_collect` after the start) instead of staying with idle threads
    // for the life of the server.
    let pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("compile-{i}")).build()?;
    let bytes = pool.install(|| engine.precompile_component(wasm)).map_err(anyhow::Error::from).with_context(|| format!("compiling component {name}"))?;
    drop(pool);
    match write_artifact(cache_dir, &path, &bytes) {
        Ok(()) => {
            prune(cache_dir, name);
            drop(bytes);
            // Mapped from the file rather than copied from `bytes`: its
            // pages are the page cache's, shared with every other server
            // of this binary, and only those that run become resident.
            if let Some(c) = load_artifact(engine, &path) {
                return Ok((c, Origin::Compiled));
            }
            anyhow::bail!("component {name}: the artifact just written to {} does not load", path.display())
        }
        Err(e) => {
            crate::logging::line("warn", &format!("component cache {}: {e}; {name} compiled in memory", cache_dir.display()));
            // SAFETY: just compiled by this engine.
            Ok((unsafe { Component::deserialize(engine, &bytes)? }, Origin::Compiled))
        }
    }
}

/// The artifact at `path`, if there is one this engine loads. One that does
/// not (truncated, overwritten, another engine's) is removed, to be
/// compiled again.
fn load_artifact(engine: &Engine, path: &Path) -> Option<Component> {
    if !path.exists() {
        return None;
    }
    // SAFETY: the file was written by `precompile_component` of this same
    // engine configuration (its name carries the compatibility hash) into a
    // folder only this user may write to (`artifact_dir`); wasmtime checks
    // its header and its engine settings before it maps the code.
    match unsafe { Component::deserialize_file(engine, path) } {
        Ok(c) => {
            // Marks it used, for `prune`.
            let _ = std::fs::File::options().append(true).open(path).and_then(|f| f.set_modified(std::time::SystemTime::now()));
            Some(c)
        }
        Err(e) => {
            crate::logging::line("warn", &format!("component cache: {} does not load ({e}); compiling it again", path.display()));
            let _ = std::fs::remove_file(path);
            None
        }
    }
}

/// Writes `bytes` to `path` whole or not at all: a unique temporary name
/// in the same folder, then a rename, so a reader never maps a partial file.
fn write_artifact(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("artifact");
    let tmp = dir.join(format!(".{file}.{}-{}.tmp", std::process::id(), SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Keeps the [`KEEP_PER_NAME`] most recently loaded artifacts of `name`
/// and removes the older ones (a server that mapped one keeps running it).
fn prune(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            let file = e.file_name();
            let file = file.to_string_lossy();
            // `{name}-{24 hex digits}.cwasm`
            file.strip_suffix(".cwasm").and_then(|f| f.rsplit_once('-')).is_some_and(|(n, key)| n == name && key.len() == 24 && key.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
    for (_, old) in found.into_iter().skip(KEEP_PER_NAME) {
        let _ = std::fs::remove_file(old);
    }
}
