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
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{fail, job, now, ok, req, HResult, Request, Success};

use crate::activate::activate;
use crate::jobs::{ingest, DataSourcesJob};

/// Issues listed by inspect (all are counted in `issueCount`).
const ISSUES_SHOWN: usize = 100;

fn not_found() -> switchboard_guest::Failure {
    fail::not_found("ingestion_not_found", "ingestion not found in this business")
}

const VCOLS: &str = "id, data_source_id, version_number, stage, failure_reason, row_count, parse_issue_count + type_issue_count, created_at, updated_at";

fn version(biz: &str, id: &str) -> HResult<Vec<switchboard_guest::Value>> {
    if !switchboard_guest::is_uuid(id) {
        return Err(not_found());
    }
    db::query_one(&format!("SELECT {VCOLS} FROM ingestion_versions WHERE business_id = ?1 AND id = ?2"), &[biz.into(), id.to_ascii_lowercase().into()])?.ok_or_else(not_found)
}

pub fn render(biz: &str, id: &str) -> HResult<Json> {
    let v = version(biz, id)?;
    let stage = v.text(3);
    let issues: Vec<Json> = db::query(
        &format!("SELECT row_number, column_name, problem FROM ingestion_issues WHERE business_id = ?1 AND version_id = ?2 ORDER BY id LIMIT {ISSUES_SHOWN}"),
        &[biz.into(), v.text(0).into()],
    )?
    .iter()
    .map(|r| json!({"row": r.opt_int(0), "column": r.opt_text(1), "problem": r.text(2)}))
    .collect();
    let mut review = Vec::new();
    if stage == "needs_review" {
        for r in db::query(
            "SELECT name, type, review_types, stats FROM ingestion_columns \
             WHERE business_id = ?1 AND version_id = ?2 AND review_types IS NOT NULL AND reviewed = 0 ORDER BY position",
            &[biz.into(), v.text(0).into()],
        )? {
            let types: Json = serde_json::from_str(&r.text(2)).unwrap_or(json!([]));
            let samples = serde_json::from_str::<Json>(&r.text(3)).ok().and_then(|s| s.get("samples").cloned()).unwrap_or(json!([]));
            review.push(json!({"column": r.text(0), "detectedTypes": types, "suggestedType": r.opt_text(1).unwrap_or_else(|| "text".into()), "samples": samples}));
        }
    }
    Ok(json!({
        "ingestion": {
            "id": v.text(0),
            "dataSourceId": v.text(1),
            "versionNumber": v.int(2),
            "stage": stage,
            "failureReason": v.opt_text(4),
            "rowCount": v.int(5),
            "issueCount": v.int(6),
            "createdAt": v.text(7),
            "updatedAt": v.text(8),
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
    let (id, source_id, stage) = (v.text(0), v.text(1), v.text(3));
    if stage != "needs_review" && stage != "ready" {
        return Err(fail::conflict("ingestion_not_resolvable", format!("the ingestion is `{stage}`; only an ingestion in `needs_review` or `ready` can be resolved")));
    }
    let status = db::query_one("SELECT status FROM data_sources WHERE business_id = ?1 AND id = ?2", &[biz.into(), source_id.as_str().into()])?;
    if status.is_none_or(|s| s.text(0) == "archived") {
        return Err(fail::conflict("data_source_archived", "the data source is archived"));
    }
    // position, name, field_key, type, declared, review pending
    let cols = db::query(
        "SELECT position, name, field_key, type, declared, review_types IS NOT NULL AND reviewed = 0 FROM ingestion_columns \
         WHERE business_id = ?1 AND version_id = ?2 ORDER BY position",
        &[biz.into(), id.as_str().into()],
    )?;
    let mut chosen: Vec<(i64, String)> = Vec::new();
    for (i, c) in body.columns.iter().enumerate() {
        let Some(col) = cols.iter().find(|r| r.text(1) == c.column).or_else(|| cols.iter().find(|r| r.text(2) == c.column)) else {
            return Err(fail::validation("unknown_column", format!("`columns[{i}].column`: the ingestion has no column `{}`", c.column)));
        };
        if chosen.iter().any(|(p, _)| *p == col.int(0)) {
            return Err(fail::validation("duplicate_column", format!("`columns[{i}].column`: `{}` is given twice", c.column)));
        }
        if col.boolean(4) && col.opt_text(3).as_deref() != Some(c.ty.as_str()) {
            return Err(fail::validation(
                "declared_column",
                format!("`columns[{i}]`: `{}` is a declared field of type `{}`; its type cannot be changed here", c.column, col.opt_text(3).unwrap_or_default()),
            ));
        }
        chosen.push((col.int(0), c.ty.clone()));
    }
    let missing: Vec<String> = cols.iter().filter(|r| r.boolean(5) && !chosen.iter().any(|(p, _)| *p == r.int(0))).map(|r| r.text(1)).collect();
    if !missing.is_empty() {
        return Err(fail::validation("unresolved_columns", format!("every column needing review must be given a type; missing: {}", missing.join(", "))));
    }
    let mut changed = false;
    for (pos, ty) in &chosen {
        let before = cols.iter().find(|r| r.int(0) == *pos).and_then(|r| r.opt_text(3));
        changed |= before.as_deref() != Some(ty.as_str());
        db::execute(
            "UPDATE ingestion_columns SET type = ?3, reviewed = 1 WHERE business_id = ?1 AND version_id = ?2 AND position = ?4",
            &[biz.into(), id.as_str().into(), ty.as_str().into(), (*pos).into()],
        )?;
    }
    let now = now();
    if changed {
        db::execute("UPDATE ingestion_versions SET stage = 'validating', resolved = 1, updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into(), now.as_str().into()])?;
        job::enqueue(biz, &DataSourcesJob::Ingest(ingest::Payload::reinterpret(&id, body.activate)))?;
    } else if body.activate {
        db::execute("UPDATE ingestion_versions SET resolved = 1 WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into()])?;
        activate(biz, &source_id, &id)?;
    } else {
        db::execute("UPDATE ingestion_versions SET stage = 'ready', resolved = 1, updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into(), now.as_str().into()])?;
    }
    ok(&render(biz, &id)?)
}
