//! The job kinds of the campaigns area, declared once ([`CampaignsJob`]),
//! and [`run`], through which the dispatcher runs them.

pub mod dispatch;
pub mod summarize;

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
    /// Assesses the contacts of one confirmed summary run, a batch a step.
    #[serde(rename = "campaigns.summarize")]
    Summarize(RunRef),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRef {
    pub run_id: String,
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
    /// One step at a time per iteration or run: its lane. A summary step
    /// calls the AI provider, so it takes the write lock only to write.
    fn options(&self) -> JobOptions {
        match self {
            CampaignsJob::Dispatch(r) => JobOptions { calls_out: false, lane: Some(format!("campaign:{}", r.iteration_id)), delay_ms: 0 },
            CampaignsJob::Summarize(r) => JobOptions { calls_out: true, lane: Some(format!("summary:{}", r.run_id)), delay_ms: 0 },
        }
    }
}

/// Queues the iteration's dispatch job (inside the caller's transaction).
pub fn enqueue_dispatch(biz: &str, iteration_id: &str) -> Result<(), Failure> {
    job::enqueue(biz, &CampaignsJob::Dispatch(IterationRef { iteration_id: iteration_id.to_string(), quiet: 0 }))?;
    Ok(())
}

/// Queues a confirmed summary run's job (inside the caller's transaction).
pub fn enqueue_summarize(biz: &str, run_id: &str) -> Result<(), Failure> {
    job::enqueue(biz, &CampaignsJob::Summarize(RunRef { run_id: run_id.to_string() }))?;
    Ok(())
}

/// One step of a `campaigns.*` job.
pub fn run(job: &Job) -> Outcome {
    match CampaignsJob::from_job(job) {
        Ok(CampaignsJob::Dispatch(r)) => dispatch::run(job, &r),
        Ok(CampaignsJob::Summarize(r)) => summarize::run(job, &r),
        Err(dead) => dead,
    }
}
