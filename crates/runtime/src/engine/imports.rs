//! The host side of the platform imports every component sees (`store`,
//! `jobs`, `clock`, `ids`, `log`, `http-out`), and the state of one call: a
//! request or a job step. Provider interfaces live in `providers/`.

use super::basics::{clock_and_ids, log_event};
use super::bindings::dispatcher_world::switchboard::platform::http_out;
use super::bindings::switchboard::platform::{jobs, store, types};
use super::bindings::switchboard::provider::log;
use super::bindings::voice_world::switchboard::platform::recording_links;
use super::limits::{store_limits, Limits};
use super::providers::adapters::{ProviderCall, Providers, PROVIDER_REFUSED_IN_PREPARE};
use crate::db::SqlValue;
use crate::outbound::OutboundPolicy;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// What every call's imports reach besides its connection, one field per
/// capability: configured once at `serve` start ([`super::Setup`]), linked
/// by [`super::Components::load`], shared by every call's state.
pub struct Capabilities {
    /// `http-out`: how webhook deliveries go out.
    pub outbound: OutboundPolicy,
    /// The provider interfaces: embedded adapters, plugins, the server's AI.
    pub providers: Providers,
    /// `recording-links`: the signing of a call's recording links (none in
    /// a process that serves no recordings: its links are empty).
    pub recording_links: Option<crate::recording_links::RecordingLinks>,
}

/// The state of one component call (a request or a job step).
pub struct RequestState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(super) limits: Limits,
    /// The call's connection; mutations arrive with a write transaction
    /// already open on it. None between the calls of a warm instance
    /// (`warm.rs`), when the connection went back to its caller, and in a
    /// prepare step, which reads nothing.
    pub(super) conn: Option<crate::db::Connection>,
    pub(super) log_context: String,
    /// The business the request or job step runs for (whose provider
    /// adapters answer it).
    business_id: String,
    /// The process's capabilities (providers, outbound, recording links).
    caps: Arc<Capabilities>,
    /// Set for a job step that calls out: the write gate and the transaction
    /// are taken at the step's first write, not before.
    pub(super) lazy: Option<LazyWrite>,
    /// Set for a job step: which job and fence it runs under.
    pub(super) step: Option<StepContext>,
    /// Set for a prepare step (`Components::prepare`): it runs before the
    /// write transaction and without a connection, so `store`, `jobs` and
    /// the provider imports refuse every call.
    pub(super) preparing: bool,
}

/// The job a step runs under, for `jobs.begin-effect`.
pub struct StepContext {
    pub job_id: String,
    pub fence: i64,
}

/// A write transaction begun on first write (see `RequestState::begin_write`).
pub struct LazyWrite {
    gate: crate::db::Gate,
    guard: Option<crate::db::WriteGuard>,
    /// The step's own connection, set aside while it writes on the gate's.
    reader: Option<crate::db::Connection>,
}

impl LazyWrite {
    pub fn new(gate: crate::db::Gate) -> LazyWrite {
        LazyWrite { gate, guard: None, reader: None }
    }
    /// When the step wrote: the held gate, and the step's own connection
    /// (the call's connection is then the gate's writer connection).
    pub fn into_parts(self) -> Option<(crate::db::WriteGuard, crate::db::Connection)> {
        self.guard.zip(self.reader)
    }
    /// The gate, to run a step that never began writing once more.
    pub(super) fn into_gate(self) -> crate::db::Gate {
        debug_assert!(self.guard.is_none(), "only a step that never wrote runs again");
        self.gate
    }
}

/// How long a lazily begun write waits for the gate before the store says `busy`.
const LAZY_GATE_WAIT: Duration = Duration::from_secs(30);

impl RequestState {
    pub(super) fn new(conn: Option<crate::db::Connection>, log_context: String, business_id: &str, caps: Arc<Capabilities>) -> RequestState {
        RequestState {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
            limits: Limits::new(store_limits()),
            conn,
            log_context,
            business_id: business_id.to_string(),
            caps,
            lazy: None,
            step: None,
            preparing: false,
        }
    }

    /// The log prefix of this call (component and request or job).
    pub fn log_context(&self) -> &str {
        &self.log_context
    }

    pub fn providers(&self) -> &Providers {
        &self.caps.providers
    }

    /// The signing of recording links, when this process serves them.
    pub fn recording_links(&self) -> Option<&crate::recording_links::RecordingLinks> {
        self.caps.recording_links.as_ref()
    }

    pub fn business_id(&self) -> &str {
        &self.business_id
    }

    /// The call's connection (a prepare step has none: every import that
    /// reads it refuses a prepare step first).
    pub fn conn(&self) -> &crate::db::Connection {
        self.conn.as_ref().expect("a call's connection is set while it runs")
    }

    /// The connection back from a call that ended.
    pub(super) fn take_conn(&mut self) -> crate::db::Connection {
        self.conn.take().expect("a call's connection is set while it runs")
    }

