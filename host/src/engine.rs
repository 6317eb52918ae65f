//! The WebAssembly side of the host: one wasmtime engine with the pooling
//! allocator, each component compiled once (precompiled artifacts cached in
//! the data dir), an `InstancePre` per component, and a fresh, bounded store
//! per request.

use crate::db::{block, SqlValue};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use std::path::Path;
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

include!(concat!(env!("OUT_DIR"), "/components.rs"));

wasmtime::component::bindgen!({
    path: "../wit",
    world: "resource-area",
});

use switchboard::platform::{clock, ids, jobs, log, store, types};

/// The dispatcher's world shares every import with `resource-area`, so one
/// set of host implementations serves both.
mod dispatcher_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "dispatcher",
        with: {
            "switchboard:platform/types": super::switchboard::platform::types,
            "switchboard:platform/store": super::switchboard::platform::store,
            "switchboard:platform/jobs": super::switchboard::platform::jobs,
            "switchboard:platform/clock": super::switchboard::platform::clock,
            "switchboard:platform/ids": super::switchboard::platform::ids,
            "switchboard:platform/log": super::switchboard::platform::log,
        },
    });
}
use dispatcher_world::switchboard::platform::http_out;
use dispatcher_world::switchboard::platform::ai;
use dispatcher_world::switchboard::platform::messenger;
pub use dispatcher_world::exports::switchboard::platform::job_handler::{Job, Outcome};
use dispatcher_world::DispatcherPre;

/// The world of a messaging provider adapter: it sees no store, only the
/// clock, ids, log and its own settings.
mod provider_world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "messenger-provider",
        with: {
            "switchboard:platform/clock": super::switchboard::platform::clock,
            "switchboard:platform/ids": super::switchboard::platform::ids,
            "switchboard:platform/log": super::switchboard::platform::log,
        },
    });
}
use provider_world::exports::switchboard::platform::messenger as provider;
use provider_world::switchboard::platform::settings;
use provider_world::MessengerProviderPre;

/// The embedded component that runs background jobs.
pub const DISPATCHER: &str = "dispatcher";
/// The embedded messaging provider (replaceable with `--component-override`).
pub const MESSENGER: &str = "sandbox-messenger";
/// How long one call into the messaging provider may run.
pub const PROVIDER_DEADLINE: Duration = Duration::from_secs(30);
/// How long one job step may run.
pub const JOB_DEADLINE: Duration = Duration::from_secs(60);

/// Wall-clock tick of the epoch counter.
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Linear memory a single instance may grow to.
pub const INSTANCE_MEMORY_LIMIT: usize = 256 << 20;
/// Instances alive at once (also bounds the pooling allocator's reservation).
pub const MAX_INSTANCES: u32 = 128;

/// Per-request state of one component instance.
pub struct RequestState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    /// The request's connection; mutations arrive with a write transaction
    /// already open on it.
    conn: libsql::Connection,
    log_context: String,
    outbound: Arc<OutboundPolicy>,
    messenger: Option<Arc<Messenger>>,
    /// Set for a job step in network mode: the write gate and the
    /// transaction are taken at the step's first write, not before.
    lazy: Option<LazyWrite>,
}

/// A write transaction begun on first write (see `RequestState::begin_write`).
pub struct LazyWrite {
    gate: Arc<parking_lot::FairMutex<()>>,
    guard: Option<crate::db::WriteGuard>,
}

/// How long a lazily begun write waits for the gate before the store says `busy`.
const LAZY_GATE_WAIT: Duration = Duration::from_secs(30);

impl RequestState {
    /// In network mode, takes the write gate and begins the transaction the
    /// first time the step writes; otherwise there is nothing to do (the
    /// caller opened the transaction already).
    fn begin_write(&mut self) -> Result<(), store::StoreError> {
        let Some(lazy) = &mut self.lazy else { return Ok(()) };
        if lazy.guard.is_some() {
            return Ok(());
        }
        let busy = || store::StoreError { kind: "busy".into(), message: "the write gate stayed busy".into() };
        let guard = lazy.gate.try_lock_arc_for(LAZY_GATE_WAIT).ok_or_else(busy)?;
        block(self.conn.execute("BEGIN IMMEDIATE", ())).map_err(store_error)?;
        lazy.guard = Some(guard);
        Ok(())
    }
}

/// True for statements that only read (everything else begins a lazy write).
fn reads_only(sql: &str) -> bool {
    let head: String = sql.trim_start().chars().take(6).collect::<String>().to_ascii_uppercase();
    head.starts_with("SELECT") || head.starts_with("WITH")
}

