//! The data-sources area's kinds (`components/data-sources/src/jobs/`).
//! `data-sources.embed` is also enqueued by the host at `serve` start for
//! every source not embedded with the current model (the backfill,
//! `crates/runtime/src/knowledge.rs`).

use serde::{Deserialize, Serialize};

use crate::{JobKind, JobOptions};

/// Every job kind of the data-sources area: the serde name is the kind, the
/// content the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum DataSourcesJob {
    /// An upload (or a resolve that changed column types) turned into rows,
    /// in bounded steps; the payload is the cursor.
    #[serde(rename = "data-sources.ingest")]
    Ingest(Ingest),
    /// The passages of an unstructured source's content given vectors, in
    /// bounded steps; the payload is the cursor.
    #[serde(rename = "data-sources.embed")]
    Embed(Embed),
}

impl JobKind for DataSourcesJob {
    fn options(&self) -> JobOptions {
        match self {
            DataSourcesJob::Ingest(_) => JobOptions::default(),
            // The embeddings endpoint is called out to; a source's jobs run one at a time.
            DataSourcesJob::Embed(p) => JobOptions { calls_out: true, lane: Some(embed_lane(&p.source_id)), delay_ms: 0 },
        }
    }
}

/// The lane of one source's embed jobs (the backfill skips a source with a
/// job waiting in it).
pub fn embed_lane(source_id: &str) -> String {
    format!("embed:{source_id}")
}

/// The cursor of the ingestion of one version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ingest {
    pub version_id: String,
    #[serde(default)]
    pub phase: Option<String>,
    /// Which chunk stream is parsed: 0 = the upload, 1 = CSV converted from a spreadsheet.
    #[serde(default)]
    pub stream: i64,
    #[serde(default)]
    pub fmt: Option<String>,
    #[serde(default)]
    pub size: u64,
    /// Next byte to read (parse) of the stream.
    #[serde(default)]
    pub offset: u64,
    /// Rows numbered so far (parse) / last row interpreted (interpret).
    #[serde(default)]
    pub row: i64,
    /// Parse: the header (CSV) or the opening `[` (JSON) has been read.
    #[serde(default)]
    pub started: bool,
    /// JSON: elements that were not objects.
    #[serde(default)]
    pub bad_elements: i64,
    #[serde(default)]
    pub resolved: bool,
    #[serde(default = "yes")]
    pub activate: bool,
    /// Spreadsheets: columns (0-based) whose numbers are date/time serials,
    /// found by the conversion and put on the columns with the header.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sheet_dates: Vec<(usize, SheetDate)>,
    /// Parse: the type of each column (by position) the rows are
    /// interpreted with as they are stored, taken from the first rows
    /// (empty until then). When the types decided after the parse are the
    /// same, the interpret pass is skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub typed_as: Vec<String>,
    /// Parse: a cell did not fit `typed_as`, so the interpret pass runs
    /// over every row as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub untyped: bool,
}

fn yes() -> bool {
    true
}

impl Ingest {
    /// A new ingestion of `version_id` (after an upload): from the start.
    pub fn start(version_id: &str) -> Ingest {
        Ingest {
            version_id: version_id.to_string(),
            phase: None,
            stream: 0,
            fmt: None,
            size: 0,
            offset: 0,
            row: 0,
            started: false,
            bad_elements: 0,
            resolved: false,
            activate: true,
            sheet_dates: Vec::new(),
            typed_as: Vec::new(),
            untyped: false,
        }
    }

    /// The interpretation again after a resolve changed column types; then
    /// the version is activated when `activate`, else left `ready`.
    pub fn reinterpret(version_id: &str, activate: bool) -> Ingest {
        Ingest { phase: Some("interpret".into()), resolved: true, activate, ..Ingest::start(version_id) }
    }
}

/// A spreadsheet column's date format as the cursor carries it from the
/// conversion step to the header (the parser's own type, in its stored shape).
pub use switchboard_formats::sheet_date::{SheetDate, SheetDateKind};

/// The cursor of one unstructured source's embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Embed {
    pub source_id: String,
    /// The FTS rowid of the last passage embedded (the cursor).
    #[serde(default)]
    pub after: i64,
}

impl Embed {
    /// A source's embedding from its first passage.
    pub fn start(source_id: &str) -> Embed {
        Embed { source_id: source_id.to_string(), after: 0 }
    }
}