    /// Readies a warm instance's state for its next call (`warm.rs`).
    pub(super) fn renew(&mut self, conn: crate::db::Connection, log_context: String) {
        self.conn = Some(conn);
        self.log_context = log_context;
    }

    /// Whether the instance may answer another call: nothing of its last
    /// call left (connection, a step's gate and job: `steps.rs` hands them
    /// back first), no resource left in its table, and a small memory.
    pub(super) fn reusable(&self) -> bool {
        self.conn.is_none() && self.lazy.is_none() && self.step.is_none() && self.table.is_empty() && self.limits.small()
    }

    /// For a step that calls out, takes the write gate and begins the
    /// transaction the first time the step writes; otherwise there is
    /// nothing to do (the caller opened the transaction already).
    fn begin_write(&mut self) -> Result<(), store::StoreError> {
        let RequestState { lazy: Some(lazy), conn: Some(conn), .. } = self else { return Ok(()) };
        if lazy.guard.is_some() {
            return Ok(());
        }
        let mut guard = lazy.gate.try_lock_arc_for(LAZY_GATE_WAIT).ok_or_else(gate_busy)?;
        // A step that calls out may have called already: its transaction
        // takes the primary's lock rather than risk a conflict (a step run
        // again calls again).
        let writer = guard.begin_locking().map_err(|e| store_error_text(e.to_string()))?;
        // The step's reads so far ran on its own connection, outside any
        // transaction; from here on it runs on the writer connection.
        lazy.reader = Some(std::mem::replace(conn, writer));
        lazy.guard = Some(guard);
        Ok(())
    }

    /// `jobs.begin-effect`: records, committed at once and only while the
    /// step's fence holds, that the effect `key` is about to be made.
    fn begin_effect(&mut self, key: &str) -> Result<jobs::EffectStart, store::StoreError> {
        let other = |message: &str| store::StoreError { kind: "other".into(), message: message.into() };
        let Some(step) = &self.step else { return Err(other("begin-effect is for job steps only")) };
        let Some(lazy) = &self.lazy else { return Err(other("begin-effect is for jobs that call out (calls-out: true)")) };
        if lazy.guard.is_some() {
            return Err(other("begin-effect must come before the step's first write"));
        }
        let mut gate = lazy.gate.try_lock_arc_for(LAZY_GATE_WAIT).ok_or_else(gate_busy)?;
        let writer = gate.take().map_err(|e| store_error_text(e.to_string()))?;
        let outcome = Self::record_effect(&writer, step, key);
        gate.put_back(writer);
        outcome
    }

    /// `begin_effect`'s transaction, on the writer connection.
    fn record_effect(c: &crate::db::Connection, step: &StepContext, key: &str) -> Result<jobs::EffectStart, store::StoreError> {
        c.execute("BEGIN IMMEDIATE", vec![]).map_err(store_error)?;
        let result = (|| {
            let fence = c.query_rows("SELECT fence FROM jobs WHERE id = ?1 AND state = 'leased'", vec![SqlValue::Text(step.job_id.clone())]).map_err(store_error)?;
            if !matches!(fence.first().map(|r| &r[0]), Some(SqlValue::Integer(f)) if *f == step.fence) {
                return Ok(jobs::EffectStart::Superseded);
            }
            let inserted = c
                .execute(
                    "INSERT OR IGNORE INTO job_effects (job_id, effect_key, fence, started_at_ms) VALUES (?1, ?2, ?3, ?4)",
                    vec![SqlValue::Text(step.job_id.clone()), SqlValue::Text(key.to_string()), SqlValue::Integer(step.fence), SqlValue::Integer(crate::clock::now_ms())],
                )
                .map_err(store_error)?;
            Ok(if inserted == 1 { jobs::EffectStart::Fresh } else { jobs::EffectStart::StartedBefore })
        })();
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        c.execute(end, vec![]).map_err(store_error)?;
        result
    }
}

fn gate_busy() -> store::StoreError {
    store::StoreError { kind: "busy".into(), message: "the write gate stayed busy".into() }
}

impl WasiView for RequestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Links the imports that `resource-area`'s generated linker does not
/// cover (the dispatcher's `http-out`, the voice area's recording links).
pub fn add_to_linker(linker: &mut Linker<RequestState>) -> anyhow::Result<()> {
    http_out::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    recording_links::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    Ok(())
}

use switchboard_gateway::storage::{reads_only, transaction_control as host_owned};

fn refuse_host_owned(sql: &str) -> Result<(), store::StoreError> {
    if host_owned(sql) {
        return Err(store::StoreError { kind: "other".into(), message: "transactions and connection settings belong to the host".into() });
    }
    Ok(())
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
    store_error_text(e.to_string())
}

