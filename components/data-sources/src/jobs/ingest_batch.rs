//! What one parse step of `data-sources.ingest` gathers and writes: the
//! columns (a header that matches a declared field takes its key, type and
//! lookup flag), the rows with their interpretation, the grounding
//! passages and lookup keys, and the issues; saved together at the step's
//! end.

use switchboard_guest::db::{self, StoreValue};
use switchboard_guest::{knowledge, params, Failure, Value};
use switchboard_tabular::infer;

use super::ingest::{add_issues, column_type, interpret_row, load_columns, Column, Payload, Step, Stop, Version, MAX_COLUMNS};

pub(super) struct Batch<'a> {
    pub(super) v: &'a Version,
    pub(super) cols: Vec<Column>,
    /// Declared fields: a column whose header matches a declared key or
    /// label (ignoring case) takes its key, type and lookup flag.
    pub(super) declared: Vec<Declared>,
    pub(super) new_cols: usize,
    /// (row number, `original`, `interpreted`).
    pub(super) rows: Vec<(i64, String, Option<String>)>,
    /// The rows as grounding passages (row number, text) and their cells
    /// as lookup keys (column, key, row number; `knowledge.rs`), written
    /// with them: versions are immutable.
    pub(super) scope: String,
    pub(super) passages: Vec<(i64, String)>,
    pub(super) lookups: Vec<(usize, String, i64)>,
    /// Each column's header as passages show it.
    pub(super) headers: Vec<String>,
    pub(super) issues: Vec<(Option<i64>, Option<String>, String)>,
    /// The types rows are interpreted with as they are stored (the
    /// cursor's `typed_as`; empty until the first rows suggest them).
    pub(super) typed_as: Vec<String>,
    /// A cell did not fit `typed_as` (or a column came after it): the
    /// interpret pass will type every row.
    pub(super) untyped: bool,
    /// Before `typed_as` is known: the rows' cells (by index in `rows`),
    /// interpreted once this batch's kinds suggest the types.
    pub(super) pending: Vec<(usize, Vec<Option<String>>)>,
}

