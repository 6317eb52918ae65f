//! inspectIngestion and resolveIngestion.
//!
//! Resolve accepts a version in `needs_review` or `ready` (otherwise 409
//! `ingestion_not_resolvable`). Every column still needing review must be
//! given a type (400 `unresolved_columns`); declared columns keep their
//! declared type (400 `declared_column`). When no column's type changes the
//! version is activated (or left `ready` with `activate: false`) in this
//! request's transaction. When types change, the stored interpreted values
//! must be recomputed: the version goes to `validating` and a
//! `data-sources.ingest` job re-interprets it in bounded steps and then
//! activates it (or leaves it `ready`) in one transaction.

use serde::Deserialize;
use serde_json::{json, Value as Json};
use switchboard_guest::db;
use switchboard_guest::row_struct;
use switchboard_guest::{fail, job, now, ok, params, req, HResult, Request, Success};
use switchboard_sql::{FromRow, Mismatch, Row};

use crate::activate::activate;
use crate::jobs::{ingest, DataSourcesJob};

/// Issues listed by inspect (all are counted in `issueCount`).
const ISSUES_SHOWN: usize = 100;

fn not_found() -> switchboard_guest::Failure {
    fail::not_found("ingestion_not_found", "ingestion not found in this business")
}

const VCOLS: &str = "id, data_source_id, version_number, stage, failure_reason, row_count, parse_issue_count + type_issue_count, created_at, updated_at";

row_struct! {
    /// A version's row, selected with `VCOLS`.
    struct VersionRow {
        id: String,
        source_id: String,
        number: i64,
        stage: String,
        failure_reason: Option<String>,
        row_count: i64,
        issue_count: i64,
        created_at: String,
        updated_at: String,
    }
}

fn version(biz: &str, id: &str) -> HResult<VersionRow> {
    if !switchboard_guest::is_uuid(id) {
        return Err(not_found());
    }
    db::query_one_as(&format!("SELECT {VCOLS} FROM ingestion_versions WHERE business_id = ?1 AND id = ?2"), &params![biz, id.to_ascii_lowercase()])?.ok_or_else(not_found)
}

/// A column of a version as resolve reads it.
struct ColumnRow {
    position: i64,
    name: String,
    key: String,
    ty: Option<String>,
    declared: bool,
    /// Its review is pending.
    pending: bool,
}

impl FromRow for ColumnRow {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let (position, name, key, ty, declared, pending) = FromRow::from_row(row)?;
        Ok(ColumnRow { position, name, key, ty, declared, pending })
    }
}

pub fn render(biz: &str, id: &str) -> HResult<Json> {
    let v = version(biz, id)?;
    let stage = v.stage;
    let issues: Vec<Json> = db::query_as::<(Option<i64>, Option<String>, String)>(
        &format!("SELECT row_number, column_name, problem FROM ingestion_issues WHERE business_id = ?1 AND version_id = ?2 ORDER BY id LIMIT {ISSUES_SHOWN}"),
        &params![biz, &v.id],
    )?
    .into_iter()
    .map(|(row, column, problem)| json!({"row": row, "column": column, "problem": problem}))
    .collect();
    let mut review = Vec::new();
    if stage == "needs_review" {
        for (name, ty, review_types, stats) in db::query_as::<(String, Option<String>, String, String)>(
            "SELECT name, type, review_types, stats FROM ingestion_columns \
             WHERE business_id = ?1 AND version_id = ?2 AND review_types IS NOT NULL AND reviewed = 0 ORDER BY position",
            &params![biz, &v.id],
        )? {
            let types: Json = serde_json::from_str(&review_types).unwrap_or(json!([]));
            let samples = serde_json::from_str::<Json>(&stats).ok().and_then(|s| s.get("samples").cloned()).unwrap_or(json!([]));
            review.push(json!({"column": name, "detectedTypes": types, "suggestedType": ty.unwrap_or_else(|| "text".into()), "samples": samples}));
        }
    }
    Ok(json!({
        "ingestion": {
            "id": v.id,
            "dataSourceId": v.source_id,
            "versionNumber": v.number,
            "stage": stage,
            "failureReason": v.failure_reason,
            "rowCount": v.row_count,
            "issueCount": v.issue_count,
            "createdAt": v.created_at,
            "updatedAt": v.updated_at,
        },
        "issues": issues,
        "columnsNeedingReview": review,
    }))
}

