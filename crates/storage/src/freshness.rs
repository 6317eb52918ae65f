//! Read your writes on a node of a primary whose writes are committed
//! elsewhere than its replica's file: a far node's forwarded writes
//! (`write_node.rs`) and a shipped transaction (`ship.rs`). The write is
//! answered as soon as the primary committed it; the replica pulls it in
//! the background, and a read that arrives before the pull ended waits
//! for it (at most `READ_WAIT`). A read that follows no such write waits
//! for nothing: one atomic load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest a read waits for the replica to pull a write this node
/// made (then it is answered from what the replica has).
const READ_WAIT: Duration = Duration::from_secs(2);

/// How many writes committed at the primary this node has answered
/// (`wanted`), and up to which of them the replica has pulled (`pulled`).
#[derive(Default)]
pub struct Freshness {
    wanted: AtomicU64,
    pulled: tokio::sync::watch::Sender<u64>,
    wake: tokio::sync::Notify,
    /// Held by whoever pulls (the task below, a shipping `BEGIN`): a pull
    /// that is under way serves the next one asking instead of a second.
    pulling: parking_lot::Mutex<()>,
    /// The writer connection holds the local transaction of request
    /// batches it shipped (`ship::Carry`): a pull would only wait for its
    /// lock, so the pulling task waits for the carry to end instead.
    carrying: std::sync::atomic::AtomicBool,
}

impl Freshness {
    /// A write committed at the primary and answered: pull it.
    pub fn wrote(&self) {
        self.wanted.fetch_add(1, Ordering::AcqRel);
        self.wake.notify_one();
    }

    /// A carry began or ended (`ship::Carry`); its end wakes the pulling task.
    pub fn carrying(&self, now: bool) {
        if self.carrying.swap(now, Ordering::AcqRel) && !now {
            self.wake.notify_one();
        }
    }

    /// The count of writes a pull begun now brings in, when the replica
    /// lacks some of them.
    pub fn behind(&self) -> Option<u64> {
        let target = self.wanted.load(Ordering::Acquire);
        (*self.pulled.borrow() < target).then_some(target)
    }

    /// Pulls with `pull` when the replica lacks a write this node made,
    /// unless a pull that was under way meanwhile brought it. False when
    /// the pull failed.
    pub fn pull_if_behind(&self, pull: impl FnOnce() -> bool) -> bool {
        let Some(target) = self.behind() else { return true };
        let _one_at_a_time = self.pulling.lock();
        if *self.pulled.borrow() >= target {
            return true;
        }
        let ok = pull();
        if ok {
            self.pulled(target);
        }
        ok
    }

    /// Pulls with `pull` whatever the replica lacks (other nodes' writes
    /// too), counting it as bringing this node's writes so far.
    pub fn pull_now(&self, pull: impl FnOnce() -> bool) -> bool {
        let target = self.wanted.load(Ordering::Acquire);
        let _one_at_a_time = self.pulling.lock();
        let ok = pull();
        if ok {
            self.pulled(target);
        }
        ok
    }

    /// A pull begun when `behind` said `target` has ended.
    fn pulled(&self, target: u64) {
        self.pulled.send_if_modified(|p| {
            let moved = *p < target;
            *p = (*p).max(target);
            moved
        });
    }

    /// Waits until the replica holds every write this node had answered
    /// when the read arrived (at most `READ_WAIT`).
    pub async fn caught_up(&self) {
        let Some(target) = self.behind() else { return };
        let mut rx = self.pulled.subscribe();
        let _ = tokio::time::timeout(READ_WAIT, rx.wait_for(|p| *p >= target)).await;
    }

    /// The task that pulls after such writes: one pull serves every write
    /// answered before it began.
    pub async fn run(self: Arc<Self>, pull: Arc<dyn Fn() -> anyhow::Result<()> + Send + Sync>) {
        loop {
            if self.behind().is_none() || self.carrying.load(Ordering::Acquire) {
                self.wake.notified().await;
                continue;
            }
            let (me, pull) = (self.clone(), pull.clone());
            match tokio::task::spawn_blocking(move || me.pull_if_behind(|| pull().is_ok())).await {
                Ok(true) => {}
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}
