//! What the request path itself reads and writes in the shared schema, not
//! through a component: the API-key lookup, idempotency records, the jobs a
//! component enqueues, and the rule of which statements belong to the
//! transaction's owner. The native host runs these through libsql, the edge
//! build through Hrana pipelines over `wasi:http`; both through the one
//! statement trait, [`Statements`] (components/sql), so each statement is
//! written once.

use crate::admit::KeyRecord;
use crate::idempotency::RETENTION_SECONDS;
use switchboard_sql::{params, Columns, FromRow, Mismatch, Row};

/// One SQL value, bound or read, and the one statement trait: those of
/// every statement written once for several callers (components/sql).
pub use switchboard_sql::{Statements, Value};

/// Statements that would end, split or widen the owner's transaction (the
/// request's, or a write batch's) or change the connection: the host (or
/// the edge router) owns them, a component never runs them.
pub fn transaction_control(sql: &str) -> bool {
    let word: String = sql.trim_start().chars().take_while(|c| c.is_ascii_alphabetic()).collect::<String>().to_ascii_uppercase();
    matches!(word.as_str(), "BEGIN" | "COMMIT" | "END" | "ROLLBACK" | "SAVEPOINT" | "RELEASE" | "ATTACH" | "DETACH" | "VACUUM" | "PRAGMA")
}

/// True for statements that only read.
pub fn reads_only(sql: &str) -> bool {
    let head: String = sql.trim_start().chars().take(6).collect::<String>().to_ascii_uppercase();
    head.starts_with("SELECT") || head.starts_with("WITH")
}

/// The key behind a hash, revoked or not.
pub const FIND_KEY: &str = "SELECT id, business_id, scopes, revoked_at IS NOT NULL FROM api_keys WHERE key_hash = ?1";

/// A row of [`FIND_KEY`].
impl FromRow for KeyRecord {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let mut c = Columns::new(row);
        Ok(KeyRecord { key_id: c.read()?, business_id: c.read()?, scopes: c.read::<String>()?.split(',').filter(|s| !s.is_empty()).map(String::from).collect(), revoked: c.read()? })
    }
}

pub fn find_key<S: Statements>(sql: &S, key_hash: &str) -> Result<Option<KeyRecord>, S::Error>
where
    S::Error: From<Mismatch>,
{
    sql.query_one_as(FIND_KEY, &params![key_hash])
}

/// A job for the dispatcher, written in the caller's transaction.
pub struct NewJob {
    pub id: String,
    pub kind: String,
    pub business_id: String,
    pub payload_json: String,
    pub calls_out: bool,
    pub lane: Option<String>,
    pub delay_ms: u64,
}

pub fn enqueue_job<S: Statements>(sql: &S, job: NewJob, now_ms: i64) -> Result<(), S::Error> {
    sql.execute(
        "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms, calls_out, lane) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        &params![job.id, job.kind, job.business_id, job.payload_json, now_ms + job.delay_ms as i64, now_ms, job.calls_out, job.lane],
    )
    .map(|_| ())
}

/// A recorded answer of an idempotent mutation: (fingerprint, status, body).
pub type StoredResult = (String, u16, String);

/// A stored, unexpired result for this (business, operation, key).
pub fn stored_result<S: Statements>(sql: &S, business: &str, op: &str, key: &str, now_ms: i64) -> Result<Option<StoredResult>, S::Error>
where
    S::Error: From<Mismatch>,
{
    let oldest = now_ms - RETENTION_SECONDS * 1000;
    let row = sql.query_one_as::<(String, i64, String)>(
        "SELECT fingerprint, status, response_body FROM idempotency_records \
         WHERE business_id = ?1 AND operation_id = ?2 AND idem_key = ?3 AND created_at_ms >= ?4",
        &params![business, op, key, oldest],
    )?;
    Ok(row.map(|(fingerprint, status, body)| (fingerprint, u16::try_from(status).unwrap_or(500), body)))
}

/// Whether `business` is fenced in the database a write runs in: moving
/// out of it, or moved away (`moved_businesses`, issue 47's moves). Read
/// in the write's own transaction, so no write slips past a move's fence.
pub fn business_moving<S: Statements>(sql: &S, business: &str) -> Result<bool, S::Error> {
    Ok(sql.query_one("SELECT 1 FROM moved_businesses WHERE business_id = ?1", &params![business])?.is_some())
}

/// Stands in for a copy-once secret in a stored idempotency record.
pub const REDACTED: &str = "__switchboard_redacted_secret__";

// One argument per column of the record: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn record_result<S: Statements>(sql: &S, business: &str, op: &crate::Operation, key: &str, fingerprint: &str, status: u16, body: &str, now_ms: i64) -> Result<(), S::Error> {
    let mut body = body.to_string();
    if !op.secret_fields().is_empty() {
        if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&body) {
            for field in op.secret_fields() {
                if let Some(slot) = v.get_mut("data").and_then(|d| d.get_mut(*field)) {
                    *slot = serde_json::Value::String(REDACTED.into());
                }
            }
            body = v.to_string();
        }
    }
    sql.execute(
        "INSERT OR REPLACE INTO idempotency_records (business_id, operation_id, idem_key, fingerprint, status, response_body, created_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &params![business, op.id.as_str(), key, fingerprint, status, body, now_ms],
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    #[test]
    fn transaction_control_belongs_to_the_owner() {
        for sql in ["COMMIT", " rollback to request", "SAVEPOINT x", "release x", "BEGIN IMMEDIATE", "end", "PRAGMA synchronous=OFF", "ATTACH 'x' AS y", "VACUUM"] {
            assert!(super::transaction_control(sql), "{sql}");
        }
        for sql in ["SELECT 1", "INSERT INTO t VALUES (1)", "UPDATE t SET endpoint = 1", "WITH x AS (SELECT 1) SELECT * FROM x", "DELETE FROM t"] {
            assert!(!super::transaction_control(sql), "{sql}");
        }
    }
}
