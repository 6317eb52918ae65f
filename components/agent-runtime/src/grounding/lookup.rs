//! The `lookup` tool of a grounded turn: the agent's structured sources
//! offered to the model (those whose active version has a lookup field),
//! and one call run here against the active version, its rows returned as
//! the model reads them.

use super::*;

/// Rows one lookup returns at most.
pub const LOOKUP_ROWS: usize = 5;
/// Lookups one turn may make before it must answer.
pub const MAX_LOOKUPS: usize = 3;
/// How a lookup that found nothing is worded to the model.
pub const NO_ROWS: &str = "No rows match.";

/// A structured source an agent may look rows up in, with the columns of
/// its active version.
pub(super) struct Offered<'a> {
    pub(super) source: &'a AgentSource,
    pub(super) columns: Vec<OfferedColumn>,
}

pub(super) struct OfferedColumn {
    pub(super) key: String,
    pub(super) header: String,
    /// A lookup field: its cells are in `lookup_values`.
    pub(super) lookup: bool,
}

impl Offered<'_> {
    /// The field keys the model may look up by.
    pub(super) fn lookup_fields(&self) -> Vec<String> {
        self.columns.iter().filter(|c| c.lookup).map(|c| c.key.clone()).collect()
    }
}

/// The structured ones of the agent's `sources` whose active version has a
/// lookup field.
pub(super) fn offered<'a>(biz: &str, sources: &'a [AgentSource]) -> Result<Vec<Offered<'a>>, Failure> {
    let mut out = Vec::new();
    for source in sources.iter().filter(|s| s.structured && !s.version_id.is_empty()) {
        let columns: Vec<OfferedColumn> = db::query_as::<(String, String, bool)>(
            "SELECT field_key, name, lookup FROM ingestion_columns WHERE business_id = ?1 AND version_id = ?2 ORDER BY position",
            &params![biz, &source.version_id],
        )?
        .into_iter()
        .map(|(key, name, lookup)| OfferedColumn { header: header(&name, &key).to_string(), key, lookup })
        .collect();
        if columns.iter().any(|c| c.lookup) {
            out.push(Offered { source, columns });
        }
    }
    Ok(out)
}

/// A lookup's rows as text, and which rows (source, version, row).
pub(super) type LookedUp = (String, Vec<(String, String, i64)>);

/// Runs one lookup against the active version: its rows as text (one
/// `Header: value; …` line each, at most [`LOOKUP_ROWS`]) and which rows.
pub(super) fn run_lookup(biz: &str, offered: &[Offered], call: &ai::Lookup) -> Result<LookedUp, Failure> {
    let Some(offer) = offered.iter().find(|o| o.source.name.eq_ignore_ascii_case(call.source.trim())) else {
        return Ok((format!("{NO_ROWS} There is no source named {:?}.", call.source), Vec::new()));
    };
    let wanted = call.field.trim();
    let source = offer.source;
    let Some(key) = offer.columns.iter().filter(|c| c.lookup).find(|c| c.key.eq_ignore_ascii_case(wanted) || c.header.trim().eq_ignore_ascii_case(wanted)).map(|c| &c.key) else {
        return Ok((format!("{NO_ROWS} {} cannot be looked up by {:?}; its lookup fields: {}.", source.name, call.field, offer.lookup_fields().join(", ")), Vec::new()));
    };
    let Some(value) = lookup_value(&call.value) else { return Ok((NO_ROWS.to_string(), Vec::new())) };
    let rows: Vec<(i64, String)> = db::query_as(
        &format!(
            "SELECT r.row_number, r.original FROM lookup_values l \
             JOIN ingestion_rows r ON r.version_id = l.version_id AND r.row_number = l.row_number \
             WHERE l.version_id = ?2 AND l.field_key = ?3 AND l.value = ?4 AND l.business_id = ?1 AND r.business_id = ?1 \
             ORDER BY l.row_number LIMIT {LOOKUP_ROWS}"
        ),
        &params![biz, &source.version_id, key, value],
    )?;
    if rows.is_empty() {
        return Ok((NO_ROWS.to_string(), Vec::new()));
    }
    let headers: Vec<&str> = offer.columns.iter().map(|c| c.header.as_str()).collect();
    let mut lines = Vec::new();
    let mut used = Vec::new();
    for (row_number, original) in &rows {
        let cells: Vec<Option<String>> = serde_json::from_str(original).unwrap_or_default();
        lines.push(row_passage(&headers, &cells));
        used.push((source.id.clone(), source.version_id.clone(), *row_number));
    }
    Ok((lines.join("\n"), used))
}
