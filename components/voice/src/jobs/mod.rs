//! [`run`], through which the dispatcher runs the voice area's jobs. Their
//! kinds ([`VoiceJob`]), payloads and options are declared in
//! `switchboard-job-kinds` (`components/job-kinds/src/voice.rs`).

pub mod call;

use switchboard_guest::job::AreaJob;
pub use switchboard_guest::job_kinds::voice::{CallRef, VoiceJob};
use switchboard_guest::job_types::{Job, Outcome};

/// One step of a `voice.*` job.
pub fn run(job: &Job) -> Outcome {
    match VoiceJob::from_job(job) {
        Ok(VoiceJob::Call(c)) => call::run(job, &c.call_id),
        Err(dead) => dead,
    }
}
