//! The campaigns area's kinds (`components/campaigns/src/jobs/`).

use serde::{Deserialize, Serialize};

use crate::{JobKind, JobOptions};

/// Every job kind of the campaigns area: the serde name is the kind, the
/// content the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum CampaignsJob {
    /// Runs one iteration: claims members while lines are free, starts
    /// their calls, settles ended calls, retries, completes.
    #[serde(rename = "campaigns.dispatch")]
    Dispatch(IterationRef),
    /// Assesses the contacts of one confirmed summary run, a batch a step.
    #[serde(rename = "campaigns.summarize")]
    Summarize(RunRef),
}

impl JobKind for CampaignsJob {
    /// One step at a time per iteration or run: its lane. A summary step
    /// calls the AI provider, so it takes the write lock only to write.
    fn options(&self) -> JobOptions {
        match self {
            CampaignsJob::Dispatch(r) => JobOptions { calls_out: false, lane: Some(dispatch_lane(&r.iteration_id)), delay_ms: 0 },
            CampaignsJob::Summarize(r) => JobOptions { calls_out: true, lane: Some(format!("summary:{}", r.run_id)), delay_ms: 0 },
        }
    }
}

/// The lane of an iteration's dispatch job: a campaign call's end wakes
/// it, so a freed line is refilled at once rather than at the next poll.
pub fn dispatch_lane(iteration_id: &str) -> String {
    format!("campaign:{iteration_id}")
}

/// The payload of a summary run's job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRef {
    pub run_id: String,
}

/// The payload of an iteration's dispatch job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IterationRef {
    pub iteration_id: String,
    /// Steps in a row that settled and claimed nothing (the poll backs off).
    #[serde(default)]
    pub quiet: u32,
    /// With a calling window: the member after which the next step's sweep
    /// for members inside their window resumes (absent: from the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_cursor: Option<String>,
}