impl Batch<'_> {
    /// A row: its cells as read (one per column known so far) and their
    /// JSON (`original`).
    pub(super) fn push_row<C: AsRef<str>>(&mut self, number: i64, original: String, cells: &[Option<C>]) {
        let interpreted = if self.untyped {
            None
        } else if self.typed_as.is_empty() {
            self.pending.push((self.rows.len(), cells.iter().map(|c| c.as_ref().map(|c| c.as_ref().to_string())).collect()));
            None
        } else if self.typed_as.len() != self.cols.len() {
            self.untyped = true;
            None
        } else {
            let types: Vec<&str> = self.typed_as.iter().map(String::as_str).collect();
            let mut misfit = false;
            let text = interpret_row(&self.cols, &types, |i| cells.get(i).and_then(|c| c.as_ref()).map(|c| c.as_ref()), |_, _, _| misfit = true);
            self.untyped |= misfit;
            (!misfit).then_some(text)
        };
        self.rows.push((number, original, interpreted));
        // A passage agents can find once the version is active (`Header: value; …`).
        if self.headers.len() != self.cols.len() {
            self.headers = self.cols.iter().map(|c| knowledge::header(&c.name, &c.key).to_string()).collect();
        }
        let text = knowledge::row_passage(&self.headers, cells);
        if !text.is_empty() {
            self.passages.push((number, text));
        }
        // The cells of lookup columns are keys of the exact `lookup`, by
        // the column's field key (unique per version, so a row never
        // repeats a (key, value)).
        for (i, (c, cell)) in self.cols.iter().zip(cells).enumerate() {
            if c.lookup {
                if let Some(value) = cell.as_ref().and_then(|cell| knowledge::lookup_value(cell.as_ref())) {
                    self.lookups.push((i, value, number));
                }
            }
        }
    }

    pub(super) fn add_column(&mut self, name: &str) -> Step<usize> {
        if self.cols.len() >= MAX_COLUMNS {
            return Err(Stop::Fail(format!("the file has more than {MAX_COLUMNS} columns")));
        }
        let position = self.cols.len();
        let trimmed = name.trim();
        let derived = infer::field_key(name, position);
        let taken = |cols: &[Column], k: &str| cols.iter().any(|c| c.key.eq_ignore_ascii_case(k));
        let hit =
            self.declared.iter().find(|d| !taken(&self.cols, &d.key) && (trimmed.eq_ignore_ascii_case(&d.key) || trimmed.eq_ignore_ascii_case(d.label.trim()) || derived.eq_ignore_ascii_case(&d.key)));
        let column = match hit {
            Some(d) => Column { position: position as i64, name: name.to_string(), key: d.key.clone(), stats: Default::default(), ty: Some(d.ty.clone()), declared: true, lookup: d.lookup },
            None => {
                let mut key = derived.clone();
                let mut n = 2;
                while taken(&self.cols, &key) || self.declared.iter().any(|d| d.key.eq_ignore_ascii_case(&key)) {
                    let suffix = format!("_{n}");
                    key = format!("{}{suffix}", &derived[..derived.len().min(64 - suffix.len())]);
                    n += 1;
                }
                // Without declared fields the first column is the lookup key.
                let lookup = self.declared.is_empty() && position == 0;
                Column { position: position as i64, name: name.to_string(), key, stats: Default::default(), ty: None, declared: false, lookup }
            }
        };
        self.cols.push(column);
        self.new_cols += 1;
        Ok(position)
    }

    /// The first rows stored: their kinds suggest the types every row is
    /// interpreted with from now on (checked against the decided types
    /// after the parse).
    fn type_pending(&mut self) {
        if self.rows.is_empty() || !self.typed_as.is_empty() || self.untyped {
            return;
        }
        self.typed_as = self.cols.iter().map(column_type).collect();
        let types: Vec<&str> = self.typed_as.iter().map(String::as_str).collect();
        for (at, cells) in std::mem::take(&mut self.pending) {
            let mut misfit = false;
            let text = interpret_row(&self.cols, &types, |i| cells.get(i).and_then(|c| c.as_deref()), |_, _, _| misfit = true);
            if misfit {
                self.untyped = true;
                break;
            }
            self.rows[at].2 = Some(text);
        }
    }

    /// Persists rows, issues, new columns and column stats, and the
    /// interpretation's state in the cursor.
    pub(super) fn save(mut self, p: &mut Payload) -> Result<(), Failure> {
        self.type_pending();
        if self.untyped {
            // The interpret pass types them all; none keeps a value of types it may not have.
            for row in &mut self.rows {
                row.2 = None;
            }
        }
        p.typed_as = std::mem::take(&mut self.typed_as);
        p.untyped = self.untyped;
        let v = self.v;
        // Each table's rows go in as multi-row INSERTs whose values are
        // bound as parameters (a few dozen statements per step), rather
        // than a statement per row or a JSON array that SQLite's
        // `json_each` would parse again.
        let (biz, id) = (StoreValue::Text(v.biz.clone()), StoreValue::Text(v.id.clone()));
        let mut cells = Vec::with_capacity(self.rows.len() * 3);
        for (number, original, interpreted) in std::mem::take(&mut self.rows) {
            cells.extend([StoreValue::Integer(number), StoreValue::Text(original), interpreted.map_or(StoreValue::Null, StoreValue::Text)]);
        }
        let stored = cells.len() / 3;
        db::insert_values("ingestion_rows (business_id, version_id, row_number, original, interpreted)", &[biz.clone(), id.clone()], 3, ROWS_PER_STATEMENT, cells)?;
        let mut cells = Vec::with_capacity(self.passages.len() * 2);
        for (number, text) in std::mem::take(&mut self.passages) {
            cells.extend([StoreValue::Integer(number), StoreValue::Text(text)]);
        }
        let fixed = [StoreValue::Text(std::mem::take(&mut self.scope)), biz.clone(), StoreValue::Text(v.source_id.clone()), id.clone()];
        db::insert_values("knowledge_fts (scope, business_id, data_source_id, version_id, item, text)", &fixed, 2, knowledge::PASSAGES_PER_STATEMENT, cells)?;
        // In key order: neighbouring inserts then land on the same pages
        // of the index.
        let cols = &self.cols;
        let mut lookups: Vec<(&str, String, i64)> = std::mem::take(&mut self.lookups).into_iter().map(|(c, value, n)| (cols[c].key.as_str(), value, n)).collect();
        lookups.sort_unstable();
        let mut cells = Vec::with_capacity(lookups.len() * 3);
        for (key, value, number) in lookups {
            cells.extend([StoreValue::Text(key.to_string()), StoreValue::Text(value), StoreValue::Integer(number)]);
        }
        db::insert_values("lookup_values (business_id, version_id, field_key, value, row_number)", &[biz, id], 3, ROWS_PER_STATEMENT, cells)?;
        add_issues(v, "parse", &self.issues)?;
        let first_new = self.cols.len() - self.new_cols;
        let inserts: Vec<Vec<Value>> = self.cols[first_new..].iter().map(|c| params![&v.biz, &v.id, c.position, &c.name, &c.key, c.ty.as_deref(), c.declared, c.lookup]).collect();
        db::execute_many("INSERT INTO ingestion_columns (business_id, version_id, position, name, field_key, type, declared, lookup) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &inserts)?;
        let stats: Vec<Vec<Value>> = self.cols.iter().map(|c| params![&v.biz, &v.id, c.position, serde_json::to_string(&c.stats).unwrap()]).collect();
        db::execute_many("UPDATE ingestion_columns SET stats = ?4 WHERE business_id = ?1 AND version_id = ?2 AND position = ?3", &stats)?;
        db::execute("UPDATE ingestion_versions SET row_count = row_count + ?3, updated_at = ?4 WHERE business_id = ?1 AND id = ?2", &params![&v.biz, &v.id, stored as i64, switchboard_guest::now()])?;
        Ok(())
    }
}

