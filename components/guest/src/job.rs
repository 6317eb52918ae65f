//! Job kinds, declared once per area, and the helpers every job step uses.
//!
//! An area declares its kinds as one enum that implements [`AreaJob`]:
//!
//! ```ignore
//! #[derive(Serialize, Deserialize)]
//! #[serde(tag = "kind", content = "payload")]
//! pub enum MessagingJob {
//!     #[serde(rename = "messaging.deliver")]
//!     Deliver(MessageRef),
//!     …
//! }
//! impl AreaJob for MessagingJob {
//!     fn options(&self) -> JobOptions { … }
//! }
//! ```
//!
//! The serde `rename` of a variant is the job's kind (the `jobs.kind`
//! column) and its content is the payload (the `jobs.payload` JSON), so a
//! kind can only be enqueued ([`enqueue`]) with its own payload type and a
//! step reads it back typed ([`AreaJob::from_job`]). Whether a kind calls out
//! and its lane are declared by the kind itself ([`AreaJob::options`]), never
//! by a list in the host. The area's `jobs::run` matches on the enum; the
//! dispatcher routes a job to its area by the kind's prefix (`messaging.` …).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::bindings::switchboard::platform::job_types::{Continuation, Job, Outcome, RetryAfter};
use crate::bindings::switchboard::platform::jobs::{self, JobOptions};
use crate::{db, Failure};

/// The job kinds of one area: a serde enum tagged `kind` with content
/// `payload` (see the module documentation).
pub trait AreaJob: Serialize + DeserializeOwned {
    /// How the runner treats this job's steps (calls out, lane, delay).
    fn options(&self) -> JobOptions {
        JobOptions { calls_out: false, lane: None, delay_ms: 0 }
    }

    /// The kind name and the payload JSON, as stored in the `jobs` row.
    fn to_row(&self) -> (String, String) {
        let Value::Object(mut tagged) = serde_json::to_value(self).expect("a job kind serialises") else { panic!("an AreaJob must be an enum tagged `kind` with content `payload`") };
        let kind = match tagged.shift_remove("kind") {
            Some(Value::String(k)) => k,
            _ => panic!("an AreaJob must be an enum tagged `kind` with content `payload`"),
        };
        let payload = tagged.shift_remove("payload").unwrap_or(Value::Null);
        (kind, payload.to_string())
    }

    /// The kind name (the `jobs.kind` column).
    fn kind(&self) -> String {
        self.to_row().0
    }

    /// The job a step runs, typed; a payload that does not parse makes the
    /// job dead (running it again cannot help).
    fn from_job(job: &Job) -> Result<Self, Outcome> {
        let invalid = |e: serde_json::Error| Outcome::Dead(format!("invalid payload: {e}"));
        let payload: Value = serde_json::from_str(&job.payload_json).map_err(invalid)?;
        serde_json::from_value(json!({"kind": job.kind, "payload": payload})).map_err(invalid)
    }

    /// `continue`: run this job again after `delay_ms` with this payload
    /// (its kind must be the running job's).
    fn continue_after(&self, delay_ms: u64) -> Outcome {
        Outcome::Continue(Continuation { delay_ms, payload_json: self.to_row().1 })
    }
}

/// Enqueues `job` in the caller's transaction with the options it declares;
/// returns the job id.
pub fn enqueue<J: AreaJob>(business_id: &str, job: &J) -> Result<String, Failure> {
    let (kind, payload) = job.to_row();
    jobs::enqueue(&kind, business_id, &payload, &job.options()).map_err(db::store_failure)
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
    use serde::Deserialize;

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

    impl AreaJob for TestJob {}

    fn job(kind: &str, payload: &str) -> Job {
        Job { id: "j".into(), kind: kind.into(), business_id: "b".into(), payload_json: payload.into(), attempt: 1, fence: 1 }
    }

    #[test]
    fn kind_and_payload_are_the_stored_row() {
        let (kind, payload) = TestJob::One(Ref { message_id: "m1".into() }).to_row();
        assert_eq!(kind, "test.one");
        assert_eq!(payload, r#"{"messageId":"m1"}"#);
        assert_eq!(TestJob::Two { n: 3 }.to_row(), ("test.two".to_string(), r#"{"n":3}"#.to_string()));
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
