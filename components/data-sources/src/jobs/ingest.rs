//! Job kind `data-sources.ingest`: turns an uploaded asset into an immutable
//! ingestion version, in bounded steps.
//!
//! Phases (the cursor travels in the job payload, so every step commits
//! separately together with its new payload and a restart resumes from the
//! last committed step — no row is stored twice or lost):
//!
//! 1. start (`received` → `parsing`): XLSX/XLSM are converted in this one
//!    step into CSV (stream 1 chunks; caps in `tabular::xlsx::DEFAULT_LIMITS`),
//!    noting the columns whose numbers are date/time serials (`sheet_dates`);
//! 2. `parse` (`parsing`): at most `STEP_ROWS` rows or `STEP_BYTES` bytes per
//!    step from (byte offset, row number): rows are stored with their
//!    original cells, per-column kind counts accumulate, parse issues are
//!    recorded (ragged rows, bad JSON rows, malformed quoting, missing
//!    declared fields);
//! 3. columns are typed (declared type, or inferred; ambiguous ones flagged
//!    for review) → `validating`;
//! 4. `interpret` (`validating`): `STEP_ROWS` rows per step get their
//!    interpreted values; type mismatches become issues. Skipped when the
//!    parse already stored them: from its first rows on, the parse
//!    interprets each row with the types those rows suggest (`typed_as`)
//!    and, when the decided types are the same and no cell failed them,
//!    goes straight to 5 (one pass over the rows instead of two);
//! 5. finish: nothing to review and no issues → activated atomically;
//!    otherwise `needs_review` (resolve decides). After a resolve that
//!    changed types, step 4 runs again and the version is activated (or left
//!    `ready`).
//!
//! A corrupt or unsupported file fails the version (`failed`, with a
//! reason; its rows are deleted) and never touches the active version. A
//! store error panics: the trap rolls the whole step back and the runner
//! retries it with backoff.

use serde_json::json;
use switchboard_guest::db;
use switchboard_guest::{now, params, Failure, Value};
use switchboard_sql::{Columns, FromRow, Mismatch, Row};
use switchboard_tabular::infer::{self, ColumnStats};

use super::{ingest_parse, DataSourcesJob};
use crate::activate::activate;
use switchboard_guest::job::{run_step, AreaJob};
use switchboard_guest::job_types::{Job, Outcome};

/// Rows per step (parse and interpret).
pub const STEP_ROWS: usize = 5_000;
/// Bytes consumed per parse step (a step may read one more row past it).
pub const STEP_BYTES: usize = 1 << 20;
/// Issues stored per version (all are counted).
pub const MAX_STORED_ISSUES: i64 = 1_000;
/// Columns per file.
pub const MAX_COLUMNS: usize = 500;

/// The job's payload: the cursor of the ingestion of one version, declared
/// with the kind in `switchboard-job-kinds`.
pub use switchboard_guest::job_kinds::data_sources::Ingest as Payload;

/// Why a step stopped early.
pub enum Stop {
    /// The file is corrupt or unsupported: fail the version with this reason.
    Fail(String),
    /// A store error: trap so the step rolls back.
    Store(Failure),
}

impl From<Failure> for Stop {
    fn from(f: Failure) -> Self {
        Stop::Store(f)
    }
}

pub type Step<T> = Result<T, Stop>;

/// The version being ingested.
pub struct Version {
    pub id: String,
    pub biz: String,
    pub source_id: String,
    pub format: String,
    pub size: i64,
    pub chunk_size: i64,
    pub stage: String,
}

impl FromRow for Version {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let (id, biz, source_id, format, size, chunk_size, stage) = FromRow::from_row(row)?;
        Ok(Version { id, biz, source_id, format, size, chunk_size, stage })
    }
}

/// A column as stored.
pub struct Column {
    pub position: i64,
    pub name: String,
    pub key: String,
    pub stats: ColumnStats,
    pub ty: Option<String>,
    pub declared: bool,
    /// Its cells are keys of the exact `lookup` (written to `lookup_values`).
    pub lookup: bool,
}

/// Read from `position, name, field_key, stats, type, declared, lookup`.
impl FromRow for Column {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let mut c = Columns::new(row);
        Ok(Column {
            position: c.read()?,
            name: c.read()?,
            key: c.read()?,
            stats: serde_json::from_str(&c.read::<String>()?).unwrap_or_default(),
            ty: c.read()?,
            declared: c.read()?,
            lookup: c.read()?,
        })
    }
}

