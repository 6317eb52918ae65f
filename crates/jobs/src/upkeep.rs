//! What keeps the tables that grow with every job small and visible:
//! finished jobs purged after their retention, the webhook delivery log
//! after its own, the queue gauges of a scrape.

use super::*;

/// How long a finished job (done or dead) and its run records are kept: a
/// week to look into a delivery or a failure, then they go, so the jobs
/// table (every delivery's payload) does not grow for ever.
pub const FINISHED_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Finished jobs deleted per write transaction by `purge_finished`.
pub(crate) const PURGE_BATCH: i64 = 2_000;

/// Every (kind, state) the queue gauges were ever set for: an emptied queue
/// reads 0, not its last depth.
pub(crate) static QUEUE_LABELS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Sets the queue gauges for a scrape of `/metrics`: the depth and oldest
/// due age of pending and leased jobs per kind, and the rows ingestion
/// versions hold (all businesses together, over every database given).
pub fn queue_gauges<'a>(dbs: impl IntoIterator<Item = &'a Db>) {
    let now = crate::clock::now_ms();
    // (kind, state) → (count, oldest due); rows and versions of ingestion.
    let mut queued: Vec<((String, String), (i64, i64))> = Vec::new();
    let (mut rows_held, mut versions) = (0i64, 0i64);
    for db in dbs {
        let Ok(conn) = db.conn() else { continue };
        let rows: Vec<(String, String, i64, i64)> = db::query_as(
            &conn,
            "SELECT kind, 'pending', COUNT(*), MIN(due_at_ms) FROM jobs INDEXED BY jobs_pending_due WHERE state = 'pending' GROUP BY kind \
             UNION ALL SELECT kind, 'leased', COUNT(*), MIN(due_at_ms) FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' GROUP BY kind",
            vec![],
        )
        .unwrap_or_default();
        for (kind, state, n, due) in rows {
            let key = (kind, state);
            match queued.iter_mut().find(|(k, _)| *k == key) {
                Some((_, (count, oldest))) => {
                    *count += n;
                    *oldest = (*oldest).min(due);
                }
                None => queued.push((key, (n, due))),
            }
        }
        let held = db::query_one_as::<(i64, i64)>(&conn, "SELECT IFNULL(SUM(row_count), 0), COUNT(*) FROM ingestion_versions", db::params![]);
        if let Ok(Some((rows, count))) = held {
            rows_held += rows;
            versions += count;
        }
    }
    let mut seen = QUEUE_LABELS.lock();
    for (kind, state) in seen.iter() {
        let labels = [("kind", kind.clone()), ("state", state.clone())];
        ::metrics::gauge!("switchboard_jobs_queued", &labels).set(0.0);
        ::metrics::gauge!("switchboard_jobs_oldest_due_age_seconds", &labels).set(0.0);
    }
    for (key, (count, oldest)) in queued {
        if !seen.contains(&key) {
            seen.push(key.clone());
        }
        let labels = [("kind", key.0), ("state", key.1)];
        ::metrics::gauge!("switchboard_jobs_queued", &labels).set(count as f64);
        let age = ((now - oldest).max(0) as f64) / 1000.0;
        ::metrics::gauge!("switchboard_jobs_oldest_due_age_seconds", &labels).set(age);
    }
    drop(seen);
    ::metrics::gauge!("switchboard_ingestion_rows").set(rows_held as f64);
    ::metrics::gauge!("switchboard_ingestion_versions").set(versions as f64);
}

/// Deletes the jobs finished before `FINISHED_RETENTION` (by the time they
/// were last due, about when their last step ran), with their run records,
/// a batch per short write transaction so writers never wait long. Returns
/// how many jobs went.
pub fn purge_finished(db: &Db, now_ms: i64) -> u64 {
    let cutoff = now_ms - FINISHED_RETENTION.as_millis() as i64;
    let mut purged = 0;
    for state in ["done", "dead"] {
        loop {
            // Found by a read, outside the write gate: no index holds
            // finished jobs (every state change would rewrite it), so this
            // scans the table, oldest rows first.
            let picked = db.read_conn().and_then(|c| db::query_as::<String>(&c, "SELECT id FROM jobs WHERE state = ?1 AND due_at_ms < ?2 LIMIT ?3", db::params![state, cutoff, PURGE_BATCH]));
            let ids: Vec<String> = match picked {
                Ok(ids) => ids,
                Err(e) => {
                    tracing::warn!(error = %e, "purging finished jobs failed");
                    return purged;
                }
            };
            if ids.is_empty() {
                break;
            }
            let Some(mut gate) = db.background_gate(Duration::from_secs(5)) else { return purged };
            let found = ids.len();
            let deleted = gate.transaction(|c| {
                c.execute_many("DELETE FROM job_runs WHERE job_id = ?1", ids.iter().map(|id| db::params![id]).collect())?;
                Ok(c.execute_many("DELETE FROM jobs WHERE id = ?1 AND state = ?2", ids.iter().map(|id| db::params![id, state]).collect())?)
            });
            match deleted {
                Ok(n) => purged += n,
                Err(e) => {
                    tracing::warn!(error = %e, "purging finished jobs failed");
                    return purged;
                }
            }
            if found < PURGE_BATCH as usize {
                break;
            }
        }
    }
    purged
}

/// The default of `serve --webhook-log-retention-days`: how long the
/// webhook delivery log (`webhook_attempts`: every attempt, and the event a
/// redelivery sends) is kept.
pub const WEBHOOK_LOG_RETENTION_DAYS: u32 = 30;

/// Deletes the webhook delivery log's attempts made before `retention`
/// (by their uuid v7 ids, which carry the time they were recorded: the
/// primary key's index finds them, oldest first), a batch per short write
/// transaction. An event whose first attempt went can no longer be
/// redelivered (`404 event_not_found`). Returns how many attempts went.
pub fn purge_webhook_log(db: &Db, now_ms: i64, retention: Duration) -> u64 {
    let cutoff = v7_floor(now_ms - retention.as_millis() as i64);
    let mut purged = 0;
    loop {
        let picked = db.read_conn().and_then(|c| db::query_as::<String>(&c, "SELECT id FROM webhook_attempts WHERE id < ?1 ORDER BY id LIMIT ?2", db::params![&cutoff, PURGE_BATCH]));
        let ids: Vec<String> = match picked {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!(error = %e, "purging the webhook delivery log failed");
                return purged;
            }
        };
        if ids.is_empty() {
            return purged;
        }
        let Some(mut gate) = db.background_gate(Duration::from_secs(5)) else { return purged };
        let found = ids.len();
        match gate.transaction(|c| Ok(c.execute_many("DELETE FROM webhook_attempts WHERE id = ?1", ids.iter().map(|id| db::params![id]).collect())?)) {
            Ok(n) => purged += n,
            Err(e) => {
                tracing::warn!(error = %e, "purging the webhook delivery log failed");
                return purged;
            }
        }
        if found < PURGE_BATCH as usize {
            return purged;
        }
    }
}

/// The smallest uuid v7 of the millisecond `ms`, as text: every v7 id made
/// before that millisecond sorts below it (the first 48 bits are the time,
/// in lowercase hex like the ids).
fn v7_floor(ms: i64) -> String {
    let ms = ms.max(0) as u64;
    format!("{:08x}-{:04x}-7000-8000-000000000000", ms >> 16, ms & 0xffff)
}
