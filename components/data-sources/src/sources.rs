//! listDataSources, createDataSource, updateDataSource, archiveDataSource.
//!
//! Archived sources are omitted from the list; archiving twice returns the
//! archived source again. The built-in Contacts source is always listed; its
//! fields are `mobile`, `name` and the business's contact field keys, all of
//! them offered as contact variables (`contactVariableFields`). Row values
//! (and contact values) are never returned, only counts.

use serde::Deserialize;
use serde_json::{json, Value as Json};
use switchboard_guest::db;
use switchboard_guest::row_struct;
use switchboard_guest::{created, fail, is_uuid, new_id, now, ok, params, req, HResult, Request, Success, Value};
use switchboard_guest::{knowledge, page};

const COLS: &str = "d.id, d.name, d.description, d.class, d.kind, d.built_in, d.status, d.active_version_id, d.created_at, d.updated_at, \
     (d.content IS NOT NULL AND d.content <> ''), (SELECT v.row_count FROM ingestion_versions v WHERE v.business_id = d.business_id AND v.id = d.active_version_id)";

row_struct! {
    /// A source's row, selected with `COLS`.
    pub struct Source {
        pub id: String,
        name: String,
        description: Option<String>,
        pub class: String,
        kind: String,
        pub built_in: bool,
        pub status: String,
        active_version_id: Option<String>,
        created_at: String,
        updated_at: String,
        /// An unstructured source has non-empty content.
        has_content: bool,
        /// The active version's rows (none without an active version).
        row_count: Option<i64>,
    }
}

pub fn not_found() -> switchboard_guest::Failure {
    fail::not_found("data_source_not_found", "data source not found in this business")
}

/// The source `id` of business `biz` as a rendered row (any status).
pub fn find(biz: &str, id: &str) -> HResult<Option<Source>> {
    if !is_uuid(id) {
        return Ok(None);
    }
    db::query_one_as(&format!("SELECT {COLS} FROM data_sources d WHERE d.business_id = ?1 AND d.id = ?2"), &params![biz, id.to_ascii_lowercase()])
}

/// Renders source rows (selected with `COLS`) with their fields and counts.
fn render(biz: &str, rows: Vec<Source>) -> HResult<Vec<Json>> {
    let ids: Vec<&str> = rows.iter().filter(|r| !r.built_in).map(|r| r.id.as_str()).collect();
    let mut fields: Vec<(String, Json)> = Vec::new();
    if !ids.is_empty() {
        let mut params: Vec<Value> = params![biz];
        params.extend(ids.iter().map(|&i| i.into()));
        let rows: Vec<(String, String, String, String, bool)> = db::query_as(
            &format!(
                "SELECT data_source_id, field_key, label, type, lookup FROM data_source_fields WHERE business_id = ?1 AND data_source_id IN ({}) ORDER BY data_source_id, position",
                db::placeholders(2, ids.len())
            ),
            &params,
        )?;
        for (source, key, label, ty, lookup) in rows {
            fields.push((source, json!({"key": key, "label": label, "type": ty, "lookup": lookup})));
        }
    }
    let embedding = crate::jobs::embed::enabled_model(biz)?.is_some();
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let id = r.id;
        let built_in = r.built_in;
        let (fs, contact_vars, count) = if built_in {
            // Contacts are never searched by agents: no lookup field.
            let mut fs = vec![json!({"key": "mobile", "label": "Mobile", "type": "phone", "lookup": false}), json!({"key": "name", "label": "Name", "type": "text", "lookup": false})];
            for key in db::query_as::<String>("SELECT field_key FROM contact_fields WHERE business_id = ?1 ORDER BY field_key", &params![biz])? {
                fs.push(json!({"key": key, "label": key, "type": "text", "lookup": false}));
            }
            let keys: Vec<Json> = fs.iter().map(|f| f["key"].clone()).collect();
            let n = db::query_one_as::<i64>("SELECT COUNT(*) FROM contacts WHERE business_id = ?1", &params![biz])?.unwrap_or(0);
            (fs, keys, n)
        } else {
            let fs: Vec<Json> = fields.iter().filter(|(s, _)| *s == id).map(|(_, f)| f.clone()).collect();
            let n = if r.class == "unstructured" { i64::from(r.has_content) } else { r.row_count.unwrap_or(0) };
            (fs, Vec::new(), n)
        };
        out.push(json!({
            "id": id,
            "businessId": biz,
            "name": r.name,
            "description": r.description,
            "class": r.class,
            "kind": r.kind,
            "builtIn": built_in,
            "status": r.status,
            "fields": fs,
            "contactVariableFields": contact_vars,
            "itemCount": count,
            "retrieval": if !built_in && r.class == "unstructured" { retrieval(biz, &id, embedding)? } else { Json::Null },
            "activeVersionId": r.active_version_id,
            "createdAt": r.created_at,
            "updatedAt": r.updated_at,
        }));
    }
    Ok(out)
}

