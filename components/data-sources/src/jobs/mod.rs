//! The job kinds of the data-sources area, declared once ([`DataSourcesJob`]),
//! and [`run`], through which the dispatcher runs them.

pub mod embed;
pub mod ingest;
mod ingest_parse;

use serde::{Deserialize, Serialize};
use switchboard_guest::job::AreaJob;
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::jobs::JobOptions;

/// Every job kind of this area: the serde name is the kind, the content the payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum DataSourcesJob {
    /// An upload (or a resolve that changed column types) turned into rows,
    /// in bounded steps; the payload is the cursor.
    #[serde(rename = "data-sources.ingest")]
    Ingest(ingest::Payload),
    /// The passages of an unstructured source's content given vectors, in
    /// bounded steps; the payload is the cursor.
    #[serde(rename = "data-sources.embed")]
    Embed(embed::Payload),
}

impl AreaJob for DataSourcesJob {
    fn options(&self) -> JobOptions {
        match self {
            DataSourcesJob::Ingest(_) => JobOptions { calls_out: false, lane: None, delay_ms: 0 },
            // The embeddings endpoint is called out to; a source's jobs run one at a time.
            DataSourcesJob::Embed(p) => JobOptions { calls_out: true, lane: Some(format!("embed:{}", p.source_id)), delay_ms: 0 },
        }
    }
}

/// One step of a `data-sources.*` job.
pub fn run(job: &Job) -> Outcome {
    match DataSourcesJob::from_job(job) {
        Ok(DataSourcesJob::Ingest(p)) => ingest::run(job, p),
        Ok(DataSourcesJob::Embed(p)) => embed::run(job, p),
        Err(dead) => dead,
    }
}
