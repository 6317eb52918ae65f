//! The job kinds of the data-sources area, declared once ([`DataSourcesJob`]),
//! and [`run`], through which the dispatcher runs them.

pub mod ingest;
mod ingest_parse;

use serde::{Deserialize, Serialize};
use switchboard_guest::job::AreaJob;
use switchboard_guest::job_types::{Job, Outcome};

/// Every job kind of this area: the serde name is the kind, the content the payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum DataSourcesJob {
    /// An upload (or a resolve that changed column types) turned into rows,
    /// in bounded steps; the payload is the cursor.
    #[serde(rename = "data-sources.ingest")]
    Ingest(ingest::Payload),
}

/// No kind of this area calls out or needs a lane: the defaults.
impl AreaJob for DataSourcesJob {}

/// One step of a `data-sources.*` job.
pub fn run(job: &Job) -> Outcome {
    match DataSourcesJob::from_job(job) {
        Ok(DataSourcesJob::Ingest(p)) => ingest::run(job, p),
        Err(dead) => dead,
    }
}