pub fn run(job: &Job, p: Payload) -> Outcome {
    run_step("during ingestion", || match step(&job.business_id, p) {
        Ok(Some(next)) => Ok(DataSourcesJob::Ingest(next).continue_after(0)),
        Ok(None) => Ok(Outcome::Done),
        Err(Stop::Store(f)) => Err(f),
        Err(Stop::Fail(reason)) => unreachable!("failures are handled in step: {reason}"),
    })
}

fn load_version(biz: &str, id: &str) -> Result<Option<Version>, Failure> {
    db::query_one_as("SELECT id, business_id, data_source_id, format, byte_size, chunk_size, stage FROM ingestion_versions WHERE business_id = ?1 AND id = ?2", &params![biz, id])
}

/// One step; `Ok(Some(payload))` to continue, `Ok(None)` when finished.
fn step(biz: &str, p: Payload) -> Step<Option<Payload>> {
    let Some(v) = load_version(biz, &p.version_id)? else { return Ok(None) };
    let phase = p.phase.clone().unwrap_or_default();
    // A step whose version already moved on (e.g. a duplicate job) does nothing.
    let expected: &[&str] = match phase.as_str() {
        "" => &["received"],
        "parse" => &["parsing"],
        _ => &["validating"],
    };
    if !expected.contains(&v.stage.as_str()) {
        return Ok(None);
    }
    let result = match phase.as_str() {
        "" => start(&v, p),
        "parse" => ingest_parse::parse_step(&v, p),
        "interpret" => interpret_step(&v, p),
        other => Err(Stop::Fail(format!("internal: unknown ingestion phase `{other}`"))),
    };
    match result {
        Err(Stop::Fail(reason)) => {
            fail(&v, &reason)?;
            Ok(None)
        }
        other => other,
    }
}

pub fn set_stage(v: &Version, stage: &str) -> Result<(), Failure> {
    db::execute("UPDATE ingestion_versions SET stage = ?3, updated_at = ?4 WHERE business_id = ?1 AND id = ?2", &params![&v.biz, &v.id, stage, now()])?;
    Ok(())
}

/// Marks the version failed and drops what it had stored (rows, converted
/// chunks); the upload itself and the issues stay for inspection.
fn fail(v: &Version, reason: &str) -> Result<(), Failure> {
    let reason: String = reason.chars().take(500).collect();
    db::execute("UPDATE ingestion_versions SET stage = 'failed', failure_reason = ?3, row_count = 0, updated_at = ?4 WHERE business_id = ?1 AND id = ?2", &params![&v.biz, &v.id, reason, now()])?;
    let params = params![&v.biz, &v.id];
    db::execute("DELETE FROM ingestion_rows WHERE business_id = ?1 AND version_id = ?2", &params)?;
    db::execute("DELETE FROM ingestion_chunks WHERE business_id = ?1 AND version_id = ?2 AND stream = 1", &params)?;
    Ok(())
}

fn start(v: &Version, mut p: Payload) -> Step<Option<Payload>> {
    set_stage(v, "parsing")?;
    p.phase = Some("parse".into());
    p.offset = 0;
    p.row = 0;
    p.started = false;
    match v.format.as_str() {
        "xlsx" | "xlsm" => {
            let (size, dates) = ingest_parse::convert_spreadsheet(v)?;
            p.sheet_dates = dates;
            p.stream = 1;
            p.fmt = Some("csv".into());
            p.size = size;
        }
        f => {
            p.stream = 0;
            p.fmt = Some(f.to_string());
            p.size = v.size as u64;
        }
    }
    Ok(Some(p))
}

pub fn load_columns(v: &Version) -> Result<Vec<Column>, Failure> {
    db::query_as("SELECT position, name, field_key, stats, type, declared, lookup FROM ingestion_columns WHERE business_id = ?1 AND version_id = ?2 ORDER BY position", &params![&v.biz, &v.id])
}

/// Records issues (kind `parse` or `type`), storing at most
/// `MAX_STORED_ISSUES` per version, counting all.
pub fn add_issues(v: &Version, kind: &str, issues: &[(Option<i64>, Option<String>, String)]) -> Result<(), Failure> {
    if issues.is_empty() {
        return Ok(());
    }
    let stored = db::query_one_as::<i64>("SELECT COUNT(*) FROM ingestion_issues WHERE version_id = ?1 AND business_id = ?2", &params![&v.id, &v.biz])?.unwrap_or(0);
    let room = (MAX_STORED_ISSUES - stored).max(0) as usize;
    let rows: Vec<Vec<Value>> = issues.iter().take(room).map(|(row, col, problem)| params![&v.biz, &v.id, kind, *row, col.as_deref(), problem]).collect();
    db::execute_many("INSERT INTO ingestion_issues (business_id, version_id, kind, row_number, column_name, problem) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", &rows)?;
    let counter = if kind == "parse" { "parse_issue_count" } else { "type_issue_count" };
    db::execute(&format!("UPDATE ingestion_versions SET {counter} = {counter} + ?3 WHERE business_id = ?1 AND id = ?2"), &params![&v.biz, &v.id, issues.len() as i64])?;
    Ok(())
}

