//! What the request path itself reads and writes in the shared schema, not
//! through a component: the API-key lookup, idempotency records, the jobs a
//! component enqueues, and the rule of which statements belong to the
//! transaction's owner. The native host runs these through libsql, the edge
//! build through Hrana pipelines over `wasi:http`; both through [`Sql`], so
//! each statement is written once.

use crate::admit::KeyRecord;
use crate::idempotency::RETENTION_SECONDS;

/// One SQL value, bound or read: the one value enum of the statements
/// written once for several callers (components/sql).
pub use switchboard_sql::Value;

/// A connection (or a stream) inside the caller's transaction.
pub trait Sql {
    fn query(&mut self, sql: &str, params: Vec<Value>) -> Result<Vec<Vec<Value>>, String>;
    fn execute(&mut self, sql: &str, params: Vec<Value>) -> Result<u64, String>;
}

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

/// Reads one row of [`FIND_KEY`].
pub fn key_record(row: &[Value]) -> KeyRecord {
    KeyRecord {
        key_id: row[0].text(),
        business_id: row[1].text(),
        scopes: row[2].text().split(',').filter(|s| !s.is_empty()).map(String::from).collect(),
        revoked: matches!(row[3], Value::Integer(1)),
    }
}

pub fn find_key(sql: &mut dyn Sql, key_hash: &str) -> Result<Option<KeyRecord>, String> {
    let rows = sql.query(FIND_KEY, vec![Value::Text(key_hash.to_string())])?;
    Ok(rows.first().map(|r| key_record(r)))
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

pub fn enqueue_job(sql: &mut dyn Sql, job: NewJob, now_ms: i64) -> Result<(), String> {
    sql.execute(
        "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms, calls_out, lane) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        vec![
            Value::Text(job.id),
            Value::Text(job.kind),
            Value::Text(job.business_id),
            Value::Text(job.payload_json),
            Value::Integer(now_ms + job.delay_ms as i64),
            Value::Integer(now_ms),
            Value::Integer(job.calls_out as i64),
            job.lane.map(Value::Text).unwrap_or(Value::Null),
        ],
    )
    .map(|_| ())
}

/// A recorded answer of an idempotent mutation: (fingerprint, status, body).
pub type StoredResult = (String, u16, String);

/// A stored, unexpired result for this (business, operation, key).
pub fn stored_result(sql: &mut dyn Sql, business: &str, op: &str, key: &str, now_ms: i64) -> Result<Option<StoredResult>, String> {
    let oldest = now_ms - RETENTION_SECONDS * 1000;
    let rows = sql.query(
        "SELECT fingerprint, status, response_body FROM idempotency_records \
         WHERE business_id = ?1 AND operation_id = ?2 AND idem_key = ?3 AND created_at_ms >= ?4",
        vec![Value::Text(business.into()), Value::Text(op.into()), Value::Text(key.into()), Value::Integer(oldest)],
    )?;
    Ok(rows.into_iter().next().map(|r| (r[0].text(), r[1].text().parse().unwrap_or(500), r[2].text())))
}

/// Whether `business` is fenced in the database a write runs in: moving
/// out of it, or moved away (`moved_businesses`, issue 47's moves). Read
/// in the write's own transaction, so no write slips past a move's fence.
pub fn business_moving(sql: &mut dyn Sql, business: &str) -> Result<bool, String> {
    Ok(!sql.query("SELECT 1 FROM moved_businesses WHERE business_id = ?1", vec![Value::Text(business.into())])?.is_empty())
}

/// Stands in for a copy-once secret in a stored idempotency record.
pub const REDACTED: &str = "__switchboard_redacted_secret__";

// One argument per column of the record: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn record_result(sql: &mut dyn Sql, business: &str, op: &crate::Operation, key: &str, fingerprint: &str, status: u16, body: &str, now_ms: i64) -> Result<(), String> {
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
        vec![
            Value::Text(business.into()),
            Value::Text(op.id.into()),
            Value::Text(key.into()),
            Value::Text(fingerprint.into()),
            Value::Integer(status as i64),
            Value::Text(body),
            Value::Integer(now_ms),
        ],
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
