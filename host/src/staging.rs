//! The staging area of raw uploads (migration 0011): the host streams a raw
//! request body into `staged_upload_chunks`, one chunk per short write
//! transaction under the write gate, so a slow upload never holds other
//! writers up for longer than one 256 KiB insert. The owning component moves
//! the chunks into its own table inside the request's transaction; whatever
//! a failed request leaves is discarded here, and `sweep` removes uploads
//! abandoned mid-stream (a crash, a vanished client).
//!
//! Every function here is synchronous libSQL work: call it on a blocking
//! thread.

use crate::db::{self, params, Db};
use std::time::Duration;
use switchboard_gateway::Failure;

// One definition of the chunk size, shared with the guest library (data sources),
// so staged chunks are exactly the `ingestion_chunks` rows ingestion reads.
pub use switchboard_chunking::CHUNK_BYTES;

/// How long a chunk write waits for the write gate before the upload fails
/// with 503 (the same patience as a mutation).
const GATE_WAIT: Duration = Duration::from_secs(30);
/// Chunks deleted per transaction when discarding (16 MiB), so discarding a
/// large upload does not hold the write gate for long either.
const DISCARD_BATCH: i64 = 64;

/// The thread every chunk write runs on, rather than the blocking pool:
/// glibc gives each allocating thread its own malloc arena, and memory freed
/// in one arena is reused only by the threads attached to it, so SQLite's
/// per-chunk buffers spread over a dozen pool threads left every arena with
/// its own slack, and the process grew with the size of an upload (about
/// 20 MiB over 480 MB). On one thread, handing free memory back to the
/// kernel every 64 chunks (16 MiB), the upload's footprint stays flat
/// (bench/README.md). Writes are serialised by the write gate anyway, so one
/// thread costs no throughput.
pub struct Writer {
    tx: std::sync::mpsc::Sender<Box<dyn FnOnce() + Send>>,
}

impl Writer {
    pub fn start() -> Writer {
        let (tx, rx) = std::sync::mpsc::channel::<Box<dyn FnOnce() + Send>>();
        std::thread::Builder::new()
            .name("staging".into())
            .spawn(move || {
                let mut jobs = 0u32;
                while let Ok(job) = rx.recv() {
                    // A panicking write fails its own upload (its answer
                    // channel drops), not every later one.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    jobs += 1;
                    if jobs.is_multiple_of(TRIM_EVERY_CHUNKS) {
                        release_free_memory();
                    }
                }
            })
            .expect("start the staging thread");
        Writer { tx }
    }

    /// Runs `f` on the staging thread; None if that thread is gone.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.tx
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .ok()?;
        rx.await.ok()
    }
}

const TRIM_EVERY_CHUNKS: u32 = 64;

/// Returns the allocator's free pages to the kernel (glibc `malloc_trim`,
/// which walks every arena; a few milliseconds per 16 MiB staged).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: malloc_trim only releases free memory; it takes the
        // allocator's own locks.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// A completely staged body.
#[derive(Clone, Debug)]
pub struct Staged {
    pub id: String,
    pub size: u64,
    pub sha256: String,
}

use switchboard_storage::unavailable;

/// Runs `f` in one `BEGIN IMMEDIATE` transaction under the write gate.
fn in_write_tx<T>(db: &Db, f: impl FnOnce(&crate::db::Connection) -> Result<T, Failure>) -> Result<T, Failure> {
    let _gate = db.write_gate(GATE_WAIT).ok_or_else(unavailable)?;
    let conn = db.conn().map_err(|_| unavailable())?;
    db::execute(&conn, "BEGIN IMMEDIATE", vec![]).map_err(|_| unavailable())?;
    match f(&conn) {
        Ok(v) => {
            if db::execute(&conn, "COMMIT", vec![]).is_err() {
                let _ = db::execute(&conn, "ROLLBACK", vec![]);
                return Err(unavailable());
            }
            Ok(v)
        }
        Err(e) => {
            let _ = db::execute(&conn, "ROLLBACK", vec![]);
            Err(e)
        }
    }
}

