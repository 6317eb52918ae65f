//! The writer threads: every API mutation of this node, in group commits,
//! one thread per database (a business's mutations go to its database's).

use crate::shared::{QueuedWrite, Shared};
use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;

/// Most mutations one write transaction takes: under load, a batch holds
/// what queued while the previous one ran (at most one per instance slot).
const MAX_WRITE_BATCH: usize = 64;

/// The queue of each database's writer thread, started on its first write.
#[derive(Default)]
pub(crate) struct Writers {
    queues: parking_lot::Mutex<HashMap<String, Sender<QueuedWrite>>>,
}

impl Writers {
    /// Queues `w` for its database's writer thread; `Err` when that thread
    /// is gone (the server is shutting down).
    pub(crate) fn send(&self, shared: &Arc<Shared>, w: QueuedWrite) -> Result<(), ()> {
        let mut queues = self.queues.lock();
        let name = &w.0.home.name;
        let queue = match queues.get(name) {
            Some(q) => q,
            None => {
                let (tx, rx) = std::sync::mpsc::channel();
                start(shared.clone(), name, rx).map_err(|_| ())?;
                queues.entry(name.clone()).or_insert(tx)
            }
        };
        queue.send(w).map_err(|_| ())
    }
}

/// A writer thread: takes every mutation that is waiting, runs them in one
/// write transaction (each in its own savepoint) and commits once, then
/// answers them. One thread runs every API mutation of a database: its
/// writes are serialised by its write gate anyway, and a thread that stays
/// busy under load costs no wake-up per request, where a blocking thread
/// per request woke the next one at every hand-over of the gate. Another
/// database's writes run on their own thread, so a long one here never
/// queues them.
fn start(shared: Arc<Shared>, database: &str, queue: std::sync::mpsc::Receiver<QueuedWrite>) -> std::io::Result<()> {
    let name = if database == switchboard_storage::databases::MAIN { "writer".to_string() } else { format!("writer-{database}") };
    std::thread::Builder::new().name(name).spawn(move || {
        while let Ok(first) = queue.recv() {
            let mut batch = vec![first];
            while batch.len() < MAX_WRITE_BATCH {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let (writes, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            let answers = shared.app.write_batch(writes);
            for (reply, answer) in replies.into_iter().zip(answers) {
                // The client may have gone; its change is committed either way.
                let _ = reply.send(answer);
            }
        }
    })?;
    Ok(())
}
