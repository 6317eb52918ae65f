//! The vector store of grounded agents (issue 19), prepared at `serve` start.
//!
//! Passages of unstructured sources live in the FTS5 table `knowledge_fts`
//! (migration 0017); with an embeddings model (`--ai-embeddings-model`) each
//! also gets a vector in `knowledge_vectors`, keyed by the passage's FTS
//! rowid, in an `F32_BLOB(<dimensions>)` column indexed with libSQL's
//! `libsql_vector_idx` (DiskANN, cosine). The data-sources area's
//! `data-sources.embed` job writes the vectors; agent turns read them
//! (`components/agent-runtime/src/grounding.rs`).
//!
//! The column's dimension is a setting, so the table is made here rather
//! than by a migration; `knowledge_embedding` (migration 0018) remembers the
//! model and dimension the stored vectors came from. At start:
//!
//! - another dimension: the table is made again (empty);
//! - another model: its vectors are deleted (vectors of two models are not
//!   comparable);
//! - then every unstructured source whose content is not embedded with this
//!   model gets a `data-sources.embed` job (the backfill).
//!
//! Without a model the table is kept as it is and `enabled` is 0, so content
//! changes enqueue nothing and retrieval is full-text only.
//!
//! A business whose `ai` plugin declares embeddings (issue 40) has its
//! vectors made by that plugin instead, in the same table (of the same
//! dimension): `provider_choices.embeddings_model` names them, a start
//! leaves them alone whatever the server's model, and a change of that
//! choice re-embeds the business's sources ([`embeddings_changed`]).

use crate::db::params;
use anyhow::{Context, Result};

use crate::db::{self, Db};
use switchboard_job_kinds::data_sources::{embed_lane, DataSourcesJob, Embed};
use switchboard_storage::jobs;

/// The embeddings model (`serve --ai-embeddings-model`): where vectors come
/// from and how long they are.
#[derive(Debug, Clone)]
pub struct Embeddings {
    pub url: String,
    pub model: String,
    pub dimensions: u32,
    /// Sent as `dimensions` only when set explicitly (models that cannot
    /// shorten their vectors refuse the parameter).
    pub ask_dimensions: bool,
    pub api_key: Option<String>,
}

/// The dimension of vectors when `--ai-embeddings-dimensions` is not given
/// (the native size of the common small OpenAI-compatible models).
pub const DEFAULT_DIMENSIONS: u32 = 1536;

impl Embeddings {
    /// The model `model` at `url`, of `dimensions` (asked of the model only
    /// when given), else [`DEFAULT_DIMENSIONS`].
    pub fn new(url: &str, model: &str, dimensions: Option<u32>, api_key: Option<String>) -> Embeddings {
        Embeddings { url: url.to_string(), model: model.to_string(), dimensions: dimensions.unwrap_or(DEFAULT_DIMENSIONS), ask_dimensions: dimensions.is_some(), api_key }
    }
}

/// The vector table and its index for vectors of `dimensions` floats.
fn vector_table_ddl(dimensions: u32) -> String {
    format!(
        "CREATE TABLE knowledge_vectors (
            fts_rowid      INTEGER PRIMARY KEY,
            business_id    TEXT NOT NULL,
            data_source_id TEXT NOT NULL,
            version_id     TEXT NOT NULL,
            scope          TEXT NOT NULL,
            embedding      F32_BLOB({dimensions}) NOT NULL
        );
        CREATE INDEX knowledge_vectors_scope ON knowledge_vectors (scope);
        CREATE INDEX knowledge_vectors_source ON knowledge_vectors (data_source_id, version_id);
        CREATE INDEX knowledge_vectors_ann ON knowledge_vectors (libsql_vector_idx(embedding, 'metric=cosine', 'compress_neighbors=float1bit', 'max_neighbors=16'));"
    )
}

