//! Logging through `tracing`: one JSON line per event on stderr, filtered
//! by `RUST_LOG` (default `info`). Lines are formatted on the caller's
//! thread and written by a background thread (`tracing-appender`'s
//! non-blocking writer, lossy): a request never waits for a write to
//! stderr, and a full, slow or broken stderr drops lines instead of slowing
//! or stopping the service.
//!
//! Callers never pass secrets, keys, request bodies, query strings (they can
//! carry mobile numbers) or provider ids.
//!
//! An event is a `tracing` macro with fields:
//! `tracing::warn!(jobId = %claim.id, fence = claim.fence, "job completion refused: stale fence")`.
//! The message is a short lowercase phrase that never changes with the
//! values (a test or an alert matches it whole); the values are camelCase
//! fields (`requestId`, `businessId`, `jobId`, `durationMs`, `bytes`,
//! `error`), `%` for a `Display` value, `%format_args!("{e:#}")` for an
//! `anyhow` error (its causes too). Inside a request or a job step the
//! span already carries its ids (`span`); name them again only outside it.
//! A test finds an event by its message and reads its fields from the JSON
//! line (`log_event` in tests/api/harness.rs), never by searching the text.

mod json_line;

use tracing_subscriber::EnvFilter;

/// Lines buffered for the writer thread before new ones are dropped.
const BUFFERED_LINES: usize = 64 * 1024;

/// Installs the subscriber. Keep the guard alive until the process ends:
/// dropping it flushes what is buffered.
pub fn init() -> tracing_appender::non_blocking::WorkerGuard {
    let stderr = std::io::BufWriter::with_capacity(64 << 10, std::io::stderr());
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default().buffered_lines_limit(BUFFERED_LINES).lossy(true).thread_name("log-writer").finish(stderr);
    // libsql's replica client says "handshake with primary" at info on
    // every periodic sync, and warns of any fetch slower than its average;
    // its errors are what we want.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,libsql=error,libsql_replication=error"));
    let _ = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        // An event inside a request or a job step carries that span's
        // fields (`span`: requestId, operation, businessId; or jobId, kind,
        // attempt, businessId).
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .with_env_filter(filter)
        .with_writer(writer)
        // The stock JSON formatter's lines, written without parsing the
        // span's fields back for every line (`json_line.rs`).
        .event_format(json_line::JsonLine::new())
        .try_init();
    guard
}

/// One finished job step (inside its `job_step` span): how it ended and
/// how long it ran.
pub fn job_step(outcome: &str, millis: i64) {
    tracing::info!(outcome, durationMs = millis, "job step");
}

/// The access line of a whole answer.
pub fn request(request_id: &str, method: &str, path: &str, operation: &str, status: u16, micros: u128) {
    tracing::info!(requestId = request_id, method, path, operation, status, durationUs = micros as u64, "request");
}

/// The access line of a streamed answer, written when its stream ends:
/// `bytes` sent, and how it ended (`complete`, `aborted`, `client_gone`,
/// `client_stalled`).
#[allow(clippy::too_many_arguments)]
pub fn streamed(request_id: &str, method: &str, path: &str, operation: &str, status: u16, micros: u128, bytes: u64, end: &str) {
    tracing::info!(requestId = request_id, method, path, operation, status, durationUs = micros as u64, bytes, streamEnd = end, "request");
}