fn store_error_text(message: String) -> store::StoreError {
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

impl RequestState {
    fn refuse_in_prepare(&self) -> Result<(), store::StoreError> {
        if self.preparing {
            return Err(store::StoreError { kind: "other".into(), message: "a prepare step runs before the transaction: it may not read or write storage".into() });
        }
        Ok(())
    }
}

impl store::Host for RequestState {
    fn query(&mut self, sql: String, params: Vec<types::Value>) -> Result<Vec<Vec<types::Value>>, store::StoreError> {
        self.refuse_in_prepare()?;
        refuse_host_owned(&sql)?;
        if !reads_only(&sql) {
            self.begin_write()?;
        }
        let params: Vec<SqlValue> = params.into_iter().map(to_sql).collect();
        self.conn().query_rows(&sql, params).map(|rows| rows.into_iter().map(|r| r.into_iter().map(from_sql).collect()).collect()).map_err(store_error)
    }

    fn execute(&mut self, sql: String, params: Vec<types::Value>) -> Result<u64, store::StoreError> {
        self.refuse_in_prepare()?;
        refuse_host_owned(&sql)?;
        self.begin_write()?;
        let params: Vec<SqlValue> = params.into_iter().map(to_sql).collect();
        self.conn().execute(&sql, params).map_err(store_error)
    }

    fn execute_many(&mut self, sql: String, rows: Vec<Vec<types::Value>>) -> Result<u64, store::StoreError> {
        self.refuse_in_prepare()?;
        refuse_host_owned(&sql)?;
        self.begin_write()?;
        let rows = rows.into_iter().map(|row| row.into_iter().map(to_sql).collect()).collect();
        self.conn().execute_many(&sql, rows).map_err(store_error)
    }
}

impl jobs::Host for RequestState {
    fn enqueue(&mut self, kind: String, business_id: String, payload_json: String, options: jobs::JobOptions) -> Result<String, store::StoreError> {
        self.refuse_in_prepare()?;
        self.begin_write()?;
        let id = uuid::Uuid::now_v7().to_string();
        let job = switchboard_gateway::storage::NewJob { id: id.clone(), kind, business_id, payload_json, calls_out: options.calls_out, lane: options.lane, delay_ms: options.delay_ms };
        switchboard_gateway::storage::enqueue_job(self.conn(), job, crate::clock::now_ms()).map_err(|e| store_error_text(e.to_string()))?;
        Ok(id)
    }

    fn begin_effect(&mut self, key: String) -> Result<jobs::EffectStart, store::StoreError> {
        RequestState::begin_effect(self, &key)
    }
}

clock_and_ids!(RequestState);

impl log::Host for RequestState {
    fn log(&mut self, level: log::Level, message: String) {
        log_event(level, &self.log_context, &message);
    }
}

/// `recording-links`: signed with the process's links; empty links in a
/// process that serves none.
impl recording_links::Host for RequestState {
    fn sign(&mut self, business_id: String, call_id: String, file_name: String) -> recording_links::Links {
        let now = crate::clock::now_ms();
        let sign = |disposition| self.recording_links().map(|l| l.sign(&business_id, &call_id, &file_name, disposition, now)).unwrap_or_default();
        recording_links::Links { url: sign("inline"), download_url: sign("attachment") }
    }
}

impl http_out::Host for RequestState {
    fn policy(&mut self) -> http_out::DeliveryPolicy {
        http_out::DeliveryPolicy { timeout_ms: self.caps.outbound.timeout.as_millis() as u32, retry_delays_ms: self.caps.outbound.retry_delays_ms.clone() }
    }

    fn post(&mut self, url: String, headers: Vec<(String, String)>, body: String) -> Result<u16, String> {
        // A prepare step only turns the body into what the write will store:
        // it must not send anything out, as it must not call a provider.
        if self.preparing {
            return Err(format!("prepare_refused: {PROVIDER_REFUSED_IN_PREPARE} or send a request out"));
        }
        crate::outbound::post(&self.caps.outbound, &url, &headers, &body)
    }

    fn post_many(&mut self, posts: Vec<http_out::OutboundPost>) -> Vec<http_out::PostOutcome> {
        if self.preparing {
            let refused = format!("prepare_refused: {PROVIDER_REFUSED_IN_PREPARE} or send a request out");
            return posts.iter().map(|_| http_out::PostOutcome { status: Err(refused.clone()), elapsed_ms: 0 }).collect();
        }
        let posts = posts.into_iter().map(|p| (p.url, p.headers, p.body)).collect();
        crate::outbound::post_many(&self.caps.outbound, posts).into_iter().map(|(status, elapsed_ms)| http_out::PostOutcome { status, elapsed_ms }).collect()
    }
}

/// The provider imports' view of a call (wasmtime's `HasData` getter,
/// [`super::providers::add_to_linker`]): the process's providers, the
/// business, the call's connection, and whether it is a prepare step (which
/// must never reach a provider).
pub fn provider_call(state: &mut RequestState) -> ProviderCall<'_> {
    ProviderCall { providers: &state.caps.providers, business_id: &state.business_id, log_context: &state.log_context, conn: state.conn.as_ref(), preparing: state.preparing }
}
