//! Prometheus metrics (`GET /metrics`, no key needed), through the `metrics`
//! facade and `metrics-exporter-prometheus`. Labels are operation ids,
//! statuses, job kinds and outcomes only: never a business id, key, number
//! or secret.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::time::Instant;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

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
        describe();
    }
}

/// Every series this process reports, with its `# HELP` text (docs/operations.md
/// names each; tests/api/observability.rs reads them off a fresh server).
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!("switchboard_requests_total", "Answered requests, by operation and HTTP status.");
    describe_histogram!("switchboard_request_duration_seconds", Unit::Seconds, "Time from a request's arrival to its answer's head, by operation.");
    describe_histogram!("switchboard_write_batch_requests", Unit::Count, "How many mutations shared one write transaction (group commit).");
    describe_histogram!("switchboard_write_call_seconds", Unit::Seconds, "How long a mutation's component ran inside the write transaction, by operation.");
    describe_histogram!("switchboard_prepare_seconds", Unit::Seconds, "How long a mutation's prepare step parsed its body before the write transaction, by operation.");
    describe_gauge!("switchboard_prepares_in_flight", Unit::Count, "Prepare steps running now (a contacts import's CSV, a JSON data source upload's base64).");
    describe_histogram!(
        "switchboard_write_gate_wait_seconds",
        Unit::Seconds,
        "How long a writer (a mutation batch, a job step, an upload chunk) waited for the write transaction, by whether it got it."
    );
    describe_counter!("switchboard_job_steps_total", "Committed job steps, by job kind and outcome.");
    describe_histogram!("switchboard_job_step_duration_seconds", Unit::Seconds, "How long a committed job step ran, by job kind.");
    describe_gauge!("switchboard_jobs_queued", Unit::Count, "Jobs pending or leased now, by job kind and state (every database of the node, read at scrape time).");
    describe_gauge!("switchboard_jobs_oldest_due_age_seconds", Unit::Seconds, "How long ago the oldest pending or leased job was due, by job kind and state (0 when none).");
    describe_counter!("switchboard_webhook_attempts_total", "Webhook delivery POSTs, by outcome: a status class, or why there was no response.");
    describe_histogram!("switchboard_webhook_attempt_duration_seconds", Unit::Seconds, "How long a webhook delivery POST took to its answer or its error.");
    describe_counter!("switchboard_provider_calls_total", "Calls into messenger, carrier and AI adapters, by kind of adapter and outcome.");
    describe_histogram!("switchboard_provider_instantiate_seconds", Unit::Seconds, "How long a provider adapter's instance took to make, by kind of adapter.");
    describe_histogram!("switchboard_provider_call_seconds", Unit::Seconds, "How long a whole call into a provider adapter took, by kind of adapter.");
    describe_counter!("switchboard_component_instances_total", "Component instances for requests, by origin: reused from the same business's last request (warm) or made (fresh).");
    describe_counter!(
        "switchboard_job_step_instances_total",
        "Dispatcher instances for job steps (a batch of deliveries is one step), by origin: reused from the same business's last step (warm) or made (fresh)."
    );
    describe_counter!("switchboard_primary_calls_total", "Calls this node made to its libSQL primary, by kind of call (0 on a node with no primary).");
    describe_gauge!("switchboard_ingestion_rows", Unit::Count, "Rows held by data source ingestions (read at scrape time).");
    describe_gauge!("switchboard_ingestion_versions", Unit::Count, "Data source ingestion versions held (read at scrape time).");
}

/// The outcomes of a webhook POST ([`webhook_attempt`]).
const WEBHOOK_OUTCOMES: [&str; 8] = ["2xx", "3xx", "4xx", "5xx", "timeout", "connection", "refused", "other"];
/// The kinds of provider adapter and the outcomes of a call ([`provider_call`]).
const ADAPTERS: [&str; 2] = ["embedded", "plugin"];
const PROVIDER_OUTCOMES: [&str; 5] = ["ok", "timeout", "fuel", "memory", "trap"];
/// The outcomes of a committed job step ([`job_step`]).
const STEP_OUTCOMES: [&str; 5] = ["done", "retry", "continue", "dead", "trapped"];
/// The states the queue gauges count (`jobs::queue_gauges`).
const QUEUE_STATES: [&str; 2] = ["pending", "leased"];
/// The calls a node makes to its primary ([`primary_call`]).
const PRIMARY_CALLS: [&str; 7] = ["statement", "describe", "batch", "sync", "conflict", "snapshot_wait", "carried"];