/// The linked messaging provider: calls into it run in their own small store.
pub struct Messenger {
    engine: Engine,
    pre: MessengerProviderPre<ProviderState>,
    settings: Arc<HashMap<String, String>>,
}

/// State of one call into the messaging provider.
pub struct ProviderState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    settings: Arc<HashMap<String, String>>,
}

impl WasiView for ProviderState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// How webhook deliveries go out (`serve` flags).
#[derive(Debug, Clone)]
pub struct OutboundPolicy {
    pub timeout: Duration,
    pub retry_delays_ms: Vec<u64>,
    /// Refuse loopback, private, link-local and other non-public targets.
    pub public_only: bool,
}

impl Default for OutboundPolicy {
    fn default() -> Self {
        // 10 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h, 24 h:
        // eleven retries over about 2 days 4 hours.
        let minutes = [0.17, 0.5, 2.0, 10.0, 30.0, 60.0, 120.0, 240.0, 480.0, 720.0, 1440.0];
        OutboundPolicy {
            timeout: Duration::from_secs(10),
            retry_delays_ms: minutes.iter().map(|m| (m * 60_000.0) as u64).collect(),
            public_only: false,
        }
    }
}

impl WasiView for RequestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

pub struct Components {
    outbound: Arc<OutboundPolicy>,
    engine: Engine,
    pres: HashMap<String, ResourceAreaPre<RequestState>>,
    dispatcher: Option<DispatcherPre<RequestState>>,
    messenger: Option<Arc<Messenger>>,
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
    /// Compiles the embedded components; `overrides` replaces one by name
    /// with a wasm file (development, fault tests, a patched build).
    /// `messenger_settings` reach the messaging provider through `settings`.
    pub fn load(
        cache_dir: &Path,
        overrides: &[(String, std::path::PathBuf)],
        outbound: OutboundPolicy,
        messenger_settings: HashMap<String, String>,
    ) -> Result<Components> {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(MAX_INSTANCES)
            .total_core_instances(MAX_INSTANCES * 4)
            .total_memories(MAX_INSTANCES * 2)
            .total_tables(MAX_INSTANCES * 4)
            .max_memory_size(INSTANCE_MEMORY_LIMIT)
            // Reusing a slot should not page-fault: with PAGEMAP_SCAN (Linux
            // 6.7+) only the pages a request dirtied are reset, by memset, up
            // to this much; without it the low bytes are memset and the rest
            // is returned with madvise.
            .linear_memory_keep_resident(16 << 20)
            .table_keep_resident(1 << 16)
            .pagemap_scan(wasmtime::Enabled::Auto);
        let mut config = Config::new();
        config
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .epoch_interruption(true)
            .wasm_component_model(true);
        let engine = Engine::new(&config)?;

        let mut linker: Linker<RequestState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        ResourceArea::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        http_out::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        ai::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        messenger::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        let mut provider_linker: Linker<ProviderState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut provider_linker)?;
        provider_world::MessengerProvider::add_to_linker::<_, HasSelf<_>>(&mut provider_linker, |s| s)?;
        let messenger_settings = Arc::new(messenger_settings);

        std::fs::create_dir_all(cache_dir)?;
        let mut pres = HashMap::new();
        let mut dispatcher = None;
        let mut messenger = None;
        for (name, path) in overrides {
            if !COMPONENTS.iter().any(|(n, _)| n == name) {
                anyhow::bail!("--component-override names `{name}`, which is not a component of this build");
            }
            if !path.is_file() {
                anyhow::bail!("--component-override {name}={}: no such file", path.display());
            }
        }
        for (name, embedded) in COMPONENTS {
            let replacement = match overrides.iter().find(|(n, _)| n == name) {
                Some((_, path)) => Some(std::fs::read(path)?),
                None => None,
            };
            let wasm = replacement.as_deref().unwrap_or(embedded);
            let component = compile_cached(&engine, cache_dir, name, wasm)?;
            if *name == MESSENGER {
                let pre = provider_linker.instantiate_pre(&component).map_err(anyhow::Error::from).with_context(|| format!("linking component {name}"))?;
                let pre = MessengerProviderPre::new(pre)?;
                messenger = Some(Arc::new(Messenger { engine: engine.clone(), pre, settings: messenger_settings.clone() }));
                continue;
            }
            let pre = linker.instantiate_pre(&component).map_err(anyhow::Error::from).with_context(|| format!("linking component {name}"))?;
            if *name == DISPATCHER {
                dispatcher = Some(DispatcherPre::new(pre)?);
            } else {
                pres.insert(name.to_string(), ResourceAreaPre::new(pre)?);
            }
        }