pub fn inspect(req: &Request) -> HResult<Success> {
    let id = req::query_nonempty(req, "ingestionId").ok_or_else(not_found)?;
    ok(&render(&req.business_id, id)?)
}

#[derive(Deserialize)]
struct ColumnChoice {
    column: String,
    #[serde(rename = "type")]
    ty: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResolveBody {
    ingestion_id: String,
    columns: Vec<ColumnChoice>,
    #[serde(default = "yes")]
    activate: bool,
}

fn yes() -> bool {
    true
}

pub fn resolve(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: ResolveBody = req::body(req)?;
    let v = version(biz, &body.ingestion_id)?;
    let VersionRow { id, source_id, stage, .. } = v;
    if stage != "needs_review" && stage != "ready" {
        return Err(fail::conflict("ingestion_not_resolvable", format!("the ingestion is `{stage}`; only an ingestion in `needs_review` or `ready` can be resolved")));
    }
    let status = db::query_one_as::<String>("SELECT status FROM data_sources WHERE business_id = ?1 AND id = ?2", &params![biz, &source_id])?;
    if status.is_none_or(|s| s == "archived") {
        return Err(fail::conflict("data_source_archived", "the data source is archived"));
    }
    let cols: Vec<ColumnRow> = db::query_as(
        "SELECT position, name, field_key, type, declared, review_types IS NOT NULL AND reviewed = 0 FROM ingestion_columns \
         WHERE business_id = ?1 AND version_id = ?2 ORDER BY position",
        &params![biz, &id],
    )?;
    let mut chosen: Vec<(i64, String)> = Vec::new();
    for (i, c) in body.columns.iter().enumerate() {
        let Some(col) = cols.iter().find(|r| r.name == c.column).or_else(|| cols.iter().find(|r| r.key == c.column)) else {
            return Err(fail::validation("unknown_column", format!("`columns[{i}].column`: the ingestion has no column `{}`", c.column)));
        };
        if chosen.iter().any(|(p, _)| *p == col.position) {
            return Err(fail::validation("duplicate_column", format!("`columns[{i}].column`: `{}` is given twice", c.column)));
        }
        if col.declared && col.ty.as_deref() != Some(c.ty.as_str()) {
            return Err(fail::validation(
                "declared_column",
                format!("`columns[{i}]`: `{}` is a declared field of type `{}`; its type cannot be changed here", c.column, col.ty.as_deref().unwrap_or_default()),
            ));
        }
        chosen.push((col.position, c.ty.clone()));
    }
    let missing: Vec<&str> = cols.iter().filter(|r| r.pending && !chosen.iter().any(|(p, _)| *p == r.position)).map(|r| r.name.as_str()).collect();
    if !missing.is_empty() {
        return Err(fail::validation("unresolved_columns", format!("every column needing review must be given a type; missing: {}", missing.join(", "))));
    }
    let mut changed = false;
    for (pos, ty) in &chosen {
        let before = cols.iter().find(|r| r.position == *pos).and_then(|r| r.ty.as_deref());
        changed |= before != Some(ty.as_str());
        db::execute("UPDATE ingestion_columns SET type = ?3, reviewed = 1 WHERE business_id = ?1 AND version_id = ?2 AND position = ?4", &params![biz, &id, ty, *pos])?;
    }
    let now = now();
    if changed {
        db::execute("UPDATE ingestion_versions SET stage = 'validating', resolved = 1, updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &id, &now])?;
        job::enqueue(biz, &DataSourcesJob::Ingest(ingest::Payload::reinterpret(&id, body.activate)))?;
    } else if body.activate {
        db::execute("UPDATE ingestion_versions SET resolved = 1 WHERE business_id = ?1 AND id = ?2", &params![biz, &id])?;
        activate(biz, &source_id, &id)?;
    } else {
        db::execute("UPDATE ingestion_versions SET stage = 'ready', resolved = 1, updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &id, &now])?;
    }
    ok(&render(biz, &id)?)
}
