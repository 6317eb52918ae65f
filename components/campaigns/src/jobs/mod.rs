//! [`run`], through which the dispatcher runs the campaigns area's jobs, and
//! the two places that queue them. Their kinds ([`CampaignsJob`]), payloads
//! and options are declared in `switchboard-job-kinds`
//! (`components/job-kinds/src/campaigns.rs`).

pub mod dispatch;
pub mod summarize;

use switchboard_guest::job::{self, AreaJob};
pub use switchboard_guest::job_kinds::campaigns::{CampaignsJob, IterationRef, RunRef};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::Failure;

/// Queues the iteration's dispatch job (inside the caller's transaction).
pub fn enqueue_dispatch(biz: &str, iteration_id: &str) -> Result<(), Failure> {
    job::enqueue(biz, &CampaignsJob::Dispatch(IterationRef { iteration_id: iteration_id.to_string(), quiet: 0, window_cursor: None }))?;
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