/// Brings the vector table in line with `embeddings` (see the module
/// documentation); returns how many backfill jobs were enqueued.
pub fn prepare(db: &Db, embeddings: Option<&Embeddings>) -> Result<usize> {
    let gate = db.gate();
    let _writing = gate.lock();
    let c = db.conn()?;
    // Read and change in one write transaction: nodes starting together on
    // one primary make the table once.
    db::in_transaction(&c, || {
        let row = db::query_one_as::<(String, Option<i64>)>(&c, "SELECT IFNULL(model, ''), dimensions FROM knowledge_embedding WHERE id = 1", params![])?;
        let (model, dimensions) = match row {
            Some((m, Some(d))) => (m, d),
            _ => (String::new(), 0),
        };
        let wanted = embeddings.map_or(if dimensions == 0 { DEFAULT_DIMENSIONS as i64 } else { dimensions }, |e| e.dimensions as i64);
        let mut script = String::new();
        if dimensions != wanted {
            if dimensions != 0 {
                script.push_str("DROP TABLE knowledge_vectors;\n");
            }
            script.push_str(&vector_table_ddl(wanted as u32));
            script.push_str("\nUPDATE data_sources SET embedded_model = NULL WHERE embedded_model IS NOT NULL;\n");
        } else if embeddings.is_some_and(|e| !model.is_empty() && e.model != model) {
            // Not the vectors of businesses whose AI plugin makes its own.
            script.push_str(&format!(
                "DELETE FROM knowledge_vectors WHERE business_id NOT IN ({PLUGIN_EMBEDDERS});\n\
                 UPDATE data_sources SET embedded_model = NULL WHERE embedded_model IS NOT NULL AND business_id NOT IN ({PLUGIN_EMBEDDERS});\n"
            ));
        }
        if !script.is_empty() {
            db::block(c.execute_batch(&script)).map_err(|e| anyhow::anyhow!("preparing the vector table: {e}"))?;
        }
        let model_after = embeddings.map_or(if dimensions == wanted { model } else { String::new() }, |e| e.model.clone());
        db::execute(&c, "UPDATE knowledge_embedding SET model = NULLIF(?1, ''), dimensions = ?2, enabled = ?3 WHERE id = 1", params![model_after, wanted, embeddings.is_some()])?;
        Ok(())
    })?;
    // The backfill: the sources not embedded with the model that serves
    // their business (its AI plugin's, else this server's).
    let serving = "COALESCE((SELECT p.embeddings_model FROM provider_choices p WHERE p.business_id = s.business_id AND p.interface = 'ai'), ?1)";
    match embeddings {
        Some(e) => backfill(&c, &format!("IFNULL(s.embedded_model, '') <> {serving}"), &e.model),
        None => backfill(&c, &format!("s.business_id IN ({PLUGIN_EMBEDDERS}) AND IFNULL(s.embedded_model, '') <> {serving}"), ""),
    }
}

/// The businesses whose `ai` plugin makes their embeddings.
const PLUGIN_EMBEDDERS: &str = "SELECT business_id FROM provider_choices WHERE interface = 'ai' AND embeddings_model IS NOT NULL";

/// One `data-sources.embed` job per unstructured source with content that
/// matches `filter` (over `s`, the source; `?1` is `param`) and has no embed
/// job waiting already (in its lane: ?2 is the lanes' prefix, the kind's
/// `embed_lane` of no source). Returns how many were enqueued.
fn backfill(c: &db::Connection, filter: &str, param: &str) -> Result<usize> {
    let sources: Vec<(String, String)> = db::query_as(
        c,
        &format!(
            "SELECT s.business_id, s.id FROM data_sources s \
             WHERE s.class = 'unstructured' AND s.status <> 'archived' AND IFNULL(s.content, '') <> '' AND {filter} \
               AND NOT EXISTS (SELECT 1 FROM jobs j INDEXED BY jobs_lane_ready WHERE j.lane = ?2 || s.id AND j.lane IS NOT NULL AND j.state = 'pending') \
               AND NOT EXISTS (SELECT 1 FROM jobs j INDEXED BY jobs_leased WHERE j.state = 'leased' AND j.lane = ?2 || s.id)"
        ),
        params![param, embed_lane("")],
    )?;
    for (business, source) in &sources {
        // The area's own kind: its options give the source's lane.
        jobs::enqueue(c, business, &DataSourcesJob::Embed(Embed::start(source))).context("enqueuing the embeddings backfill")?;
    }
    Ok(sources.len())
}

