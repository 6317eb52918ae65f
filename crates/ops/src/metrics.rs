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

/// One component call of a request, by where its instance came from:
/// `warm` (the same business's last call left it idle) or `fresh`.
pub fn component_instance(origin: &'static str) {
    metrics::counter!("switchboard_component_instances_total", "origin" => origin).increment(1);
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
