//! listDataSources, createDataSource, updateDataSource, archiveDataSource.
//!
//! Archived sources are omitted from the list; archiving twice returns the
//! archived source again. The built-in Contacts source is always listed; its
//! fields are `mobile`, `name` and the business's contact field keys, all of
//! them offered as contact variables (`contactVariableFields`). Row values
//! (and contact values) are never returned, only counts.

use serde::Deserialize;
use serde_json::{json, Value as Json};
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{created, fail, is_uuid, new_id, now, ok, req, HResult, Request, Success, Value};
use switchboard_guest::{knowledge, page};

const COLS: &str = "d.id, d.name, d.description, d.class, d.kind, d.built_in, d.status, d.active_version_id, d.created_at, d.updated_at, \
     (d.content IS NOT NULL AND d.content <> ''), (SELECT v.row_count FROM ingestion_versions v WHERE v.business_id = d.business_id AND v.id = d.active_version_id)";

pub fn not_found() -> switchboard_guest::Failure {
    fail::not_found("data_source_not_found", "data source not found in this business")
}

/// The source `id` of business `biz` as a rendered row (any status).
pub fn find(biz: &str, id: &str) -> HResult<Option<Vec<Value>>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    db::query_one(&format!("SELECT {COLS} FROM data_sources d WHERE d.business_id = ?1 AND d.id = ?2"), &[biz.into(), id.to_ascii_lowercase().into()])
}

/// Renders source rows (selected with `COLS`) with their fields and counts.
fn render(biz: &str, rows: &[Vec<Value>]) -> HResult<Vec<Json>> {
    let ids: Vec<String> = rows.iter().filter(|r| !r.boolean(5)).map(|r| r.text(0)).collect();
    let mut fields: Vec<(String, Json)> = Vec::new();
    if !ids.is_empty() {
        let mut params: Vec<Value> = vec![biz.into()];
        params.extend(ids.iter().map(|i| i.into()));
        for r in db::query(
            &format!(
                "SELECT data_source_id, field_key, label, type, lookup FROM data_source_fields WHERE business_id = ?1 AND data_source_id IN ({}) ORDER BY data_source_id, position",
                db::placeholders(2, ids.len())
            ),
            &params,
        )? {
            fields.push((r.text(0), json!({"key": r.text(1), "label": r.text(2), "type": r.text(3), "lookup": r.boolean(4)})));
        }
    }
    let embedding = crate::jobs::embed::enabled_model(biz)?.is_some();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let id = r.text(0);
        let built_in = r.boolean(5);
        let (fs, contact_vars, count) = if built_in {
            // Contacts are never searched by agents: no lookup field.
            let mut fs = vec![json!({"key": "mobile", "label": "Mobile", "type": "phone", "lookup": false}), json!({"key": "name", "label": "Name", "type": "text", "lookup": false})];
            for f in db::query("SELECT field_key FROM contact_fields WHERE business_id = ?1 ORDER BY field_key", &[biz.into()])? {
                fs.push(json!({"key": f.text(0), "label": f.text(0), "type": "text", "lookup": false}));
            }
            let keys: Vec<Json> = fs.iter().map(|f| f["key"].clone()).collect();
            let n = db::query_one("SELECT COUNT(*) FROM contacts WHERE business_id = ?1", &[biz.into()])?.map_or(0, |r| r.int(0));
            (fs, keys, n)
        } else {
            let fs: Vec<Json> = fields.iter().filter(|(s, _)| *s == id).map(|(_, f)| f.clone()).collect();
            let n = if r.text(3) == "unstructured" { i64::from(r.boolean(10)) } else { r.opt_int(11).unwrap_or(0) };
            (fs, Vec::new(), n)
        };
        out.push(json!({
            "id": id,
            "businessId": biz,
            "name": r.text(1),
            "description": r.opt_text(2),
            "class": r.text(3),
            "kind": r.text(4),
            "builtIn": built_in,
            "status": r.text(6),
            "fields": fs,
            "contactVariableFields": contact_vars,
            "itemCount": count,
            "retrieval": if !built_in && r.text(3) == "unstructured" { retrieval(biz, &id, embedding)? } else { Json::Null },
            "activeVersionId": r.opt_text(7),
            "createdAt": r.text(8),
            "updatedAt": r.text(9),
        }));
    }
    Ok(out)
}

/// An unstructured source's passages and, with an embeddings model, how
/// many have a vector.
fn retrieval(biz: &str, id: &str, embedding: bool) -> HResult<Json> {
    let passages = db::query_one("SELECT COUNT(*) FROM knowledge_fts WHERE knowledge_fts MATCH ?1 AND business_id = ?2", &[knowledge::scope_query(id, "").into(), biz.into()])?.map_or(0, |r| r.int(0));
    let embedded = if embedding {
        let n = db::query_one("SELECT COUNT(*) FROM knowledge_vectors WHERE data_source_id = ?1 AND version_id = '' AND business_id = ?2", &[id.into(), biz.into()])?;
        json!(n.map_or(0, |r| r.int(0)))
    } else {
        Json::Null
    };
    Ok(json!({"passages": passages, "embeddedPassages": embedded}))
}

pub fn render_one(biz: &str, id: &str) -> HResult<Json> {
    let row = find(biz, id)?.ok_or_else(not_found)?;
    Ok(render(biz, &[row])?.remove(0))
}

