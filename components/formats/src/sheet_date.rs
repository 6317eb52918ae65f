//! What a spreadsheet says about a column's numbers, in the shape it is
//! stored: the tabular crate finds it in a workbook's number formats, the
//! ingestion cursor (a `data-sources.ingest` job's payload, declared in the
//! job-kinds crate) carries it from the conversion step to the header, and
//! `infer::interpret_cell` turns serials into ISO-8601 with it. One type for
//! all three, so a stored cursor reads back as what the parser wrote.

use serde::{Deserialize, Serialize};

/// What a spreadsheet's number formats say about a column's numbers.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum SheetDateKind {
    /// A date format (`m/d/yyyy`, `d-mmm-yy`, `yyyy-mm-dd` …).
    #[default]
    Date,
    /// Date and time (`m/d/yyyy h:mm`).
    DateTime,
    /// Time of day or elapsed time only (`h:mm:ss`, `[h]:mm:ss`).
    Time,
}

/// A spreadsheet column whose numeric cells are date or time serials.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SheetDate {
    pub kind: SheetDateKind,
    /// The workbook counts from 1904-01-01 (`date1904`), not 1899-12-30.
    #[serde(default)]
    pub base1904: bool,
}
