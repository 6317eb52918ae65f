//! The two places that queue the area's jobs, inside the caller's
//! transaction: a running iteration's dispatch (`campaigns.rs`) and a
//! confirmed summary run (`summaries.rs`). It needs nothing of the jobs
//! themselves, so the requests that queue them do not depend on the steps
//! that run them.

use switchboard_guest::job;
use switchboard_guest::job_kinds::campaigns::{CampaignsJob, IterationRef, RunRef};
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
