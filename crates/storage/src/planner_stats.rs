//! Query-planner statistics shaped like a large multi-tenant database,
//! written into `sqlite_stat1` at every open (after the migrations).
//!
//! Why: without statistics SQLite assumes an equality on an index's first
//! column narrows to about ten rows. Every tenant table's keys and indexes
//! start with `business_id`, so the planner took `business_id = ?` as
//! selective and often scanned a business's whole table by primary key
//! instead of using the index that names the row (a contact's categories,
//! an agent's variables, a campaign's calls: measured on the campaign
//! summaries, 219 assessments/s instead of 20,000). `ANALYZE` would fix it
//! only once the data is large, and would mislead when one tenant is large
//! and the rest small; the shape of the data is known from the design:
//!
//! * every table with a `business_id` column: 1,000,000 rows (1,000 for a
//!   partial index);
//! * `business_id` first: a tenant holds a tenth of them, and no skip-scan
//!   over tenants;
//! * then a column of few values (a status, a channel, a kind): a quarter of
//!   what is left; any other column (an id, a name): a thousandth;
//! * a unique index ends at one row.
//!
//! Tables without `business_id` (the job runner's, the migrations') keep
//! SQLite's defaults. The rows are rewritten only when they differ.

use crate::db::{self, params, Connection};
use anyhow::Result;

/// Columns with a handful of distinct values.
const FEW_VALUES: [&str; 15] =
    ["state", "status", "outcome", "channel", "kind", "holds_line", "direction", "built_in", "class", "lookup", "type", "speaker", "carrier_state", "review_types", "communication_blocked"];

/// `(table, index or None, stat)` rows for the current schema.
pub fn wanted(c: &Connection) -> Result<Vec<(String, Option<String>, String)>> {
    let mut out = Vec::new();
    let tables: Vec<(String, bool)> = db::query_as(
        c,
        "SELECT s.name, s.sql NOT LIKE '%WITHOUT ROWID%' FROM sqlite_schema s \
         WHERE s.type = 'table' AND s.name NOT LIKE 'sqlite_%' AND s.sql NOT LIKE 'CREATE VIRTUAL%' \
           AND EXISTS (SELECT 1 FROM pragma_table_info(s.name) p WHERE p.name = 'business_id') ORDER BY s.name",
        params![],
    )?;
    for (table, rowid) in tables {
        if rowid {
            out.push((table.clone(), None, "1000000".to_string()));
        }
        let indexes: Vec<(String, bool, bool)> = db::query_as(c, "SELECT name, \"unique\", partial FROM pragma_index_list(?1) ORDER BY name", params![&table])?;
        for (index, unique, partial) in indexes {
            // An expression's column has no name.
            let columns: Vec<Option<String>> = db::query_as(c, "SELECT name FROM pragma_index_xinfo(?1) WHERE key = 1 ORDER BY seqno", params![&index])?;
            let columns: Vec<String> = columns.into_iter().map(Option::unwrap_or_default).collect();
            out.push((table.clone(), Some(index), stat(&columns, unique, partial)));
        }
    }
    Ok(out)
}

/// The `sqlite_stat1` text of an index over `columns`.
pub fn stat(columns: &[String], unique: bool, partial: bool) -> String {
    let mut rows: i64 = if partial { 1_000 } else { 1_000_000 };
    let mut parts = vec![rows.to_string()];
    for (i, column) in columns.iter().enumerate() {
        rows = if i == 0 && column == "business_id" {
            rows / 10
        } else if FEW_VALUES.contains(&column.as_str()) {
            (rows / 4).max(1)
        } else {
            (rows / 1_000).max(1)
        };
        parts.push(rows.to_string());
    }
    if unique {
        if let Some(last) = parts.last_mut() {
            *last = "1".to_string();
        }
    }
    if columns.first().is_some_and(|c| c == "business_id") {
        parts.push("noskipscan".to_string());
    }
    parts.join(" ")
}

/// Writes the statistics when they differ from what is stored, and makes
/// this connection load them (connections opened later load them anyway).
/// The caller holds the write gate.
pub fn seed(c: &Connection) -> Result<()> {
    // Creates sqlite_stat1 if it is missing, analysing nothing.
    db::query_rows(c, "ANALYZE sqlite_schema", vec![])?;
    let wanted = wanted(c)?;
    let mut stored: Vec<(String, Option<String>, String)> = db::query_as(c, "SELECT tbl, idx, stat FROM sqlite_stat1", params![])?;
    stored.sort();
    let mut sorted = wanted.clone();
    sorted.sort();
    if stored == sorted {
        return Ok(());
    }
    db::block(c.execute_batch("BEGIN IMMEDIATE; DELETE FROM sqlite_stat1;"))?;
    let written = (|| -> Result<()> {
        for (table, index, stat) in &wanted {
            db::execute(c, "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?1, ?2, ?3)", params![table, index.as_deref(), stat])?;
        }
        Ok(())
    })();
    match written {
        Ok(()) => {
            db::block(c.execute_batch("COMMIT; ANALYZE sqlite_schema;"))?;
        }
        Err(e) => {
            let _ = db::block(c.execute_batch("ROLLBACK"));
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tenants_are_large_and_ids_are_narrow() {
        assert_eq!(stat(&cols(&["business_id", "contact_id", "id"]), false, false), "1000000 100000 100 1 noskipscan");
        assert_eq!(stat(&cols(&["business_id", "iteration_id", "outcome"]), false, false), "1000000 100000 100 25 noskipscan");
        assert_eq!(stat(&cols(&["business_id", "id"]), true, false), "1000000 100000 1 noskipscan");
        assert_eq!(stat(&cols(&["business_id", "holds_line"]), false, true), "1000 100 25 noskipscan");
        assert_eq!(stat(&cols(&["contact_id", "category_id"]), true, false), "1000000 1000 1");
    }
}
