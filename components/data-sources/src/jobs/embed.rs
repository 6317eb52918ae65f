//! Job kind `data-sources.embed`: gives every passage of an unstructured
//! source's content a vector (issue 19, semantic retrieval), in bounded
//! steps.
//!
//! Enqueued when the content is set or changed while `serve` runs with an
//! embeddings model or the business's AI plugin declares embeddings
//! ([`enqueue_if_enabled`]), when that choice changes, and by `serve` at start for
//! every source not embedded with the current model (the backfill,
//! `crates/runtime/src/knowledge.rs`). One lane per source, so a source's jobs run one
//! at a time.
//!
//! A step takes the next [`BATCH`] passages after the cursor (the passages'
//! FTS rowids rise), asks the host's `ai.embed` for their vectors (the step
//! calls out, so it holds no write lock meanwhile) and stores each vector
//! beside its passage, with the cursor, in the step's fenced transaction: a
//! crash or a lost lease rolls the step back and the next run starts from
//! the last committed cursor, so a passage is stored once and at most one
//! batch is asked for again. A passage replaced while its batch was out
//! (the content changed) is not stored: the vector is kept only when the
//! passage still has the text that was embedded. When no passage is left the
//! source is marked embedded with the model.
//!
//! The vectors go to `knowledge_vectors_pending` (a plain table), not into
//! the ANN index: each node's vector indexer (`index_pending`,
//! `crates/runtime/src/knowledge.rs`) moves them there in short turns of the
//! write gate, so a step holds the gate for its plain inserts only (issue 52,
//! point 3). Retrieval finds them in either table.

use switchboard_guest::ai;
use switchboard_guest::db;
use switchboard_guest::job::{self, retry, run_step, AreaJob};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{knowledge, params, Failure, Value};

use super::DataSourcesJob;

/// Passages embedded per step (one request to the embeddings endpoint).
pub const BATCH: usize = 32;
/// Endpoint failures retried (with backoff) before the job gives up; the
/// next content change or `serve` start tries again.
const MAX_ATTEMPTS: u32 = 8;

/// The payload (the cursor), declared with the kind in `switchboard-job-kinds`.
pub use switchboard_guest::job_kinds::data_sources::Embed as Payload;

/// The model `biz`'s vectors are made with: its AI plugin's when that
/// plugin declares embeddings (the host asks it), else the server's while
/// `serve` runs with one.
pub fn enabled_model(biz: &str) -> Result<Option<String>, Failure> {
    Ok(db::query_one_as::<Option<String>>(
        "SELECT COALESCE((SELECT embeddings_model FROM provider_choices WHERE business_id = ?1 AND interface = 'ai'), \
         (SELECT model FROM knowledge_embedding WHERE id = 1 AND enabled = 1))",
        &params![biz],
    )?
    .flatten())
}

/// After an unstructured source's content changed (its passages were
/// indexed again by `knowledge::index_content`): the source is no longer
/// embedded, and with an embeddings model its job is enqueued.
pub fn enqueue_if_enabled(biz: &str, source_id: &str) -> Result<(), Failure> {
    db::execute("UPDATE data_sources SET embedded_model = NULL WHERE business_id = ?1 AND id = ?2", &params![biz, source_id])?;
    if enabled_model(biz)?.is_some() {
        job::enqueue(biz, &DataSourcesJob::Embed(Payload::start(source_id)))?;
    }
    Ok(())
}

pub fn run(job: &Job, p: Payload) -> Outcome {
    run_step("while embedding", || step(job, p))
}

fn step(job: &Job, p: Payload) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let Some(model) = enabled_model(biz)? else { return Ok(Outcome::Done) };
    let live = db::query_one("SELECT 1 FROM data_sources WHERE business_id = ?1 AND id = ?2 AND class = 'unstructured' AND status <> 'archived'", &params![biz, &p.source_id])?;
    if live.is_none() {
        return Ok(Outcome::Done);
    }
    let scope = knowledge::scope_token(&p.source_id, "");
    let batch: Vec<(i64, String)> = db::query_as(
        &format!(
            "SELECT rowid, text FROM knowledge_fts WHERE knowledge_fts MATCH ?1 AND rowid > ?2 AND business_id = ?3 \
             AND NOT EXISTS (SELECT 1 FROM knowledge_vectors v WHERE v.fts_rowid = knowledge_fts.rowid) \
             AND NOT EXISTS (SELECT 1 FROM knowledge_vectors_pending p WHERE p.fts_rowid = knowledge_fts.rowid) ORDER BY rowid LIMIT {BATCH}"
        ),
        &params![knowledge::scope_query(&p.source_id, ""), p.after, biz],
    )?;
    if batch.is_empty() {
        db::execute("UPDATE data_sources SET embedded_model = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &p.source_id, model])?;
        return Ok(Outcome::Done);
    }
    let texts: Vec<String> = batch.iter().map(|(_, text)| text.clone()).collect();
    let vectors = match ai::embed(&texts) {
        Ok(Some(v)) => v,
        Ok(None) => return Ok(Outcome::Done),
        Err(e) if job.attempt >= MAX_ATTEMPTS => return Ok(Outcome::Dead(format!("embeddings failed {MAX_ATTEMPTS} times: {e}"))),
        Err(e) => return Ok(retry(job.attempt, e)),
    };
    // The index refuses vectors of another length (the table's column is
    // of the dimension `serve` was started with): refused here, before
    // they wait for it, as the insert into the index refused them before.
    let dimensions = db::query_one_as::<i64>("SELECT dimensions FROM knowledge_embedding WHERE id = 1", &params![])?.unwrap_or(0);
    if let Some(v) = vectors.iter().find(|v| v.len() as i64 != dimensions) {
        let e = format!("the embeddings model gave vectors of {} dimensions, the vector table holds {dimensions}", v.len());
        return Ok(if job.attempt >= MAX_ATTEMPTS { Outcome::Dead(e) } else { retry(job.attempt, e) });
    }
    let rows: Vec<Vec<Value>> = batch.iter().zip(vectors).map(|((rowid, text), v)| params![*rowid, biz, &p.source_id, &scope, knowledge::vector_blob(&v), text]).collect();
    db::execute_many(
        "INSERT OR IGNORE INTO knowledge_vectors_pending (fts_rowid, business_id, data_source_id, version_id, scope, embedding) \
         SELECT ?1, ?2, ?3, '', ?4, ?5 WHERE EXISTS (SELECT 1 FROM knowledge_fts WHERE rowid = ?1 AND text = ?6) \
           AND NOT EXISTS (SELECT 1 FROM knowledge_vectors WHERE fts_rowid = ?1)",
        &rows,
    )?;
    let after = batch.last().map_or(p.after, |(rowid, _)| *rowid);
    Ok(DataSourcesJob::Embed(Payload { source_id: p.source_id, after }).continue_after(0))
}