/// The type a column's cells are interpreted with: its declared type, or
/// the one its kinds so far suggest (after the parse: its decided type).
pub fn column_type(c: &Column) -> String {
    match (c.declared, &c.ty) {
        (true, Some(ty)) => ty.clone(),
        _ => infer::decide(&c.stats).suggested.to_string(),
    }
}

/// A row's `interpreted` (field key → typed value) by `types` (one per
/// column), given its cells by position (missing ones are empty); each
/// cell that does not fit its type is null and calls `misfit`.
pub fn interpret_row<'c>(cols: &[Column], types: &[&str], cell: impl Fn(usize) -> Option<&'c str>, mut misfit: impl FnMut(&Column, &str, String)) -> String {
    // The object written as it goes, in column order (field keys are
    // unique per version): what serde_json writes for a map that keeps
    // insertion order, without building one and cloning every key.
    let mut out = Vec::with_capacity(16 * cols.len() + 2);
    out.push(b'{');
    for (i, (c, ty)) in cols.iter().zip(types).enumerate() {
        let cell = cell(c.position as usize).unwrap_or_default();
        let value = match infer::interpret_cell(ty, cell, c.stats.sheet_date.as_ref()) {
            Ok(v) => v,
            Err(problem) => {
                misfit(c, ty, problem);
                serde_json::Value::Null
            }
        };
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, c.key.as_str()).expect("a key serialises");
        out.push(b':');
        serde_json::to_writer(&mut out, &value).expect("a value serialises");
    }
    out.push(b'}');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// After the last parse step: type the columns and move to `validating`.
pub fn finish_parse(v: &Version, mut p: Payload) -> Step<Option<Payload>> {
    let cols = load_columns(v)?;
    // Declared fields the file lacks.
    let declared = db::query_one_as::<bool>("SELECT fields_declared FROM data_sources WHERE business_id = ?1 AND id = ?2", &params![&v.biz, &v.source_id])?.unwrap_or(false);
    if declared {
        let missing: Vec<(Option<i64>, Option<String>, String)> =
            db::query_as::<String>("SELECT field_key FROM data_source_fields WHERE business_id = ?1 AND data_source_id = ?2 ORDER BY position", &params![&v.biz, &v.source_id])?
                .into_iter()
                .filter(|k| !cols.iter().any(|c| c.declared && c.key == *k))
                .map(|k| (None, Some(k.clone()), format!("declared field `{k}` is missing from the file")))
                .collect();
        add_issues(v, "parse", &missing)?;
    }
    let mut updates = Vec::new();
    for c in cols.iter().filter(|c| !c.declared) {
        let d = infer::decide(&c.stats);
        let review = (!d.review.is_empty()).then(|| json!(d.review).to_string());
        updates.push(params![&v.biz, &v.id, c.position, d.suggested, review]);
    }
    db::execute_many("UPDATE ingestion_columns SET type = ?4, review_types = ?5 WHERE business_id = ?1 AND version_id = ?2 AND position = ?3", &updates)?;
    db::execute("DELETE FROM ingestion_chunks WHERE business_id = ?1 AND version_id = ?2 AND stream = 1", &params![&v.biz, &v.id])?;
    set_stage(v, "validating")?;
    // Every row was interpreted as it was stored, with the types decided
    // now and without a misfit: nothing is left for the interpret pass.
    let typed = !p.untyped && p.typed_as.len() == cols.len() && cols.iter().zip(&p.typed_as).all(|(c, t)| column_type(c) == *t);
    if typed && p.row > 0 {
        finish(v, &p)?;
        return Ok(None);
    }
    p.phase = Some("interpret".into());
    p.row = 0;
    Ok(Some(p))
}

