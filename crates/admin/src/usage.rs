//! When API keys and console sessions were last used. A request only notes
//! the time in memory; a loop of the server writes the notes in one short
//! transaction every [`FLUSH_EVERY`], so a read never writes. The stored
//! times are therefore at most that much behind (the console says "last
//! used", not "last request"), and a session's idle end is judged on them.

use crate::db::{self, Db};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

pub const FLUSH_EVERY: Duration = Duration::from_secs(15);

/// key id or `session:<id>` → the latest use (ms since the epoch).
static SEEN: LazyLock<Mutex<HashMap<String, i64>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// Notes a use of an API key (`id`) or a session (`session:<id>`).
pub fn note(id: &str) {
    let now = crate::clock::now_ms();
    let mut seen = SEEN.lock();
    match seen.get_mut(id) {
        Some(at) => *at = now,
        None => {
            seen.insert(id.to_string(), now);
        }
    }
}

/// A use noted in this process and not yet written (ms since the epoch).
pub fn pending(id: &str) -> Option<i64> {
    SEEN.lock().get(id).copied()
}

/// Writes what was noted since the last flush; on any failure the notes
/// wait for the next round (newer notes win).
pub fn flush(db: &Db) {
    let noted = std::mem::take(&mut *SEEN.lock());
    if noted.is_empty() {
        return;
    }
    let written = db.write_gate(Duration::from_secs(5)).ok_or_else(|| anyhow::anyhow!("the write gate is busy")).and_then(|_gate| {
        let c = db.conn()?;
        crate::db::in_transaction(&c, || {
            for (id, at) in &noted {
                match id.strip_prefix("session:") {
                    Some(session) => db::execute(&c, "UPDATE console_sessions SET last_seen_at_ms = MAX(last_seen_at_ms, ?2) WHERE id = ?1", db::params![session, *at])?,
                    None => db::execute(&c, "UPDATE api_keys SET last_used_at = ?2 WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)", db::params![id, crate::clock::rfc3339(*at)])?,
                };
            }
            Ok(())
        })
    });
    if written.is_err() {
        let mut seen = SEEN.lock();
        for (k, v) in noted {
            seen.entry(k).or_insert(v);
        }
    }
}
