//! The writer thread: every API mutation of this node, in group commits.

use crate::shared::{QueuedWrite, Shared};
use std::sync::Arc;

/// Most mutations one write transaction takes: under load, a batch holds
/// what queued while the previous one ran (at most one per instance slot).
const MAX_WRITE_BATCH: usize = 64;

/// The writer thread: takes every mutation that is waiting, runs them in
/// one write transaction (each in its own savepoint) and commits once, then
/// answers them. One thread runs every API mutation: the writes are
/// serialised by the write gate anyway, and a thread that stays busy under
/// load costs no wake-up per request, where a blocking thread per request
/// woke the next one at every hand-over of the gate.
pub(crate) fn start(shared: Arc<Shared>, queue: std::sync::mpsc::Receiver<QueuedWrite>) {
    std::thread::Builder::new()
        .name("writer".into())
        .spawn(move || {
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
        })
        .expect("spawn the writer thread");
}
