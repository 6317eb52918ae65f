//! Prometheus metrics (`GET /metrics`, no key needed), through the `metrics`
//! facade and `metrics-exporter-prometheus`. Labels are operation ids,
//! statuses, job kinds and outcomes only: never a business id, key, number
//! or secret.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Instant;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
/// Every (kind, state) the queue gauges were ever set for: an emptied queue
/// reads 0, not its last depth.
static QUEUE_LABELS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Histogram buckets in seconds: 100 µs to 30 s.
const BUCKETS: [f64; 14] = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0];

/// Installs the recorder (once per process; later calls do nothing).
pub fn install() {
    if HANDLE.get().is_some() {
        return;
    }
    let builder = PrometheusBuilder::new().set_buckets(&BUCKETS).expect("non-empty buckets");
    if let Ok(handle) = builder.install_recorder() {
        let _ = HANDLE.set(handle);
    }
}

/// One call into a provider adapter: how long its instance took to make
/// and the whole call, by kind of adapter (`embedded` or `plugin`, never
/// its name: a label per plugin would grow with the plugin folder) and
/// outcome (`ok`, or the fault: `timeout`, `fuel`, `memory`, `trap`).
pub fn provider_call(adapter: &'static str, outcome: &'static str, instantiated: std::time::Duration, started: Instant) {
    metrics::counter!("switchboard_provider_calls_total", "adapter" => adapter, "outcome" => outcome).increment(1);
    metrics::histogram!("switchboard_provider_instantiate_seconds", "adapter" => adapter).record(instantiated.as_secs_f64());
    metrics::histogram!("switchboard_provider_call_seconds", "adapter" => adapter).record(started.elapsed().as_secs_f64());
}

/// One call a node makes to its libSQL primary: a `statement` run there, a
/// `batch` of literal statements (a step's many rows), the `describe`
/// libsql asks for before a statement it prepares for the primary, or a
/// `sync` of the replica after a commit (a handshake and a pull of frames).
pub fn primary_call(call: &'static str) {
    metrics::counter!("switchboard_primary_calls_total", "call" => call).increment(1);
}

/// One answered request (its status and time to the answer's head).
pub fn request(operation: &'static str, status: u16, started: Instant) {
    let labels = [("operation", operation.to_string()), ("status", status.to_string())];
    metrics::counter!("switchboard_requests_total", &labels).increment(1);
    metrics::histogram!("switchboard_request_duration_seconds", "operation" => operation).record(started.elapsed().as_secs_f64());
}

/// One write batch (group commit): how many mutations shared a commit.
pub fn write_batch(requests: usize) {
    metrics::histogram!("switchboard_write_batch_requests").record(requests as f64);
}

/// How long a writer (a mutation batch, a job step, an upload chunk)
/// waited for the write gate, and whether it got it.
pub fn write_gate_wait(asked: Instant, got: bool) {
    metrics::histogram!("switchboard_write_gate_wait_seconds", "outcome" => if got { "taken" } else { "timed_out" }).record(asked.elapsed().as_secs_f64());
}

/// One webhook POST: `2xx`, `3xx`, `4xx`, `5xx`, or why there was no
/// response (`timeout`, `connection`, `refused` by the public-target
/// policy, `other`), and its latency.
pub fn webhook_attempt(outcome: &'static str, started: Instant) {
    metrics::counter!("switchboard_webhook_attempts_total", "outcome" => outcome).increment(1);
    metrics::histogram!("switchboard_webhook_attempt_duration_seconds").record(started.elapsed().as_secs_f64());
}

/// One committed job step: its kind and outcome (`done`, `retry`, `dead`,
/// `trapped`, …) and how long it ran.
pub fn job_step(kind: &str, outcome: &str, started_ms: i64) {
    let labels = [("kind", kind.to_string()), ("outcome", outcome.to_string())];
    metrics::counter!("switchboard_job_steps_total", &labels).increment(1);
    let seconds = (crate::clock::now_ms() - started_ms).max(0) as f64 / 1000.0;
    metrics::histogram!("switchboard_job_step_duration_seconds", "kind" => kind.to_string()).record(seconds);
}

/// The Prometheus text, with the job queue's depth and oldest due age per
/// kind read from storage at scrape time.
pub fn render(db: &crate::db::Db) -> String {
    let int = |v: &crate::db::SqlValue| match v {
        crate::db::SqlValue::Integer(i) => *i,
        _ => 0,
    };
    if let Ok(conn) = db.conn() {
        let now = crate::clock::now_ms();
        let rows = crate::db::query_rows(
            &conn,
            "SELECT kind, 'pending', COUNT(*), MIN(due_at_ms) FROM jobs INDEXED BY jobs_pending_due WHERE state = 'pending' GROUP BY kind \
             UNION ALL SELECT kind, 'leased', COUNT(*), MIN(due_at_ms) FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' GROUP BY kind",
            vec![],
        )
        .unwrap_or_default();
        let mut seen = QUEUE_LABELS.lock().unwrap_or_else(|e| e.into_inner());
        for (kind, state) in seen.iter() {
            let labels = [("kind", kind.clone()), ("state", state.clone())];
            metrics::gauge!("switchboard_jobs_queued", &labels).set(0.0);
            metrics::gauge!("switchboard_jobs_oldest_due_age_seconds", &labels).set(0.0);
        }
        for r in rows {
            let text = |v: &crate::db::SqlValue| match v {
                crate::db::SqlValue::Text(s) => s.clone(),
                _ => String::new(),
            };
            let key = (text(&r[0]), text(&r[1]));
            if !seen.contains(&key) {
                seen.push(key.clone());
            }
            let labels = [("kind", key.0), ("state", key.1)];
            metrics::gauge!("switchboard_jobs_queued", &labels).set(int(&r[2]) as f64);
            let age = ((now - int(&r[3])).max(0) as f64) / 1000.0;
            metrics::gauge!("switchboard_jobs_oldest_due_age_seconds", &labels).set(age);
        }
        drop(seen);
        // Rows held by ingestion versions (all businesses together).
        let rows = crate::db::query_rows(&conn, "SELECT IFNULL(SUM(row_count), 0), COUNT(*) FROM ingestion_versions", vec![]).unwrap_or_default();
        if let Some(r) = rows.first() {
            metrics::gauge!("switchboard_ingestion_rows").set(int(&r[0]) as f64);
            metrics::gauge!("switchboard_ingestion_versions").set(int(&r[1]) as f64);
        }
    }
    match HANDLE.get() {
        Some(handle) => {
            handle.run_upkeep();
            handle.render()
        }
        None => String::new(),
    }
}