/// The model that embeds `business`'s passages changed (its `ai` plugin
/// declares embeddings now, another model, or no longer): its vectors,
/// of another model, are deleted, and its sources embedded again by
/// whichever model serves it now (none: full-text only). In the caller's
/// transaction.
pub fn embeddings_changed(c: &db::Connection, business: &str) -> Result<()> {
    // A data dir no `serve` has opened yet has no vector table: nothing stored.
    let made = db::query_one_as::<i64>(c, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'knowledge_vectors'", params![])?.is_some();
    if made {
        db::execute(c, "DELETE FROM knowledge_vectors WHERE business_id = ?1", params![business])?;
    }
    db::execute(c, "UPDATE data_sources SET embedded_model = NULL WHERE business_id = ?1 AND embedded_model IS NOT NULL", params![business])?;
    let plugin = db::query_one_as::<i64>(c, "SELECT 1 FROM provider_choices WHERE business_id = ?1 AND interface = 'ai' AND embeddings_model IS NOT NULL", params![business])?.is_some();
    let server = db::query_one_as::<i64>(c, "SELECT 1 FROM knowledge_embedding WHERE id = 1 AND enabled = 1", params![])?.is_some();
    if !made || (!plugin && !server) {
        return Ok(());
    }
    backfill(c, "s.business_id = ?1", business)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embeddings(model: &str, dimensions: u32) -> Embeddings {
        Embeddings { url: String::new(), model: model.into(), dimensions, ask_dimensions: false, api_key: None }
    }

    fn one<T: db::FromRow>(db: &Db, sql: &str) -> T {
        let c = db.conn().unwrap();
        db::query_one_as(&c, sql, params![]).unwrap().unwrap()
    }

    #[test]
    fn the_vector_table_follows_the_model_and_its_dimension() {
        let dir = std::env::temp_dir().join(format!("switchboard-knowledge-{}", uuid::Uuid::new_v4()));
        let db = Db::open(&dir).unwrap();
        // Without a model: a table of the default dimension, disabled.
        assert_eq!(prepare(&db, None).unwrap(), 0);
        assert_eq!(one::<(i64, bool)>(&db, "SELECT dimensions, enabled FROM knowledge_embedding"), (1536, false));
        let c = db.conn().unwrap();
        let v = |x: f32| format!("[{x}, 0, 1]");
        db::execute(&c, "INSERT INTO data_sources (id, business_id, name, class, kind, built_in, status, content, created_at, updated_at) VALUES ('s1', 'b', 'Notes', 'unstructured', 'text', 0, 'active', 'Open 9 to 5.', '', '')", vec![]).unwrap();
        drop(c);
        // A model of 3 dimensions: the table is made again, and the source is backfilled.
        assert_eq!(prepare(&db, Some(&embeddings("m1", 3))).unwrap(), 1);
        assert_eq!(prepare(&db, Some(&embeddings("m1", 3))).unwrap(), 0, "a waiting job is not enqueued twice");
        // The area's kind, in the source's lane, calling out.
        let job = one::<(String, String, String, bool, String)>(&db, "SELECT kind, business_id, payload, calls_out, lane FROM jobs");
        assert_eq!(job, ("data-sources.embed".into(), "b".into(), r#"{"sourceId":"s1","after":0}"#.into(), true, "embed:s1".into()));
        let c = db.conn().unwrap();
        for (id, x) in [(1, 1.0f32), (2, -1.0), (3, 0.9)] {
            db::execute(&c, "INSERT INTO knowledge_vectors VALUES (?1, 'b', 's1', '', 'scope', vector32(?2))", params![id, v(x)]).unwrap();
        }
        // libSQL's own vector search answers over the index.
        let mut ids: Vec<i64> = db::query_as(&c, "SELECT id FROM vector_top_k('knowledge_vectors_ann', vector32('[1, 0, 1]'), 2)", params![]).unwrap();
        ids.sort();
        assert_eq!(ids, vec![1, 3]);
        drop(c);
        // Another model of the same dimension: its vectors are gone.
        db::execute(&db.conn().unwrap(), "DELETE FROM jobs", vec![]).unwrap();
        db::execute(&db.conn().unwrap(), "UPDATE data_sources SET embedded_model = 'm1'", vec![]).unwrap();
        assert_eq!(prepare(&db, Some(&embeddings("m2", 3))).unwrap(), 1);
        assert_eq!(one::<i64>(&db, "SELECT COUNT(*) FROM knowledge_vectors"), 0);
        assert_eq!(one::<(String, bool)>(&db, "SELECT model, enabled FROM knowledge_embedding"), ("m2".into(), true));
        // Off again: kept, disabled.
        assert_eq!(prepare(&db, None).unwrap(), 0);
        assert_eq!(one::<(String, i64, bool)>(&db, "SELECT model, dimensions, enabled FROM knowledge_embedding"), ("m2".into(), 3, false));
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