fn store_err(e: anyhow::Error) -> Failure {
    tracing::error!(error = %e, "staging write failed");
    Failure::internal("the upload could not be stored; nothing was kept, retry").retryable(true)
}

/// Writes chunk `seq` of upload `id` (exactly `CHUNK_BYTES` unless it is the
/// last) in its own transaction and records the bytes staged so far; the
/// upload's row is created with chunk 0. `complete` (the final size and
/// SHA-256) marks the upload complete, with or without a last chunk.
pub fn write(db: &Db, id: &str, business: &str, seq: i64, data: Option<&[u8]>, staged_bytes: u64, complete: Option<&str>) -> Result<(), Failure> {
    in_write_tx(db, |c| {
        let now = crate::clock::now_ms();
        let state = if complete.is_some() { "complete" } else { "receiving" };
        if seq == 0 {
            db::execute(
                c,
                "INSERT INTO staged_uploads (id, business_id, chunk_size, byte_size, sha256, state, created_at_ms, updated_at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
                params![id, business, CHUNK_BYTES as i64, staged_bytes as i64, complete, state, now],
            )
            .map_err(store_err)?;
        } else {
            let n = db::execute(
                c,
                "UPDATE staged_uploads SET byte_size = ?1, sha256 = ?2, state = ?3, updated_at_ms = ?4 WHERE id = ?5 AND state = 'receiving'",
                params![staged_bytes as i64, complete, state, now, id],
            )
            .map_err(store_err)?;
            if n == 0 {
                // Swept while the client was idle for longer than the sweep allows.
                return Err(Failure::new(408, "validation", "upload_idle_too_long", "the upload was idle for too long and was discarded; send it again"));
            }
        }
        if let Some(data) = data {
            db::execute(c, "INSERT INTO staged_upload_chunks (business_id, upload_id, seq, data) VALUES (?1, ?2, ?3, ?4)", params![business, id, seq, data]).map_err(store_err)?;
        }
        Ok(())
    })
}

/// Deletes whatever is staged under `id` (nothing, when the component moved
/// it), a batch of chunks per transaction. Best effort: what a failure
/// leaves is swept later.
pub fn discard(db: &Db, id: &str) {
    loop {
        let deleted = in_write_tx(db, |c| {
            db::execute(
                c,
                "DELETE FROM staged_upload_chunks WHERE upload_id = ?1 AND seq IN \
                 (SELECT seq FROM staged_upload_chunks WHERE upload_id = ?1 ORDER BY seq LIMIT ?2)",
                params![id, DISCARD_BATCH],
            )
            .map_err(store_err)
        });
        match deleted {
            Ok(0) => break,
            Ok(_) => continue,
            Err(_) => return,
        }
    }
    let _ = in_write_tx(db, |c| db::execute(c, "DELETE FROM staged_uploads WHERE id = ?1", params![id]).map_err(store_err));
}

/// Removes uploads with no progress for `idle` (abandoned mid-stream: the
/// process crashed or a client stalled), and chunks whose upload row is gone
/// (a chunk write that lost a race with a discard).
pub fn sweep(db: &Db, idle: Duration) {
    let oldest = crate::clock::now_ms() - idle.as_millis() as i64;
    let stale = match db.conn().and_then(|c| db::query_as::<String>(&c, "SELECT id FROM staged_uploads WHERE updated_at_ms < ?1", params![oldest])) {
        Ok(ids) => ids,
        Err(_) => return,
    };
    for id in &stale {
        discard(db, id);
    }
    let orphans = db.conn().and_then(|c| db::query_as::<String>(&c, "SELECT DISTINCT upload_id FROM staged_upload_chunks WHERE upload_id NOT IN (SELECT id FROM staged_uploads)", params![]));
    for id in orphans.unwrap_or_default() {
        discard(db, &id);
    }
    if !stale.is_empty() {
        tracing::info!(uploads = stale.len(), "swept abandoned staged uploads");
    }
}