/// Rows per statement of `db::insert_values` (the rows, the lookup keys);
/// fewer left over go in statements of a power of two rows each, so a
/// table's inserts take at most nine statement shapes, each prepared once
/// by the writer connection's statement cache.
const ROWS_PER_STATEMENT: usize = 256;

/// A declared field of the source.
pub(super) struct Declared {
    pub(super) key: String,
    pub(super) label: String,
    pub(super) ty: String,
    pub(super) lookup: bool,
}

/// The source's declared fields, if it declared any.
fn declared_fields(v: &Version) -> Result<Vec<Declared>, Failure> {
    let declared = db::query_one_as::<bool>("SELECT fields_declared FROM data_sources WHERE business_id = ?1 AND id = ?2", &params![&v.biz, &v.source_id])?.unwrap_or(false);
    if !declared {
        return Ok(Vec::new());
    }
    Ok(db::query_as::<(String, String, String, bool)>(
        "SELECT field_key, label, type, lookup FROM data_source_fields WHERE business_id = ?1 AND data_source_id = ?2 ORDER BY position",
        &params![&v.biz, &v.source_id],
    )?
    .into_iter()
    .map(|(key, label, ty, lookup)| Declared { key, label, ty, lookup })
    .collect())
}

pub(super) fn batch<'a>(v: &'a Version, p: &Payload) -> Result<Batch<'a>, Failure> {
    Ok(Batch {
        v,
        cols: load_columns(v)?,
        declared: declared_fields(v)?,
        new_cols: 0,
        rows: Vec::new(),
        scope: knowledge::scope_token(&v.source_id, &v.id),
        passages: Vec::new(),
        lookups: Vec::new(),
        headers: Vec::new(),
        issues: Vec::new(),
        typed_as: p.typed_as.clone(),
        untyped: p.untyped,
        pending: Vec::new(),
    })
}
