//! Statuses a messaging provider pushed (`pushed_statuses`, stored by the
//! host's provider events route, host/src/provider_events.rs): read by the
//! messenger adapter's `track` before it asks the plugin, kept a week.

use crate::db::{self, params};
use crate::engine::bindings::dispatcher_world::switchboard::provider::messenger::{ProviderError, StatusReport};

/// How long a pushed status is kept: its delivery job has long used it.
pub const KEEP_PUSHED_MS: i64 = 7 * 24 * 3600 * 1000;

/// Deletes pushed statuses older than [`KEEP_PUSHED_MS`] (the maintenance
/// loop, hourly).
pub fn purge(db: &crate::db::Db) {
    let Some(_gate) = db.write_gate(std::time::Duration::from_secs(5)) else { return };
    if let Ok(c) = db.conn() {
        let oldest = crate::clock::now_ms() - KEEP_PUSHED_MS;
        let _ = db::execute(&c, "DELETE FROM pushed_statuses WHERE received_at_ms < ?1", params![oldest]);
    }
}

/// Delivery statuses in the order a message moves through them.
pub fn rank(status: &str) -> Option<u8> {
    Some(match status {
        "submitted" => 0,
        "accepted" => 1,
        "sent" => 2,
        "delivered" => 3,
        "read" => 4,
        "failed" => 5,
        _ => return None,
    })
}

/// The next pushed status after `last` for a message, and whether another
/// one is stored after it.
pub fn next_pushed(conn: &db::Connection, business: &str, provider_message_id: &str, last: &str) -> anyhow::Result<Option<(StatusReport, bool)>> {
    let rows: Vec<(String, String, Option<String>, Option<String>)> = db::query_as(
        conn,
        "SELECT status, provider_status, failure_code, failure_message FROM pushed_statuses WHERE business_id = ?1 AND provider_message_id = ?2",
        params![business, provider_message_id],
    )?;
    let last = rank(last).unwrap_or(0);
    let mut after: Vec<(u8, _)> = rows.into_iter().filter_map(|r| rank(&r.0).filter(|k| *k > last).map(|k| (k, r))).collect();
    after.sort_by_key(|(k, _)| *k);
    let more = after.len() > 1;
    let Some((_, (status, provider_status, code, message))) = after.into_iter().next() else { return Ok(None) };
    let failure = (status == "failed").then(|| ProviderError { code: code.unwrap_or_default(), message: message.unwrap_or_default(), retryable: false, reference: None });
    // Nothing follows a read or failed message.
    let more = more && !matches!(status.as_str(), "read" | "failed");
    Ok(Some((StatusReport { status, provider_status, failure }, more)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushed_statuses_are_read_in_order_and_purged_after_a_week() {
        let dir = std::env::temp_dir().join(format!("switchboard-pushed-{}", uuid::Uuid::new_v4()));
        let db = crate::db::Db::open(&dir).unwrap();
        let now = crate::clock::now_ms();
        {
            let c = db.conn().unwrap();
            for (id, status, at) in [("p1", "read", now), ("p1", "sent", now), ("p1", "delivered", now), ("p2", "sent", now - KEEP_PUSHED_MS - 1)] {
                db::execute(&c, "INSERT INTO pushed_statuses (business_id, provider_message_id, status, provider_status, received_at_ms) VALUES ('b', ?1, ?2, ?2, ?3)", params![id, status, at])
                    .unwrap();
            }
            // Arrival order does not matter: the next status after the last one.
            let (r, more) = next_pushed(&c, "b", "p1", "submitted").unwrap().unwrap();
            assert_eq!((r.status.as_str(), more), ("sent", true));
            let (r, more) = next_pushed(&c, "b", "p1", "delivered").unwrap().unwrap();
            assert_eq!((r.status.as_str(), more), ("read", false));
            assert!(next_pushed(&c, "b", "p1", "read").unwrap().is_none());
            assert!(next_pushed(&c, "other", "p1", "submitted").unwrap().is_none(), "another business's statuses are not read");
        }
        purge(&db);
        let c = db.conn().unwrap();
        assert_eq!(db::query_as::<String>(&c, "SELECT DISTINCT provider_message_id FROM pushed_statuses", params![]).unwrap(), ["p1"]);
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }
}
