//! API keys by hash, kept in memory so that a request's authentication
//! costs no query (issue 11: the key lookup was a tenth of a read's CPU).
//!
//! A revocation must still take effect at once where it is promised:
//! - in this process (the console): `changed` empties the cache;
//! - in the local mode, from another process (the admin CLI, on the same
//!   data dir): the revoking process rewrites a signal file beside the
//!   database after its commit, and every lookup compares the file's
//!   modification time with the one the cache was filled under (one
//!   `stat`, no query). While the file is younger than `SIGNAL_GRACE`
//!   nothing is cached, so a file system with coarse timestamps cannot
//!   hide a second revocation inside the same tick;
//! - on a node of a primary (no shared file): entries live one sync
//!   interval, so a revocation elsewhere is seen within twice the sync
//!   interval (docs/several-nodes.md).
//!
//! Misses are never cached: a key created a moment ago works at once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant, SystemTime};
use switchboard_gateway::KeyRecord;

/// Bounded: a flood of distinct valid keys cannot grow memory; when full,
/// the cache starts again empty (keys per deployment are few).
const MAX_ENTRIES: usize = 10_000;
const SIGNAL_GRACE: Duration = Duration::from_secs(2);
pub const SIGNAL_FILE: &str = "keys-changed";

pub struct KeyCache {
    mode: Mode,
    state: RwLock<State>,
    /// Bumped by `changed`: a lookup that raced a revocation in this
    /// process keeps nothing.
    generation: AtomicU64,
}

enum Mode {
    /// Local mode: the signal file other processes rewrite.
    Signal(PathBuf),
    /// Node of a primary: how long an entry may be used.
    Ttl(Duration),
}

/// What a lookup may rely on, read once per lookup.
#[derive(Clone, Copy)]
enum Trust {
    /// Entries read under this signal file time are valid.
    Signal(SystemTime),
    /// Entries younger than this are valid.
    Ttl(Duration),
    /// Nothing kept is valid, and nothing read is kept.
    Nothing,
}

#[derive(Default)]
struct State {
    entries: HashMap<String, (KeyRecord, Instant)>,
    /// The signal file's modification time the entries were read under.
    signal_seen: Option<SystemTime>,
}

impl KeyCache {
    pub fn local(signal: PathBuf) -> Self {
        KeyCache { mode: Mode::Signal(signal), state: RwLock::default(), generation: AtomicU64::new(0) }
    }

    pub fn replica(ttl: Duration) -> Self {
        KeyCache { mode: Mode::Ttl(ttl), state: RwLock::default(), generation: AtomicU64::new(0) }
    }

    /// The key for `hash`: from memory when still valid, else from
    /// `lookup` (kept when found).
    pub fn get<E>(&self, hash: &str, lookup: impl FnOnce() -> Result<Option<KeyRecord>, E>) -> Result<Option<KeyRecord>, E> {
        let trust = self.trust();
        {
            let state = self.state.read().unwrap_or_else(|e| e.into_inner());
            if let Some((record, at)) = state.entries.get(hash) {
                let valid = match trust {
                    Trust::Signal(t) => state.signal_seen == Some(t),
                    Trust::Ttl(ttl) => at.elapsed() < ttl,
                    Trust::Nothing => false,
                };
                if valid {
                    return Ok(Some(record.clone()));
                }
            }
        }
        let generation = self.generation.load(Ordering::Acquire);
        let found = lookup()?;
        let Some(record) = &found else { return Ok(found) };
        if matches!(trust, Trust::Nothing) {
            return Ok(found);
        }
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        if self.generation.load(Ordering::Acquire) != generation {
            // A revocation in this process raced the lookup: keep nothing.
            return Ok(found);
        }
        if let Trust::Signal(t) = trust {
            if state.signal_seen != Some(t) {
                // Read under a newer signal: what is kept is stale.
                state.entries.clear();
                state.signal_seen = Some(t);
            }
        }
        if state.entries.len() >= MAX_ENTRIES {
            state.entries.clear();
        }
        state.entries.insert(hash.to_string(), (record.clone(), Instant::now()));
        Ok(found)
    }

    /// What the entries may be trusted under now. In the local mode, the
    /// signal file's modification time (no file yet reads as the epoch),
    /// or nothing while the file is younger than the grace or cannot be
    /// read.
    fn trust(&self) -> Trust {
        match &self.mode {
            Mode::Ttl(ttl) => Trust::Ttl(*ttl),
            Mode::Signal(path) => {
                let modified = match std::fs::metadata(path) {
                    Ok(m) => m.modified().ok(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(SystemTime::UNIX_EPOCH),
                    Err(_) => None,
                };
                match modified.filter(|t| t.elapsed().is_ok_and(|age| age >= SIGNAL_GRACE)) {
                    Some(t) => Trust::Signal(t),
                    None => Trust::Nothing,
                }
            }
        }
    }

    /// A key was revoked (committed): forget every entry here and, in the
    /// local mode, tell other processes through the signal file.
    pub fn changed(&self) -> std::io::Result<()> {
        {
            let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
            self.generation.fetch_add(1, Ordering::AcqRel);
            state.entries.clear();
        }
        if let Mode::Signal(path) = &self.mode {
            let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
            std::fs::write(path, format!("{nanos}\n"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(revoked: bool) -> KeyRecord {
        KeyRecord { key_id: "k".into(), business_id: "b".into(), scopes: vec!["all".into()], revoked }
    }

    fn lookups(cache: &KeyCache, answer: bool) -> (Option<KeyRecord>, bool) {
        let mut asked = false;
        let found = cache
            .get::<()>("h", || {
                asked = true;
                Ok(Some(record(answer)))
            })
            .unwrap();
        (found, asked)
    }

    #[test]
    fn a_signal_from_another_process_empties_the_cache() {
        let dir = std::env::temp_dir().join(format!("keycache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let signal = dir.join(SIGNAL_FILE);
        let _ = std::fs::remove_file(&signal);
        let cache = KeyCache::local(signal.clone());
        assert!(lookups(&cache, false).1, "first lookup reads");
        assert!(!lookups(&cache, false).1, "second is served from memory");
        // Another process revokes: a fresh signal file. Nothing is served
        // from memory while it is young.
        std::fs::write(&signal, "1").unwrap();
        let (found, asked) = lookups(&cache, true);
        assert!(asked && found.unwrap().revoked);
        assert!(lookups(&cache, true).1, "a young signal keeps reading through");
        // An old signal (set back past the grace): cached again, and the
        // entry read under it is the revoked one.
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options().write(true).open(&signal).unwrap().set_modified(old).unwrap();
        let (found, asked) = lookups(&cache, true);
        assert!(asked && found.unwrap().revoked);
        let (found, asked) = lookups(&cache, false);
        assert!(!asked && found.unwrap().revoked, "served from memory");
        // In-process revocation.
        cache.changed().unwrap();
        assert!(lookups(&cache, true).1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_replica_entry_lives_one_sync_interval() {
        let cache = KeyCache::replica(Duration::from_millis(50));
        assert!(lookups(&cache, false).1);
        assert!(!lookups(&cache, false).1);
        std::thread::sleep(Duration::from_millis(60));
        assert!(lookups(&cache, true).1);
        let mut asked = false;
        let miss = cache.get::<()>("other", || {
            asked = true;
            Ok(None)
        });
        assert!(asked && miss.unwrap().is_none());
        assert!(cache.get::<()>("other", || Ok(None)).unwrap().is_none(), "misses are not kept");
    }
}
