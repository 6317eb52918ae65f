//! Job steps as every area writes them: the job kinds of every area are
//! declared once, in `switchboard-job-kinds` (re-exported as
//! [`crate::job_kinds`]: each area's enum, its payloads and the options of
//! each kind); this module enqueues them through the `jobs` import
//! ([`enqueue`]), reads a running job back typed ([`AreaJob::from_job`]) and
//! has the step helpers (one step wrapper, retry with backoff).
//!
//! An area's `jobs::run` matches on its enum; the dispatcher routes a job to
//! its area by the kind's prefix (`messaging.` …).

pub use switchboard_job_kinds::{JobKind, JobOptions as KindOptions};

use crate::bindings::switchboard::platform::job_types::{Continuation, Job, Outcome, RetryAfter};
use crate::bindings::switchboard::platform::jobs::{self, JobOptions};
use crate::{db, Failure};

/// What a job step does with a kind of `switchboard-job-kinds`: every
/// [`JobKind`] is one.
pub trait AreaJob: JobKind {
    /// The kind's options as the `jobs` import takes them.
    fn job_options(&self) -> JobOptions {
        let KindOptions { calls_out, lane, delay_ms } = self.options();
        JobOptions { calls_out, lane, delay_ms }
    }

    /// The job a step runs, typed; a payload that does not parse makes the
    /// job dead (running it again cannot help).
    fn from_job(job: &Job) -> Result<Self, Outcome> {
        Self::from_row(&job.kind, &job.payload_json).map_err(|e| Outcome::Dead(format!("invalid payload: {e}")))
    }

    /// `continue`: run this job again after `delay_ms` with this payload
    /// (its kind must be the running job's).
    fn continue_after(&self, delay_ms: u64) -> Outcome {
        Outcome::Continue(Continuation { delay_ms, payload_json: self.to_row().1 })
    }
}

impl<J: JobKind> AreaJob for J {}

/// Enqueues `job` in the caller's transaction with the options its kind
/// declares; returns the job id.
pub fn enqueue<J: JobKind>(business_id: &str, job: &J) -> Result<String, Failure> {
    let (kind, payload) = job.to_row();
    jobs::enqueue(&kind, business_id, &payload, &job.job_options()).map_err(db::store_failure)
}

/// Exponential backoff for transient failures: 1 s, 2 s, 4 s … capped at 1 h.
pub fn backoff_ms(attempt: u32) -> u64 {
    let exp = attempt.saturating_sub(1).min(12);
    (1000u64 << exp).min(3_600_000)
}

/// Runs a job step whose store errors trap. A store error is never an
/// outcome: the panic traps the call, the host rolls the step's transaction
/// back and the runner retries the step with backoff (a busy database, a
/// transient store error). `during` names the step in the trap's message
/// (`"during message delivery"`).
pub fn run_step<T>(during: &str, step: impl FnOnce() -> Result<T, Failure>) -> T {
    match step() {
        Ok(t) => t,
        Err(f) => panic!("store error {during}: {} {}", f.code, f.message),
    }
}

/// `retry` after [`backoff_ms`] of `attempt`.
pub fn retry(attempt: u32, reason: impl Into<String>) -> Outcome {
    Outcome::Retry(RetryAfter { delay_ms: backoff_ms(attempt), reason: reason.into() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Ref {
        message_id: String,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "kind", content = "payload")]
    enum TestJob {
        #[serde(rename = "test.one")]
        One(Ref),
        #[serde(rename = "test.two")]
        Two { n: u32 },
    }

    impl JobKind for TestJob {
        fn options(&self) -> KindOptions {
            KindOptions { calls_out: true, lane: Some("l".into()), delay_ms: 5 }
        }
    }

    fn job(kind: &str, payload: &str) -> Job {
        Job { id: "j".into(), kind: kind.into(), business_id: "b".into(), payload_json: payload.into(), attempt: 1, fence: 1 }
    }

    #[test]
    fn the_kind_declares_the_options_and_the_continuation_keeps_its_shape() {
        let one = TestJob::One(Ref { message_id: "m1".into() });
        let o = one.job_options();
        assert_eq!((o.calls_out, o.lane.as_deref(), o.delay_ms), (true, Some("l"), 5));
        assert!(matches!(one.continue_after(7), Outcome::Continue(c) if c.delay_ms == 7 && c.payload_json == r#"{"messageId":"m1"}"#));
    }

    #[test]
    fn a_stored_row_reads_back_typed() {
        assert_eq!(TestJob::from_job(&job("test.one", r#"{"messageId":"m1"}"#)).unwrap(), TestJob::One(Ref { message_id: "m1".into() }));
        assert!(matches!(TestJob::from_job(&job("test.one", r#"{"other":1}"#)), Err(Outcome::Dead(r)) if r.starts_with("invalid payload")));
        assert!(matches!(TestJob::from_job(&job("test.one", "not json")), Err(Outcome::Dead(_))));
        assert!(matches!(TestJob::from_job(&job("test.three", "{}")), Err(Outcome::Dead(_))));
    }

    #[test]
    fn a_step_returns_its_value_and_traps_on_a_store_error() {
        assert_eq!(run_step("during a test", || Ok::<_, Failure>(7)), 7);
        let trap = std::panic::catch_unwind(|| run_step("during a test", || Err::<(), _>(crate::fail::failure(503, "capacity", "store_busy", "busy", true))));
        let message = *trap.unwrap_err().downcast::<String>().unwrap();
        assert_eq!(message, "store error during a test: store_busy busy");
    }

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff_ms(1), 1000);
        assert_eq!(backoff_ms(2), 2000);
        assert_eq!(backoff_ms(30), 3_600_000);
    }
}
