//! [`run`], through which the dispatcher runs the campaigns area's jobs
//! (`queue.rs` queues them). Their kinds ([`CampaignsJob`]), payloads
//! and options are declared in `switchboard-job-kinds`
//! (`components/job-kinds/src/campaigns.rs`).

pub mod dispatch;
pub mod queue;
pub mod summarize;

use switchboard_guest::job::AreaJob;
pub use switchboard_guest::job_kinds::campaigns::{CampaignsJob, IterationRef, RunRef};
use switchboard_guest::job_types::{Job, Outcome};

/// One step of a `campaigns.*` job.
pub fn run(job: &Job) -> Outcome {
    match CampaignsJob::from_job(job) {
        Ok(CampaignsJob::Dispatch(r)) => dispatch::run(job, &r),
        Ok(CampaignsJob::Summarize(r)) => summarize::run(job, &r),
        Err(dead) => dead,
    }
}
