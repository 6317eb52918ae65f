//! The dispatcher: background work of every resource area, one job per call.
//!
//! The host's runner claims a due job under a lease with a fencing token and
//! calls `run` inside a write transaction; the job's writes commit together
//! with its new state only while the fence holds. Long work returns
//! `continue` with a cursor in its payload so each step is bounded and
//! separately committed (a restart resumes from the last committed step).

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    // The imports are the guest crate's, so every helper there (db, req,
    // fail, ...) works here too; only the job-handler export is generated.
    wit_bindgen::generate!({
        world: "dispatcher",
        path: "../../wit",
        with: {
            "switchboard:platform/types@0.1.0": switchboard_guest::bindings::switchboard::platform::types,
            "switchboard:platform/store@0.1.0": switchboard_guest::bindings::switchboard::platform::store,
            "switchboard:platform/jobs@0.1.0": switchboard_guest::bindings::switchboard::platform::jobs,
            "switchboard:platform/clock@0.1.0": switchboard_guest::bindings::switchboard::platform::clock,
            "switchboard:platform/ids@0.1.0": switchboard_guest::bindings::switchboard::platform::ids,
            "switchboard:platform/log@0.1.0": switchboard_guest::bindings::switchboard::platform::log,
            "switchboard:platform/http-out@0.1.0": switchboard_guest::bindings::switchboard::platform::http_out,
            "switchboard:platform/ai@0.1.0": switchboard_guest::bindings::switchboard::platform::ai,
            "switchboard:platform/messenger@0.1.0": switchboard_guest::bindings::switchboard::platform::messenger,
            "switchboard:platform/job-types@0.1.0": switchboard_guest::bindings::switchboard::platform::job_types,
        },
    });
}

#[path = "../../data-sources/src/activate.rs"]
mod activate;
mod autoreply;
#[path = "../../messaging/src/contact.rs"]
mod contact;
mod inbound;
mod ingest;
mod ingest_parse;
mod message_delivery;
mod photoapp_inbound;
mod webhook_delivery;

use bindings::exports::switchboard::platform::job_handler::Guest;
use switchboard_guest::job_types::{Job, Outcome, RetryAfter};

struct Dispatcher;

impl Guest for Dispatcher {
    fn run(job: Job) -> Outcome {
        match job.kind.as_str() {
            // Kinds are added here by the resource areas that enqueue them.
            ingest::KIND => ingest::run(&job),
            "messaging.inbound" => inbound::run(&job),
            autoreply::KIND => autoreply::run(&job),
            webhook_delivery::KIND => webhook_delivery::run(&job),
            message_delivery::KIND => message_delivery::run(&job),
            photoapp_inbound::KIND => photoapp_inbound::run(&job),
            other => Outcome::Dead(format!("unknown job kind `{other}`")),
        }
    }
}

/// The job's payload as `T`; one that does not parse makes the job dead
/// (running it again cannot help).
pub fn payload<T: serde::de::DeserializeOwned>(job: &Job) -> Result<T, Outcome> {
    serde_json::from_str(&job.payload_json).map_err(|e| Outcome::Dead(format!("invalid payload: {e}")))
}

/// Exponential backoff for transient failures: 1 s, 2 s, 4 s … capped at 1 h.
pub fn backoff_ms(attempt: u32) -> u64 {
    let exp = attempt.saturating_sub(1).min(12);
    (1000u64 << exp).min(3_600_000)
}

#[allow(dead_code)]
fn retry(attempt: u32, reason: impl Into<String>) -> Outcome {
    Outcome::Retry(RetryAfter { delay_ms: backoff_ms(attempt), reason: reason.into() })
}

#[cfg(target_arch = "wasm32")]
bindings::export!(Dispatcher with_types_in bindings);

#[cfg(test)]
mod tests {
    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(super::backoff_ms(1), 1000);
        assert_eq!(super::backoff_ms(2), 2000);
        assert_eq!(super::backoff_ms(30), 3_600_000);
    }
}
