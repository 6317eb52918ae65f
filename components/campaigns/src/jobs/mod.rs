//! The job kinds of the campaigns area, declared once ([`CampaignsJob`]),
//! and [`run`], through which the dispatcher runs them.

pub mod dispatch;

use serde::{Deserialize, Serialize};
use switchboard_guest::job::{self, AreaJob};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::jobs::JobOptions;
use switchboard_guest::Failure;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum CampaignsJob {
    /// Runs one iteration: claims members while lines are free, starts
    /// their calls, settles ended calls, retries, completes.
    #[serde(rename = "campaigns.dispatch")]
    Dispatch(IterationRef),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IterationRef {
    pub iteration_id: String,
    /// Steps in a row that settled and claimed nothing (the poll backs off).
    #[serde(default)]
    pub quiet: u32,
}

impl AreaJob for CampaignsJob {
    /// One step at a time per iteration: its lane.
    fn options(&self) -> JobOptions {
        let CampaignsJob::Dispatch(r) = self;
        JobOptions { calls_out: false, lane: Some(format!("campaign:{}", r.iteration_id)), delay_ms: 0 }
    }
}

/// Queues the iteration's dispatch job (inside the caller's transaction).
pub fn enqueue_dispatch(biz: &str, iteration_id: &str) -> Result<(), Failure> {
    job::enqueue(biz, &CampaignsJob::Dispatch(IterationRef { iteration_id: iteration_id.to_string(), quiet: 0 }))?;
    Ok(())
}

/// One step of a `campaigns.*` job.
pub fn run(job: &Job) -> Outcome {
    match CampaignsJob::from_job(job) {
        Ok(CampaignsJob::Dispatch(r)) => dispatch::run(job, &r),
        Err(dead) => dead,
    }
}
