//! The writer threads: every API mutation of this node, in group commits,
//! one thread per database (a business's mutations go to its database's).

use crate::shared::{QueuedWrite, Shared};
use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// Most mutations one write transaction takes: under load, a batch holds
/// what queued while the previous one ran (at most one per instance slot).
const MAX_WRITE_BATCH: usize = 64;

/// The same on a database whose writes are shipped to a libSQL server
/// (`storage::ship`): each batch there pays a round trip, the pull of its
/// frames and several milliseconds of fixed CPU at the node and the
/// server, so under load fewer, larger batches write more (issue 47:
/// about 1.1x the creates per second beside sqld with 256 against 64, A/B
/// in pairs, bench/README.md).
const MAX_SHIPPED_BATCH: usize = 256;

/// How much lower a bulk thread's priority is (its nice value): under CPU
/// contention the kernel gives it about a tenth of the time of a thread at
/// the default priority (scheduler weights 110 against 1024).
const BULK_NICE: i32 = 10;

/// The queues of each database's writer threads, started on first use: one
/// for its ordinary mutations, one for its bulk ones.
#[derive(Default)]
pub(crate) struct Writers {
    queues: parking_lot::Mutex<HashMap<(String, bool), Sender<QueuedWrite>>>,
}

impl Writers {
    /// Queues `w` for its database's writer thread, or, when it has a large
    /// body to parse first (`Write::needs_prepare`: a contacts import, a
    /// JSON upload), for the database's bulk thread; `Err` when that thread
    /// is gone (the server is shutting down).
    pub(crate) fn send(&self, shared: &Arc<Shared>, w: QueuedWrite) -> Result<(), ()> {
        let mut queues = self.queues.lock();
        let key = (w.0.home.name.clone(), w.0.needs_prepare());
        let queue = match queues.get(&key) {
            Some(q) => q,
            None => {
                let (tx, rx) = std::sync::mpsc::channel();
                if key.1 {
                    start_bulk(shared.clone(), &key.0, rx).map_err(|_| ())?;
                } else {
                    let cap = if w.0.home.db.ships_writes() { MAX_SHIPPED_BATCH } else { MAX_WRITE_BATCH };
                    start(shared.clone(), &key.0, cap, rx).map_err(|_| ())?;
                }
                queues.entry(key).or_insert(tx)
            }
        };
        queue.send(w).map_err(|_| ())
    }
}

/// A database's bulk thread: parses each bulk mutation's body (the
/// component's prepare step) and runs its write, one at a time, at a lower
/// CPU priority than the server's other threads, so that on a busy machine
/// an import takes the CPU that other businesses' requests leave instead
/// of sharing it evenly (issue 47: their p99 under another business's
/// back-to-back imports). Its write still takes the database's write gate
/// as a request (a business's own bulk write is still a foreground write
/// of its database).
fn start_bulk(shared: Arc<Shared>, database: &str, queue: std::sync::mpsc::Receiver<QueuedWrite>) -> std::io::Result<()> {
    std::thread::Builder::new().name(format!("bulk-{database}")).spawn(move || {
        // SAFETY: setpriority with this thread's own id (Linux threads are
        // tasks); a failure leaves the priority as it was.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, BULK_NICE);
        }
        while let Ok((mut write, reply)) = queue.recv() {
            shared.app.prepare_write(&mut write);
            let answer = shared.app.write_batch(vec![write], &mut || false).pop();
            if let Some(answer) = answer {
                let _ = reply.send(answer);
            }
        }
    })?;
    Ok(())
}

/// A writer thread: takes every mutation that is waiting, runs them in one
/// write transaction (each in its own savepoint) and commits once, then
/// answers them. One thread runs every API mutation of a database: its
/// writes are serialised by its write gate anyway, and a thread that stays
/// busy under load costs no wake-up per request, where a blocking thread
/// per request woke the next one at every hand-over of the gate. Another
/// database's writes run on their own thread, so a long one here never
/// queues them.
fn start(shared: Arc<Shared>, database: &str, cap: usize, queue: std::sync::mpsc::Receiver<QueuedWrite>) -> std::io::Result<()> {
    let name = if database == switchboard_storage::databases::MAIN { "writer".to_string() } else { format!("writer-{database}") };
    std::thread::Builder::new().name(name).spawn(move || {
        // The first mutation of the next batch, when one was waiting as
        // this batch closed.
        let mut waiting = None;
        while let Some(first) = waiting.take().or_else(|| queue.recv().ok()) {
            let mut batch = vec![first];
            while batch.len() < cap {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let (writes, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            let answers = shared.app.write_batch(writes, &mut || {
                waiting = waiting.take().or_else(|| queue.try_recv().ok());
                waiting.is_some()
            });
            for (reply, answer) in replies.into_iter().zip(answers) {
                // The client may have gone; its change is committed either way.
                let _ = reply.send(answer);
            }
        }
    })?;
    Ok(())
}
