//! When API keys and console sessions were last used. A request only notes
//! the time in memory; a loop of the server writes the notes in one short
//! transaction every [`FLUSH_EVERY`], so a read never writes. The stored
//! times are therefore at most that much behind (the console says "last
//! used", not "last request"), and a session's idle end is judged on them.

use crate::db::{self, Db};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;

pub const FLUSH_EVERY: Duration = Duration::from_secs(15);

/// The uses noted by one server and not yet written: key id or
/// `session:<id>` → the latest use (ms since the epoch). The server holds
/// one (`App::usage`), admission notes in it, a loop flushes it.
#[derive(Default)]
pub struct Usage {
    seen: Mutex<HashMap<String, i64>>,
}

impl Usage {
    /// Notes a use of an API key (its id).
    pub fn note_key(&self, key_id: &str) {
        self.note(key_id);
    }

    /// Notes a use of a console session (its id).
    pub fn note_session(&self, session_id: &str) {
        self.note(&format!("session:{session_id}"));
    }

    fn note(&self, id: &str) {
        let now = crate::clock::now_ms();
        let mut seen = self.seen.lock();
        match seen.get_mut(id) {
            Some(at) => *at = now,
            None => {
                seen.insert(id.to_string(), now);
            }
        }
    }

    /// A use of a key noted and not yet written (ms since the epoch).
    pub fn pending_key(&self, key_id: &str) -> Option<i64> {
        self.seen.lock().get(key_id).copied()
    }

    /// Writes what was noted since the last flush; on any failure the notes
    /// wait for the next round (newer notes win).
    pub fn flush(&self, db: &Db) {
        flush(&self.seen, db)
    }
}

fn flush(seen: &Mutex<HashMap<String, i64>>, db: &Db) {
    let noted = std::mem::take(&mut *seen.lock());
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
        let mut seen = seen.lock();
        for (k, v) in noted {
            seen.entry(k).or_insert(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Usage;

    #[test]
    fn each_server_notes_its_own_uses_keys_and_sessions_apart() {
        let (a, b) = (Usage::default(), Usage::default());
        a.note_key("k1");
        a.note_session("k1");
        assert!(a.pending_key("k1").is_some());
        assert_eq!(b.pending_key("k1"), None, "another server's notes are its own");
        assert_eq!(a.seen.lock().len(), 2, "a session never stands for a key of the same id");
    }
}
