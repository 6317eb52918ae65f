//! The once-a-second WAL checkpoint of a local database (`Db::checkpoint`),
//! which starts the WAL over under a steady stream of commits, and the
//! bounds it works by.

use super::*;

/// WAL frames (pages) above which the once-a-second checkpoint starts the
/// WAL over (`Db::checkpoint`): 8,192 frames, about 32 MiB.
pub(crate) const WAL_RESTART_FRAMES: i64 = 8_192;

/// The restart takes the write gate once a catch-up pass found at most this
/// many new frames (about 2 MiB) to sync and copy.
pub(crate) const GATED_COPY_FRAMES: i64 = 512;

/// How long that restart waits for the write gate (then it is skipped).
pub(crate) const RESTART_WAIT: Duration = Duration::from_millis(200);

impl Db {
    /// Copies committed WAL frames into the database file without blocking
    /// writers (PASSIVE); `truncate` also resets the WAL file (at shutdown).
    ///
    /// Under a steady stream of commits a PASSIVE checkpoint never catches
    /// up (writers append while it copies), so SQLite never starts the WAL
    /// over: it grew by about 100 MB a second under webhook load, every
    /// append to new space paid the filesystem's zeroing, and every page
    /// read searched a longer WAL index. Once the WAL holds more than
    /// `WAL_RESTART_FRAMES` after the PASSIVE pass, a RESTART checkpoint
    /// runs holding the write gate (no writer of ours appends meanwhile),
    /// so the next commit writes from the start of the file again.
    pub fn checkpoint(&self, truncate: bool) {
        if self.replica.is_some() {
            return;
        }
        let Ok(c) = self.conn() else { return };
        if truncate {
            let _ = query_rows(&c, "PRAGMA wal_checkpoint(TRUNCATE)", vec![]);
            return;
        }
        // (frames in the WAL, frames copied into the database)
        let passive = || -> (i64, i64) {
            let row = query_one_as::<(i64, i64, i64)>(&c, "PRAGMA wal_checkpoint(PASSIVE)", vec![]).ok().flatten();
            row.map_or((0, 0), |(_busy, frames, copied)| (frames, copied))
        };
        let mut frames = passive().0;
        if frames <= WAL_RESTART_FRAMES {
            return;
        }
        let mut copied = 0;
        // Catch up without the gate first: each pass syncs and copies what
        // was committed up to its start, while commits go on. Repeat until
        // a pass finds little new, which is all the gated pass below then
        // syncs and copies while writers wait (it used to find what the
        // first pass let through: syncing those 8 MB of WAL took 20 ms, and
        // the p99 of creates went from 6 to 13 ms).
        for _ in 0..8 {
            let before = frames;
            (frames, copied) = passive();
            if frames - before <= GATED_COPY_FRAMES && frames == copied {
                break;
            }
        }
        if frames != copied {
            return;
        }
        // Under the gate: copy the rest and, when no reader is inside the
        // WAL, have the next commit start it over. Readers are not waited
        // for (SQLite's busy handler sleeps in steps of milliseconds while
        // every writer queues behind the gate): with one inside, nothing
        // restarts and the next second tries again.
        let asked = std::time::Instant::now();
        let Some(_gate) = self.background_gate(RESTART_WAIT) else { return };
        let held = std::time::Instant::now();
        if query_rows(&c, "PRAGMA busy_timeout=0", vec![]).is_ok() {
            let _ = query_rows(&c, "PRAGMA wal_checkpoint(RESTART)", vec![]);
            let _ = query_rows(&c, &format!("PRAGMA busy_timeout={}", BUSY_TIMEOUT.as_millis()), vec![]);
        }
        // Every writer of the database waits while the gate is held here
        // (the restart's two syncs): bench/post_waits.sh reads this event.
        tracing::debug!(waitedUs = (held - asked).as_micros() as u64, heldUs = held.elapsed().as_micros() as u64, frames, "wal restarted");
    }
}