/// Non-archived sources in creation order (uuid v7 ids), cursor-paginated.
pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let select = format!("SELECT {COLS} FROM data_sources d WHERE d.business_id = ?1 AND d.status <> 'archived'");
    let (rows, next) = page::by_id(req, &select, vec![biz.into()], "d.id")?;
    ok(&json!({"dataSources": render(biz, &rows)?, "nextCursor": next}))
}

#[derive(Deserialize)]
struct FieldIn {
    key: String,
    label: String,
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    lookup: Option<bool>,
}

#[derive(Deserialize)]
struct CreateBody {
    name: String,
    class: String,
    kind: String,
    #[serde(default)]
    fields: Option<Vec<FieldIn>>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

fn clean_name(name: &str) -> HResult<String> {
    let n = name.trim();
    if n.is_empty() {
        return Err(fail::validation("invalid_name", "`name` must contain at least one non-space character"));
    }
    Ok(n.to_string())
}

pub fn create(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: CreateBody = req::body(req)?;
    let name = clean_name(&body.name)?;
    let fields = body.fields.unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    for (i, f) in fields.iter().enumerate() {
        if !seen.insert(f.key.to_ascii_lowercase()) {
            return Err(fail::validation("duplicate_field_key", format!("`fields[{i}].key`: `{}` is declared twice (keys are unique, ignoring case)", f.key)));
        }
        // `trim` removes Unicode's White_Space, exactly the blank set the
        // document's pattern lists (gateway/src/openapi.rs NON_BLANK_PATTERN;
        // a gateway test compares them), so the gateway refuses this first.
        if f.label.trim().is_empty() {
            return Err(fail::validation("invalid_field_label", format!("`fields[{i}].label` must contain a non-space character")));
        }
    }
    let id = new_id();
    let now = now();
    let content = if body.class == "unstructured" { body.content } else { None };
    db::execute(
        "INSERT INTO data_sources (id, business_id, name, description, class, kind, built_in, status, content, fields_declared, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, 'active', ?7, ?8, ?9, ?9)",
        &[
            id.as_str().into(),
            biz.into(),
            name.into(),
            body.description.into(),
            body.class.as_str().into(),
            body.kind.as_str().into(),
            content.into(),
            (!fields.is_empty()).into(),
            now.as_str().into(),
        ],
    )?;
    // The `lookup` fields; none marked means the first.
    let none_marked = !fields.iter().any(|f| f.lookup == Some(true));
    let rows: Vec<Vec<Value>> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let lookup = f.lookup == Some(true) || (none_marked && i == 0);
            vec![biz.into(), id.as_str().into(), f.key.as_str().into(), f.label.trim().into(), f.ty.as_str().into(), (i as i64).into(), lookup.into()]
        })
        .collect();
    db::execute_many("INSERT INTO data_source_fields (business_id, data_source_id, field_key, label, type, position, lookup) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &rows)?;
    // An unstructured source's content is searchable by its agents from this commit on.
    let stored = db::query_one("SELECT content FROM data_sources WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into()])?.and_then(|r| r.opt_text(0));
    if stored.is_some() {
        knowledge::index_content(biz, &id, stored.as_deref())?;
        crate::jobs::embed::enqueue_if_enabled(biz, &id)?;
    }
    created(&json!({"dataSource": render_one(biz, &id)?}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    data_source_id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    content: Option<String>,
}

/// A source this request may change: exists, not built in, not archived.
fn mutable(biz: &str, id: &str) -> HResult<Vec<Value>> {
    let row = find(biz, id)?.ok_or_else(not_found)?;
    if row.boolean(5) {
        return Err(fail::conflict("built_in_source", "the built-in Contacts data source cannot be changed or archived; manage contacts through the contacts API"));
    }
    if row.text(6) == "archived" {
        return Err(fail::conflict("data_source_archived", "the data source is archived"));
    }
    Ok(row)
}

pub fn update(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: UpdateBody = req::body(req)?;
    let row = mutable(biz, &body.data_source_id)?;
    let id = row.text(0);
    if body.content.is_some() && row.text(3) != "unstructured" {
        return Err(fail::conflict("content_not_supported", "`content` applies only to unstructured data sources; upload an asset to change a structured source"));
    }
    let name = body.name.as_deref().map(clean_name).transpose()?;
    db::execute(
        "UPDATE data_sources SET name = COALESCE(?3, name), description = COALESCE(?4, description), status = COALESCE(?5, status), \
         content = COALESCE(?6, content), updated_at = ?7 WHERE business_id = ?1 AND id = ?2",
        &[biz.into(), id.as_str().into(), name.into(), body.description.into(), body.status.into(), body.content.as_deref().into(), now().into()],
    )?;
    if body.content.is_some() {
        // New content replaces the passages agents find, in the same commit.
        knowledge::index_content(biz, &id, body.content.as_deref())?;
        crate::jobs::embed::enqueue_if_enabled(biz, &id)?;
    }
    ok(&json!({"dataSource": render_one(biz, &id)?}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MutationBody {
    data_source_id: String,
}

pub fn archive(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: MutationBody = req::body(req)?;
    let row = find(biz, &body.data_source_id)?.ok_or_else(not_found)?;
    if row.boolean(5) {
        return Err(fail::conflict("built_in_source", "the built-in Contacts data source cannot be archived"));
    }
    let id = row.text(0);
    if row.text(6) != "archived" {
        db::execute("UPDATE data_sources SET status = 'archived', updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into(), now().into()])?;
    }
    ok(&json!({"dataSource": render_one(biz, &id)?}))
}
