//! [`run`], through which the dispatcher runs the data-sources area's jobs.
//! Their kinds ([`DataSourcesJob`]), payloads (the cursors) and options are
//! declared in `switchboard-job-kinds` (`components/job-kinds/src/data_sources.rs`):
//! the host enqueues `data-sources.embed` too (the backfill at `serve` start).

pub mod embed;
pub mod ingest;
mod ingest_batch;
mod ingest_parse;

use switchboard_guest::job::AreaJob;
pub use switchboard_guest::job_kinds::data_sources::DataSourcesJob;
use switchboard_guest::job_types::{Job, Outcome};

/// One step of a `data-sources.*` job.
pub fn run(job: &Job) -> Outcome {
    match DataSourcesJob::from_job(job) {
        Ok(DataSourcesJob::Ingest(p)) => ingest::run(job, p),
        Ok(DataSourcesJob::Embed(p)) => embed::run(job, p),
        Err(dead) => dead,
    }
}
