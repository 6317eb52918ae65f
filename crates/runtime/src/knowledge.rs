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
//! Index maintenance is deferred (issue 52, point 3): a step stores its
//! vectors in `knowledge_vectors_pending` (migration 0043, no index: a
//! plain insert), and [`index_pending`], run by each node beside its job
//! runner, moves them into `knowledge_vectors` a few at a time, in
//! background turns of the write gate that end as soon as a request waits
//! (`INDEX_TURN`, `INDEX_TURN_TIME`). The DiskANN insert (a neighbour search
//! per vector, about 5 ms of a 32-passage step at 20-40k vectors) no longer
//! holds the gate for a whole step. Retrieval reads both tables.
//!
//! A business whose `ai` plugin declares embeddings (issue 40) has its
//! vectors made by that plugin instead, in the same table (of the same
//! dimension): `provider_choices.embeddings_model` names them, a start
//! leaves them alone whatever the server's model, and a change of that
//! choice re-embeds the business's sources ([`embeddings_changed`]).

use crate::db::params;
use anyhow::{Context, Result};
use std::time::{Duration, Instant};

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
            script.push_str("DELETE FROM knowledge_vectors_pending;\n");
            script.push_str(&vector_table_ddl(wanted as u32));
            script.push_str("\nUPDATE data_sources SET embedded_model = NULL WHERE embedded_model IS NOT NULL;\n");
        } else if embeddings.is_some_and(|e| !model.is_empty() && e.model != model) {
            // Not the vectors of businesses whose AI plugin makes its own.
            script.push_str(&format!(
                "DELETE FROM knowledge_vectors WHERE business_id NOT IN ({PLUGIN_EMBEDDERS});\n\
                 DELETE FROM knowledge_vectors_pending WHERE business_id NOT IN ({PLUGIN_EMBEDDERS});\n\
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
    db::execute(c, "DELETE FROM knowledge_vectors_pending WHERE business_id = ?1", params![business])?;
    db::execute(c, "UPDATE data_sources SET embedded_model = NULL WHERE business_id = ?1 AND embedded_model IS NOT NULL", params![business])?;
    let plugin = db::query_one_as::<i64>(c, "SELECT 1 FROM provider_choices WHERE business_id = ?1 AND interface = 'ai' AND embeddings_model IS NOT NULL", params![business])?.is_some();
    let server = db::query_one_as::<i64>(c, "SELECT 1 FROM knowledge_embedding WHERE id = 1 AND enabled = 1", params![])?.is_some();
    if !made || (!plugin && !server) {
        return Ok(());
    }
    backfill(c, "s.business_id = ?1", business)?;
    Ok(())
}

/// Vectors moved into the ANN index in one turn of the write gate at most.
const INDEX_TURN: i64 = 16;
/// A turn ends once it has held the gate this long, or as soon as a
/// request waits for the gate, whichever comes first (after one vector).
const INDEX_TURN_TIME: Duration = Duration::from_millis(2);
/// How long a turn waits for the gate (then the round ends: next round).
const INDEX_GATE_WAIT: Duration = Duration::from_secs(5);

/// Moves the vectors waiting in `knowledge_vectors_pending` into
/// `knowledge_vectors` (whose DiskANN index each insert updates), oldest
/// first, in short background turns of the write gate (see the module
/// documentation), for at most `for_at_most` (then the caller's loop comes
/// back). A vector the index refuses (of another dimension) is dropped with
/// a warning. Returns how many were moved. Several nodes on one primary may
/// run it at once: a vector moves once (`INSERT OR IGNORE`, then deleted).
pub fn index_pending(db: &Db, for_at_most: Duration) -> Result<usize> {
    let started = Instant::now();
    let mut moved = 0;
    while started.elapsed() < for_at_most {
        match index_turn(db)? {
            Some((n, _held)) => moved += n,
            None => break,
        }
    }
    Ok(moved)
}

/// One turn of [`index_pending`]: the vectors it moved and how long it held
/// the write gate; `None` when nothing waits (or the gate was not had).
fn index_turn(db: &Db) -> Result<Option<(usize, Duration)>> {
    let ids: Vec<i64> = {
        let c = db.read_conn()?;
        db::query_as(&c, "SELECT fts_rowid FROM knowledge_vectors_pending ORDER BY fts_rowid LIMIT ?1", params![INDEX_TURN])?
    };
    if ids.is_empty() {
        return Ok(None);
    }
    let gate = db.gate();
    let Some(mut turn) = db.background_gate(INDEX_GATE_WAIT) else { return Ok(None) };
    let held = Instant::now();
    let moved = turn.transaction(|c| {
        let mut n = 0;
        for id in &ids {
            if n > 0 && (gate.foreground_waiting() > 0 || held.elapsed() >= INDEX_TURN_TIME) {
                break;
            }
            let insert = db::execute(
                c,
                "INSERT OR IGNORE INTO knowledge_vectors (fts_rowid, business_id, data_source_id, version_id, scope, embedding) \
                 SELECT fts_rowid, business_id, data_source_id, version_id, scope, embedding FROM knowledge_vectors_pending WHERE fts_rowid = ?1",
                params![*id],
            );
            if let Err(e) = insert {
                tracing::warn!(passage = id, error = %e, "a vector the index refused was dropped");
            }
            db::execute(c, "DELETE FROM knowledge_vectors_pending WHERE fts_rowid = ?1", params![*id])?;
            n += 1;
        }
        Ok(n)
    })?;
    drop(turn);
    Ok(Some((moved, held.elapsed())))
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

    #[test]
    fn waiting_vectors_move_into_the_index() {
        let dir = std::env::temp_dir().join(format!("switchboard-knowledge-{}", uuid::Uuid::new_v4()));
        let db = Db::open(&dir).unwrap();
        prepare(&db, Some(&embeddings("m1", 3))).unwrap();
        let c = db.conn().unwrap();
        let blob = |v: [f32; 3]| crate::db::SqlValue::Blob(v.iter().flat_map(|x| x.to_le_bytes()).collect());
        for (id, v) in (1..=40).map(|i| (i, if i == 40 { [0.0, 0.0, 1.0] } else { [1.0, i as f32 / 100.0, 0.0] })) {
            db::execute(&c, "INSERT INTO knowledge_vectors_pending VALUES (?1, 'b', 's1', '', 'scope', ?2)", vec![id.into(), blob(v)]).unwrap();
        }
        // One of another dimension: refused by the index, dropped.
        db::execute(&c, "INSERT INTO knowledge_vectors_pending VALUES (41, 'b', 's1', '', 'scope', ?1)", vec![crate::db::SqlValue::Blob(vec![0; 8])]).unwrap();
        drop(c);
        assert_eq!(index_pending(&db, Duration::from_secs(60)).unwrap(), 41);
        assert_eq!(one::<i64>(&db, "SELECT COUNT(*) FROM knowledge_vectors_pending"), 0);
        assert_eq!(one::<i64>(&db, "SELECT COUNT(*) FROM knowledge_vectors"), 40);
        assert_eq!(one::<i64>(&db, "SELECT COUNT(*) FROM knowledge_vectors_ann_shadow"), 40, "every moved vector is in the index");
        let c = db.conn().unwrap();
        let ids: Vec<i64> = db::query_as(&c, "SELECT id FROM vector_top_k('knowledge_vectors_ann', vector32('[1, 0, 0]'), 1)", params![]).unwrap();
        assert_eq!(ids.len(), 1, "and answer its searches");
        drop(c);
        assert_eq!(index_pending(&db, Duration::from_secs(60)).unwrap(), 0, "nothing left");
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// How long a `data-sources.embed` step's write holds the write gate,
    /// with the index maintained in the step (before issue 52's point 3)
    /// and with it deferred (the step's insert into the waiting table, then
    /// the indexer's turns), at `SWITCHBOARD_VECTORS` (20,000) vectors of
    /// 64 dimensions already indexed. The step's statements as
    /// `components/data-sources/src/jobs/embed.rs` writes them, on the
    /// writer connection under the gate. Run:
    /// `cargo test --release -p switchboard-runtime gate_hold_per_embed_step -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn gate_hold_per_embed_step() {
        let n: i64 = std::env::var("SWITCHBOARD_VECTORS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
        let steps = 40;
        let dir = std::env::temp_dir().join(format!("switchboard-knowledge-{}", uuid::Uuid::new_v4()));
        let db = Db::open(&dir).unwrap();
        prepare(&db, Some(&embeddings("m1", 64))).unwrap();
        let mut rng = 0x9e3779b97f4a7c15u64;
        let mut vector = || -> Vec<u8> {
            (0..64)
                .flat_map(|_| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    ((rng % 2000) as f32 / 1000.0 - 1.0).to_le_bytes()
                })
                .collect()
        };
        let total = n + 2 * steps * 32;
        {
            let mut g = db.gate().lock();
            g.transaction(|c| {
                c.execute_many(
                    "INSERT INTO knowledge_fts (rowid, text, scope, business_id, data_source_id, version_id, item) VALUES (?1, 'passage ' || ?1, 'scope', 'b', 's1', '', ?1)",
                    (1..=total).map(|i| params![i]).collect(),
                )?;
                Ok(())
            })
            .unwrap();
            for chunk in (1..=n).collect::<Vec<_>>().chunks(1000) {
                g.transaction(|c| {
                    c.execute_many(
                        "INSERT INTO knowledge_vectors (fts_rowid, business_id, data_source_id, version_id, scope, embedding) VALUES (?1, 'b', 's1', '', 'scope', ?2)",
                        chunk.iter().map(|i| vec![(*i).into(), crate::db::SqlValue::Blob(vector())]).collect(),
                    )?;
                    Ok(())
                })
                .unwrap();
            }
        }
        // The step's write: 32 vectors, each kept only if its passage still has that text.
        let step = |table: &str, first: i64, vectors: Vec<Vec<u8>>| -> Duration {
            let mut g = db.gate().lock();
            let t = Instant::now();
            g.transaction(|c| {
                c.execute_many(
                    &format!(
                        "INSERT OR IGNORE INTO {table} (fts_rowid, business_id, data_source_id, version_id, scope, embedding) \
                         SELECT ?1, ?2, ?3, '', ?4, ?5 WHERE EXISTS (SELECT 1 FROM knowledge_fts WHERE rowid = ?1 AND text = ?6)"
                    ),
                    vectors.into_iter().enumerate().map(|(k, v)| params![first + k as i64, "b", "s1", "scope", v, format!("passage {}", first + k as i64)]).collect(),
                )?;
                Ok(())
            })
            .unwrap();
            t.elapsed()
        };
        let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
        let pct = |v: &mut Vec<f64>, p: f64| {
            v.sort_by(f64::total_cmp);
            v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
        };
        let (mut before, mut after, mut turns, mut moved) = (Vec::new(), Vec::new(), Vec::new(), 0);
        for s in 0..steps {
            // Alternating: a step as before, then one as now, each at about the same index size.
            before.push(ms(&step("knowledge_vectors", n + 1 + 2 * s * 32, (0..32).map(|_| vector()).collect())));
            after.push(ms(&step("knowledge_vectors_pending", n + 1 + (2 * s + 1) * 32, (0..32).map(|_| vector()).collect())));
            while let Some((k, held)) = index_turn(&db).unwrap() {
                turns.push(ms(&held));
                moved += k;
            }
        }
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        let (b, a, t) = (sum(&before) / steps as f64, sum(&after) / steps as f64, sum(&turns));
        println!(
            "{n} vectors indexed, {steps} steps of 32 each way: the gate held per step: index in the step mean {b:.2} ms (p50 {:.2}, max {:.2}); \
             deferred: the step mean {a:.2} ms (p50 {:.2}, max {:.2}), then {} indexer turns for {moved} vectors: mean {:.2} ms, p99 {:.2}, max {:.2} ({:.2} ms per 32 vectors)",
            pct(&mut before, 0.5),
            pct(&mut before, 1.0),
            pct(&mut after, 0.5),
            pct(&mut after, 1.0),
            turns.len(),
            t / turns.len() as f64,
            pct(&mut turns, 0.99),
            pct(&mut turns, 1.0),
            t / moved as f64 * 32.0,
        );
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