        // The epoch ticker: deadlines are counted in ticks.
        let ticker = engine.clone();
        std::thread::Builder::new().name("epoch-ticker".into()).spawn(move || loop {
            std::thread::sleep(EPOCH_TICK);
            ticker.increment_epoch();
        })?;
        Ok(Components { outbound: Arc::new(outbound), engine, pres, dispatcher, messenger })
    }

    pub fn has(&self, name: &str) -> bool {
        self.pres.contains_key(name)
    }

    fn store(&self, conn: libsql::Connection, log_context: String, deadline: Duration) -> Store<RequestState> {
        let state = RequestState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new().memory_size(INSTANCE_MEMORY_LIMIT).instances(16).trap_on_grow_failure(true).build(),
            conn,
            log_context,
            outbound: self.outbound.clone(),
            messenger: self.messenger.clone(),
            lazy: None,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        let ticks = (deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64;
        store.set_epoch_deadline(ticks);
        store
    }

    /// Runs one job step in the dispatcher, on `conn`. Without `lazy_gate`
    /// the job runner has opened the transaction already; with it (network
    /// mode) the step's first write takes the gate and begins it, and the
    /// guard comes back so the runner commits the completion in the same
    /// transaction.
    pub fn run_job(
        &self,
        conn: libsql::Connection,
        job: &Job,
        lazy_gate: Option<Arc<parking_lot::FairMutex<()>>>,
    ) -> (libsql::Connection, Option<crate::db::WriteGuard>, Result<Outcome, CallError>) {
        let Some(pre) = &self.dispatcher else {
            return (conn, None, Err(CallError::Trap("no dispatcher component in this build".into())));
        };
        let mut store = self.store(conn, format!("component=dispatcher job={} kind={}", job.id, job.kind), JOB_DEADLINE);
        store.data_mut().lazy = lazy_gate.map(|gate| LazyWrite { gate, guard: None });
        let result = match pre.instantiate(&mut store) {
            Ok(inst) => inst.switchboard_platform_job_handler().call_run(&mut store, job).map_err(classify),
            Err(e) => Err(classify_instantiate(e)),
        };
        let state = store.into_data();
        (state.conn, state.lazy.and_then(|l| l.guard), result)
    }

    /// Instantiates `name` in a fresh store and calls `handle`. Runs on a
    /// blocking thread; `conn` is handed back with whatever the component did
    /// (the caller commits or rolls back).
    pub fn call(
        &self,
        name: &str,
        conn: libsql::Connection,
        req: &types::Request,
        deadline: Duration,
    ) -> (libsql::Connection, Result<Result<types::Success, types::Failure>, CallError>) {
        let pre = &self.pres[name];
        let mut store = self.store(conn, format!("component={name} requestId={}", req.request_id), deadline);
        let result = match pre.instantiate(&mut store) {
            Ok(inst) => inst.switchboard_platform_handler().call_handle(&mut store, req).map_err(classify),
            Err(e) => Err(classify_instantiate(e)),
        };
        (store.into_data().conn, result)
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
            wasmtime::Trap::MemoryOutOfBounds | wasmtime::Trap::TableOutOfBounds => CallError::Trap(format!("{e:#}")),
            _ => CallError::Trap(format!("{e:#}")),
        };
    }
    // With trap_on_grow_failure the error is not a Trap: look at the cause.
    let text = format!("{e:?}");
    if text.contains("forcing trap when growing memory") || text.contains("memory") && text.contains("limit") {
        CallError::ResourceLimit
    } else {
        CallError::Trap(format!("{e:#}"))
    }
}

/// Compiles a component once per (bytes, engine configuration) and keeps the
/// native artifact in `cache_dir`.
fn compile_cached(engine: &Engine, cache_dir: &Path, name: &str, wasm: &[u8]) -> Result<Component> {
    let mut h = Sha256::new();
    h.update(wasm);
    let mut compat = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut compat);
    h.update(std::hash::Hasher::finish(&compat).to_le_bytes());
    h.update(env!("CARGO_PKG_VERSION"));
    let key = hex::encode(&h.finalize()[..12]);
    let path = cache_dir.join(format!("{name}-{key}.cwasm"));
    if path.exists() {
        // SAFETY: the file was written by `precompile_component` of this same
        // engine configuration (the name carries its compatibility hash) into
        // our own data dir.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(c) => return Ok(c),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    let bytes = engine.precompile_component(wasm).map_err(anyhow::Error::from).with_context(|| format!("compiling component {name}"))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, &bytes)?;
    std::fs::rename(&tmp, &path)?;
    // SAFETY: as above, just written by this engine.
    Ok(unsafe { Component::deserialize(engine, &bytes)? })
}

