//! The job kinds of the voice area, declared once ([`VoiceJob`]), and
//! [`run`], through which the dispatcher runs them.

pub mod call;

use serde::{Deserialize, Serialize};
use switchboard_guest::job::AreaJob;
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::jobs::JobOptions;

/// Every job kind of this area: the serde name is the kind, the content the payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum VoiceJob {
    /// One call from its start to its end: a line, the carrier, the
    /// conversation, the charge (calls the `carrier` and `ai` imports).
    #[serde(rename = "voice.call")]
    Call(CallRef),
}

impl AreaJob for VoiceJob {
    fn options(&self) -> JobOptions {
        JobOptions { calls_out: true, lane: None, delay_ms: 0 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRef {
    pub call_id: String,
}

/// One step of a `voice.*` job.
pub fn run(job: &Job) -> Outcome {
    match VoiceJob::from_job(job) {
        Ok(VoiceJob::Call(c)) => call::run(job, &c.call_id),
        Err(dead) => dead,
    }
}
