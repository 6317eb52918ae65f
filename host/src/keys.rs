//! The keys and console sessions admission looks callers up in: main's
//! database (every key and session of the deployment lives there), behind
//! the key cache. `App::keys` hands it to admission.

use crate::db::Db;
use switchboard_gateway::{Failure, KeyDirectory, KeyRecord, SessionRecord};
use switchboard_storage::unavailable;

/// The keys and console sessions admission looks callers up in: storage,
/// behind the key cache; each use found is noted in the server's usage.
pub struct Keys<'a> {
    pub db: &'a Db,
    pub usage: &'a switchboard_admin::usage::Usage,
}

impl Keys<'_> {
    /// The key for `key_hash` as storage has it (`KeyCache` calls this on
    /// a miss).
    fn read_key(&self, key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        let db = self.db;
        let lookup = |c: &crate::db::Connection| switchboard_gateway::storage::find_key(c, key_hash).map_err(|_| unavailable());
        let pooled = db.read_conn().map_err(|_| unavailable())?;
        let mut found = lookup(&pooled)?;
        drop(pooled);
        if found.is_none() {
            // Keys are created by another process (the admin CLI). A miss is
            // confirmed on a brand-new connection so that a pooled one can
            // never answer from an older view of the table.
            let fresh = db.fresh_read_conn().map_err(|_| unavailable())?;
            found = lookup(&fresh)?;
            if found.is_some() {
                tracing::warn!("a pooled connection missed a key that a fresh one found");
            }
        }
        if found.is_none() && db.pull_for_missing_key() {
            // A node of a primary: the key may be newer than the replica.
            let fresh = db.fresh_read_conn().map_err(|_| unavailable())?;
            found = lookup(&fresh)?;
        }
        Ok(found)
    }
}

impl KeyDirectory for Keys<'_> {
    fn find_by_hash(&self, key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        let found = self.db.keys().get(key_hash, || self.read_key(key_hash))?;
        if let Some(k) = found.as_ref().filter(|k| !k.revoked) {
            self.usage.note_key(&k.key_id);
        }
        Ok(found)
    }

    fn find_session(&self, token_hash: &str) -> Result<Option<SessionRecord>, Failure> {
        let found = crate::admin::sessions::find(self.db, token_hash).map_err(|_| unavailable())?;
        if let Some(s) = &found {
            self.usage.note_session(&s.session_id);
        }
        Ok(found)
    }
}