fn to_sql(v: types::Value) -> SqlValue {
    match v {
        types::Value::Null => SqlValue::Null,
        types::Value::Integer(i) => SqlValue::Integer(i),
        types::Value::Real(f) => SqlValue::Real(f),
        types::Value::Text(s) => SqlValue::Text(s),
        types::Value::Blob(b) => SqlValue::Blob(b),
    }
}

fn from_sql(v: SqlValue) -> types::Value {
    match v {
        SqlValue::Null => types::Value::Null,
        SqlValue::Integer(i) => types::Value::Integer(i),
        SqlValue::Real(f) => types::Value::Real(f),
        SqlValue::Text(s) => types::Value::Text(s),
        SqlValue::Blob(b) => types::Value::Blob(b),
    }
}

fn store_error(e: libsql::Error) -> store::StoreError {
    let message = e.to_string();
    let kind = if message.contains("constraint") || message.contains("UNIQUE") {
        "constraint"
    } else if message.contains("locked") || message.contains("busy") {
        "busy"
    } else {
        "other"
    };
    store::StoreError { kind: kind.into(), message }
}

impl types::Host for RequestState {}

impl store::Host for RequestState {
    fn query(&mut self, sql: String, params: Vec<types::Value>) -> Result<Vec<Vec<types::Value>>, store::StoreError> {
        if !reads_only(&sql) {
            self.begin_write()?;
        }
        let params: Vec<SqlValue> = params.into_iter().map(to_sql).collect();
        crate::db::query_rows(&self.conn, &sql, params)
            .map(|rows| rows.into_iter().map(|r| r.into_iter().map(from_sql).collect()).collect())
            .map_err(|e| match e.downcast::<libsql::Error>() {
                Ok(e) => store_error(e),
                Err(e) => store::StoreError { kind: "other".into(), message: e.to_string() },
            })
    }

    fn execute(&mut self, sql: String, params: Vec<types::Value>) -> Result<u64, store::StoreError> {
        self.begin_write()?;
        let params: Vec<SqlValue> = params.into_iter().map(to_sql).collect();
        block(self.conn.execute(&sql, params)).map_err(store_error)
    }

    fn execute_many(&mut self, sql: String, rows: Vec<Vec<types::Value>>) -> Result<u64, store::StoreError> {
        self.begin_write()?;
        block(async {
            let stmt = self.conn.prepare(&sql).await?;
            let mut total = 0u64;
            for row in rows {
                let params: Vec<SqlValue> = row.into_iter().map(to_sql).collect();
                total += stmt.execute(params).await? as u64;
                stmt.reset();
            }
            Ok(total)
        })
        .map_err(store_error)
    }
}

impl jobs::Host for RequestState {
    fn enqueue(&mut self, kind: String, business_id: String, payload_json: String, delay_ms: u64) -> Result<String, store::StoreError> {
        self.begin_write()?;
        let id = uuid::Uuid::now_v7().to_string();
        let now = crate::clock::now_ms();
        block(self.conn.execute(
            "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            vec![
                SqlValue::Text(id.clone()),
                SqlValue::Text(kind),
                SqlValue::Text(business_id),
                SqlValue::Text(payload_json),
                SqlValue::Integer(now + delay_ms as i64),
                SqlValue::Integer(now),
            ],
        ))
        .map_err(store_error)?;
        Ok(id)
    }
}

/// `clock` and `ids` are the same for a request's store and a provider's.
macro_rules! clock_and_ids {
    ($state:ty) => {
        impl clock::Host for $state {
            fn now_ms(&mut self) -> i64 {
                crate::clock::now_ms()
            }
            fn now_rfc3339(&mut self) -> String {
                crate::clock::now_rfc3339()
            }
        }

        impl ids::Host for $state {
            fn uuid_v7(&mut self) -> String {
                uuid::Uuid::now_v7().to_string()
            }
            /// At most 4 KiB from the CSPRNG.
            fn random_bytes(&mut self, len: u32) -> Vec<u8> {
                let mut v = vec![0u8; len.min(4096) as usize];
                rand::fill(&mut v[..]);
                v
            }
        }
    };
}
clock_and_ids!(RequestState);
clock_and_ids!(ProviderState);

fn level_name(level: log::Level) -> &'static str {
    match level {
        log::Level::Debug => "debug",
        log::Level::Info => "info",
        log::Level::Warn => "warn",
        log::Level::Error => "error",
    }
}