/// An unstructured source's passages and, with an embeddings model, how
/// many have a vector.
fn retrieval(biz: &str, id: &str, embedding: bool) -> HResult<Json> {
    let passages = db::query_one_as::<i64>("SELECT COUNT(*) FROM knowledge_fts WHERE knowledge_fts MATCH ?1 AND business_id = ?2", &params![knowledge::scope_query(id, ""), biz])?.unwrap_or(0);
    let embedded = if embedding {
        // Indexed and waiting for the index alike: retrieval finds both.
        let n = db::query_one_as::<i64>(
            "SELECT (SELECT COUNT(*) FROM knowledge_vectors WHERE data_source_id = ?1 AND version_id = '' AND business_id = ?2) \
             + (SELECT COUNT(*) FROM knowledge_vectors_pending WHERE data_source_id = ?1 AND version_id = '' AND business_id = ?2)",
            &params![id, biz],
        )?;
        json!(n.unwrap_or(0))
    } else {
        Json::Null
    };
    Ok(json!({"passages": passages, "embeddedPassages": embedded}))
}

pub fn render_one(biz: &str, id: &str) -> HResult<Json> {
    let row = find(biz, id)?.ok_or_else(not_found)?;
    Ok(render(biz, vec![row])?.remove(0))
}

/// Non-archived sources in creation order (uuid v7 ids), cursor-paginated.
pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let select = format!("SELECT {COLS} FROM data_sources d WHERE d.business_id = ?1 AND d.status <> 'archived'");
    let (rows, next) = page::by_id::<Source>(req, &select, params![biz], "d.id")?;
    ok(&json!({"dataSources": render(biz, rows)?, "nextCursor": next}))
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
        &params![&id, biz, name, body.description, &body.class, &body.kind, content, !fields.is_empty(), &now],
    )?;
    // The `lookup` fields; none marked means the first.
    let none_marked = !fields.iter().any(|f| f.lookup == Some(true));
    let rows: Vec<Vec<Value>> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let lookup = f.lookup == Some(true) || (none_marked && i == 0);
            params![biz, &id, &f.key, f.label.trim(), &f.ty, i as i64, lookup]
        })
        .collect();
    db::execute_many("INSERT INTO data_source_fields (business_id, data_source_id, field_key, label, type, position, lookup) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &rows)?;
    // An unstructured source's content is searchable by its agents from this commit on.
    let stored = db::query_one_as::<Option<String>>("SELECT content FROM data_sources WHERE business_id = ?1 AND id = ?2", &params![biz, &id])?.flatten();
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
fn mutable(biz: &str, id: &str) -> HResult<Source> {
    let row = find(biz, id)?.ok_or_else(not_found)?;
    if row.built_in {
        return Err(fail::conflict("built_in_source", "the built-in Contacts data source cannot be changed or archived; manage contacts through the contacts API"));
    }
    if row.status == "archived" {
        return Err(fail::conflict("data_source_archived", "the data source is archived"));
    }
    Ok(row)
}

pub fn update(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: UpdateBody = req::body(req)?;
    let row = mutable(biz, &body.data_source_id)?;
    let id = row.id;
    if body.content.is_some() && row.class != "unstructured" {
        return Err(fail::conflict("content_not_supported", "`content` applies only to unstructured data sources; upload an asset to change a structured source"));
    }
    let name = body.name.as_deref().map(clean_name).transpose()?;
    db::execute(
        "UPDATE data_sources SET name = COALESCE(?3, name), description = COALESCE(?4, description), status = COALESCE(?5, status), \
         content = COALESCE(?6, content), updated_at = ?7 WHERE business_id = ?1 AND id = ?2",
        &params![biz, &id, name, body.description, body.status, body.content.as_deref(), now()],
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
    if row.built_in {
        return Err(fail::conflict("built_in_source", "the built-in Contacts data source cannot be archived"));
    }
    let id = row.id;
    if row.status != "archived" {
        db::execute("UPDATE data_sources SET status = 'archived', updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &id, now()])?;
    }
    ok(&json!({"dataSource": render_one(biz, &id)?}))
}