/// Registers every series whose labels are known at start at 0 (counters
/// and gauges) or with no observation (histograms), so that a scrape of a
/// quiet server already has them and an alert on a rate or a queue sees a
/// 0 rather than no data: each operation (requests at its usual success
/// status; write calls for mutations; prepare steps for the operations
/// that have one), each job kind in `job_kinds` (steps by outcome, the
/// queue by state), and the closed label sets of the others. Other label
/// values (an error status, say) appear when they first happen. Call once,
/// after [`install`].
pub fn start_at_zero(job_kinds: &[String]) {
    use metrics::{counter, gauge, histogram};
    // A histogram is registered by naming it (`let _ =`: no observation).
    for op in switchboard_gateway::OPERATIONS {
        let status = op.success_status.first().copied().unwrap_or(200).to_string();
        counter!("switchboard_requests_total", "operation" => op.id.as_str(), "status" => status).increment(0);
        let _ = histogram!("switchboard_request_duration_seconds", "operation" => op.id.as_str());
        if op.method.is_mutation() {
            let _ = histogram!("switchboard_write_call_seconds", "operation" => op.id.as_str());
        }
        if op.prepared_before_write() {
            let _ = histogram!("switchboard_prepare_seconds", "operation" => op.id.as_str());
        }
    }
    let _ = histogram!("switchboard_write_batch_requests");
    gauge!("switchboard_prepares_in_flight").increment(0.0);
    for outcome in ["taken", "timed_out"] {
        let _ = histogram!("switchboard_write_gate_wait_seconds", "outcome" => outcome);
    }
    for kind in job_kinds {
        for outcome in STEP_OUTCOMES {
            counter!("switchboard_job_steps_total", "kind" => kind.clone(), "outcome" => outcome).increment(0);
        }
        let _ = histogram!("switchboard_job_step_duration_seconds", "kind" => kind.clone());
        for state in QUEUE_STATES {
            // Set by `jobs::queue_gauges` at each scrape once the kind has jobs.
            gauge!("switchboard_jobs_queued", "kind" => kind.clone(), "state" => state).increment(0.0);
            gauge!("switchboard_jobs_oldest_due_age_seconds", "kind" => kind.clone(), "state" => state).increment(0.0);
        }
    }
    for outcome in WEBHOOK_OUTCOMES {
        counter!("switchboard_webhook_attempts_total", "outcome" => outcome).increment(0);
    }
    let _ = histogram!("switchboard_webhook_attempt_duration_seconds");
    for adapter in ADAPTERS {
        for outcome in PROVIDER_OUTCOMES {
            counter!("switchboard_provider_calls_total", "adapter" => adapter, "outcome" => outcome).increment(0);
        }
        let _ = histogram!("switchboard_provider_instantiate_seconds", "adapter" => adapter);
        let _ = histogram!("switchboard_provider_call_seconds", "adapter" => adapter);
    }
    for origin in ["warm", "fresh"] {
        counter!("switchboard_component_instances_total", "origin" => origin).increment(0);
        counter!("switchboard_job_step_instances_total", "origin" => origin).increment(0);
    }
    for call in PRIMARY_CALLS {
        counter!("switchboard_primary_calls_total", "call" => call).increment(0);
    }
    gauge!("switchboard_ingestion_rows").increment(0.0);
    gauge!("switchboard_ingestion_versions").increment(0.0);
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
/// `sync` of the replica after a commit (a handshake and a pull of frames);
/// `carried` counts a pull saved: a request batch that went on from the
/// last one's shipped transaction (`storage::ship::Carry`).
pub fn primary_call(call: &'static str) {
    metrics::counter!("switchboard_primary_calls_total", "call" => call).increment(1);
}

/// One component call of a request, by where its instance came from:
/// `warm` (the same business's last call left it idle) or `fresh`.
pub fn component_instance(origin: &'static str) {
    metrics::counter!("switchboard_component_instances_total", "origin" => origin).increment(1);
}

/// One job step's dispatcher instance (a batch of steps counts once), by
/// where it came from: `warm` (the same business's last step left it
/// idle) or `fresh`.
pub fn job_step_instance(origin: &'static str) {
    metrics::counter!("switchboard_job_step_instances_total", "origin" => origin).increment(1);
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

/// How long a mutation's component ran inside the write transaction (the
/// part of its time it held the write gate), by operation.
pub fn write_call(operation: &'static str, started: Instant) {
    metrics::histogram!("switchboard_write_call_seconds", "operation" => operation).record(started.elapsed().as_secs_f64());
}

/// A mutation's prepare step, its body parsed before the write transaction:
/// `switchboard_prepares_in_flight` counts it until the guard drops, which
/// records its time by operation.
pub fn prepare_step(operation: &'static str) -> PrepareStep {
    metrics::gauge!("switchboard_prepares_in_flight").increment(1.0);
    PrepareStep { operation, started: Instant::now() }
}

/// A running prepare step (see [`prepare_step`]).
pub struct PrepareStep {
    operation: &'static str,
    started: Instant,
}

impl Drop for PrepareStep {
    fn drop(&mut self) {
        metrics::gauge!("switchboard_prepares_in_flight").decrement(1.0);
        metrics::histogram!("switchboard_prepare_seconds", "operation" => self.operation).record(self.started.elapsed().as_secs_f64());
    }
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

/// The Prometheus text of everything recorded so far. Gauges read from
/// storage are set by their owners just before (`jobs::queue_gauges`).
pub fn render() -> String {
    match HANDLE.get() {
        Some(handle) => {
            handle.run_upkeep();
            handle.render()
        }
        None => String::new(),
    }
}