impl log::Host for RequestState {
    fn log(&mut self, level: log::Level, message: String) {
        crate::logging::line(level_name(level), &format!("{} {message}", self.log_context));
    }
}

impl http_out::Host for RequestState {
    fn policy(&mut self) -> http_out::DeliveryPolicy {
        http_out::DeliveryPolicy {
            timeout_ms: self.outbound.timeout.as_millis() as u32,
            retry_delays_ms: self.outbound.retry_delays_ms.clone(),
        }
    }

    fn post(&mut self, url: String, headers: Vec<(String, String)>, body: String) -> Result<u16, String> {
        crate::outbound::post(&self.outbound, &url, &headers, &body)
    }
}

/// `ai`: agent replies (offline responder or the configured endpoint, see ai.rs).
impl ai::Host for RequestState {
    fn complete(&mut self, instructions: String, history: Vec<(String, String)>) -> Result<String, String> {
        crate::ai::complete(&instructions, &history)
    }
}

impl Messenger {
    /// Calls the provider in a fresh, bounded store of its own.
    fn call<T>(&self, context: &str, f: impl FnOnce(&provider::Guest, &mut Store<ProviderState>) -> wasmtime::Result<T>) -> Result<T, messenger::ProviderError> {
        let state = ProviderState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new().memory_size(INSTANCE_MEMORY_LIMIT).instances(16).trap_on_grow_failure(true).build(),
            settings: self.settings.clone(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline((PROVIDER_DEADLINE.as_millis() / EPOCH_TICK.as_millis()) as u64);
        let result = self.pre.instantiate(&mut store).and_then(|inst| f(inst.switchboard_platform_messenger(), &mut store));
        result.map_err(|e| {
            crate::logging::line("error", &format!("{context} messaging provider trapped: {e:#}"));
            messenger::ProviderError { code: "provider_unavailable".into(), message: "the messaging provider failed".into(), retryable: true }
        })
    }
}

fn provider_error(e: provider::ProviderError) -> messenger::ProviderError {
    messenger::ProviderError { code: e.code, message: e.message, retryable: e.retryable }
}

/// `messenger`: the linked provider component answers (the sandbox messenger
/// unless overridden).
impl messenger::Host for RequestState {
    fn upload_media(&mut self, m: messenger::Media) -> Result<messenger::StoredMedia, messenger::ProviderError> {
        let p = self.messenger.clone().ok_or_else(no_messenger)?;
        let m = provider::Media { channel: m.channel, sender_id: m.sender_id, mime_type: m.mime_type, file_name: m.file_name, sha256_hex: m.sha256_hex, bytes: m.bytes };
        let stored = p.call(&self.log_context, |g, s| g.call_upload_media(s, &m))?.map_err(provider_error)?;
        Ok(messenger::StoredMedia { provider_media_id: stored.provider_media_id, provider_status: stored.provider_status, expires_at_ms: stored.expires_at_ms })
    }

    fn submit(&mut self, m: messenger::OutboundMessage) -> Result<String, messenger::ProviderError> {
        let p = self.messenger.clone().ok_or_else(no_messenger)?;
        let m = provider::OutboundMessage {
            message_id: m.message_id,
            channel: m.channel,
            sender_id: m.sender_id,
            recipient: m.recipient,
            kind: m.kind,
            text: m.text,
            provider_media_id: m.provider_media_id,
        };
        p.call(&self.log_context, |g, s| g.call_submit(s, &m))?.map_err(provider_error)
    }

    fn track(&mut self, provider_message_id: String, recipient: String, last_status: String) -> Result<messenger::Progress, messenger::ProviderError> {
        let p = self.messenger.clone().ok_or_else(no_messenger)?;
        let progress = p.call(&self.log_context, |g, s| g.call_track(s, &provider_message_id, &recipient, &last_status))?.map_err(provider_error)?;
        Ok(messenger::Progress {
            report: progress.report.map(|r| messenger::StatusReport {
                status: r.status,
                provider_status: r.provider_status,
                failure: r.failure.map(provider_error),
            }),
            check_after_ms: progress.check_after_ms,
        })
    }
}

fn no_messenger() -> messenger::ProviderError {
    messenger::ProviderError { code: "provider_not_configured".into(), message: "no messaging provider is linked in this build".into(), retryable: false }
}

impl settings::Host for ProviderState {
    fn get(&mut self, name: String) -> Option<String> {
        self.settings.get(&name).cloned()
    }
}

impl log::Host for ProviderState {
    fn log(&mut self, level: log::Level, message: String) {
        crate::logging::line(level_name(level), &format!("component=messenger {message}"));
    }
}