fn interpret_step(v: &Version, mut p: Payload) -> Step<Option<Payload>> {
    let params = params![&v.biz, &v.id];
    if p.row == 0 {
        // (Re)start: type issues are recomputed from scratch.
        db::execute("DELETE FROM ingestion_issues WHERE business_id = ?1 AND version_id = ?2 AND kind = 'type'", &params)?;
        db::execute("UPDATE ingestion_versions SET type_issue_count = 0 WHERE business_id = ?1 AND id = ?2", &params)?;
    }
    let cols = load_columns(v)?;
    let rows: Vec<(i64, String)> = db::query_as(
        &format!("SELECT row_number, original FROM ingestion_rows WHERE business_id = ?1 AND version_id = ?2 AND row_number > ?3 ORDER BY row_number LIMIT {STEP_ROWS}"),
        &params![&v.biz, &v.id, p.row],
    )?;
    let types: Vec<&str> = cols.iter().map(|c| c.ty.as_deref().unwrap_or("text")).collect();
    let mut updates = Vec::with_capacity(rows.len());
    let mut issues = Vec::new();
    for (n, original) in &rows {
        let n = *n;
        let original: Vec<Option<String>> = serde_json::from_str(original).unwrap_or_default();
        let interpreted =
            interpret_row(&cols, &types, |i| original.get(i).and_then(|c| c.as_deref()), |c, ty, problem| issues.push((Some(n), Some(c.name.clone()), format!("{problem} (column type {ty})"))));
        updates.push(params![&v.biz, &v.id, n, interpreted]);
        p.row = n;
    }
    db::execute_many("UPDATE ingestion_rows SET interpreted = ?4 WHERE business_id = ?1 AND version_id = ?2 AND row_number = ?3", &updates)?;
    add_issues(v, "type", &issues)?;
    if rows.len() == STEP_ROWS {
        return Ok(Some(p));
    }
    finish(v, &p)?;
    Ok(None)
}

/// An issue of a version: its row, its column, its message.
type Guard = (Option<i64>, Option<String>, String);

/// Why this version must not replace good data without a person's review:
/// it has no rows, or its columns differ from the active version's (a
/// wrong file, a changed export). Each becomes an issue, so the version
/// waits in `needs_review` and the active version keeps answering.
fn replacement_guards(v: &Version) -> Result<Vec<Guard>, Failure> {
    let mut guards = Vec::new();
    let rows = db::query_one_as::<i64>("SELECT row_count FROM ingestion_versions WHERE business_id = ?1 AND id = ?2", &params![&v.biz, &v.id])?.unwrap_or(0);
    if rows == 0 {
        guards.push((None, None, "the file has no data rows; it replaces the active version only when resolved".to_string()));
    }
    let keys = |sql: &str| -> Result<std::collections::BTreeSet<String>, Failure> { Ok(db::query_as::<String>(sql, &params![&v.biz, &v.source_id, &v.id])?.into_iter().collect()) };
    let active = keys(
        "SELECT c.field_key FROM data_sources s JOIN ingestion_columns c ON c.business_id = s.business_id AND c.version_id = s.active_version_id \
         WHERE s.business_id = ?1 AND s.id = ?2 AND s.active_version_id IS NOT NULL AND s.active_version_id <> ?3",
    )?;
    if !active.is_empty() {
        let new = keys("SELECT field_key FROM ingestion_columns WHERE business_id = ?1 AND version_id = ?3 AND ?2 IS NOT NULL")?;
        if new != active {
            let list = |set: Vec<&String>| set.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ");
            let added = list(new.difference(&active).collect());
            let missing = list(active.difference(&new).collect());
            let mut change = Vec::new();
            if !added.is_empty() {
                change.push(format!("new: {added}"));
            }
            if !missing.is_empty() {
                change.push(format!("missing: {missing}"));
            }
            guards.push((None, None, format!("the columns differ from the active version's ({}); it replaces the active version only when resolved", change.join("; "))));
        }
    }
    Ok(guards)
}

/// Last step: activate, leave `ready`, or wait in `needs_review`.
fn finish(v: &Version, p: &Payload) -> Result<(), Failure> {
    if p.resolved {
        if p.activate {
            activate(&v.biz, &v.source_id, &v.id)?;
        } else {
            set_stage(v, "ready")?;
        }
        return Ok(());
    }
    add_issues(v, "parse", &replacement_guards(v)?)?;
    let pending = db::query_one_as::<(i64, i64)>(
        "SELECT (SELECT COUNT(*) FROM ingestion_columns WHERE business_id = ?1 AND version_id = ?2 AND review_types IS NOT NULL AND reviewed = 0), \
                (SELECT parse_issue_count + type_issue_count FROM ingestion_versions WHERE business_id = ?1 AND id = ?2)",
        &params![&v.biz, &v.id],
    )?
    .unwrap_or((0, 0));
    if pending.0 > 0 || pending.1 > 0 {
        set_stage(v, "needs_review")
    } else {
        activate(&v.biz, &v.source_id, &v.id).map(|_| ())
    }
}
