//! The node's background loops as one supervised set: each is started by
//! name; one that ends or panics while the node runs is logged when it
//! happens; a stop ends them all (each at its next wait, so a piece of
//! work in flight, a checkpoint or a job step, finishes first) and joins
//! them, logging each by name, so nothing of the node still runs when
//! `serve` returns.

use parking_lot::Mutex;
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Every background loop of the node.
pub(crate) struct Supervisor {
    stop: watch::Sender<bool>,
    loops: Mutex<JoinSet<()>>,
}

/// What a loop waits on between its rounds: the node's stop.
#[derive(Clone)]
pub(crate) struct Stop(watch::Receiver<bool>);

impl Stop {
    /// Whether the node is stopping (a blocking loop asks between rounds).
    pub(crate) fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the node stops.
    pub(crate) async fn wait(&mut self) {
        let _ = self.0.wait_for(|stopping| *stopping).await;
    }

    /// Waits `pause`; false when the node stopped meanwhile (the loop then
    /// ends).
    pub(crate) async fn sleep(&mut self, pause: Duration) -> bool {
        tokio::select! {
            _ = self.wait() => false,
            _ = tokio::time::sleep(pause) => true,
        }
    }
}

impl Supervisor {
    pub(crate) fn new() -> Supervisor {
        Supervisor { stop: watch::channel(false).0, loops: Mutex::new(JoinSet::new()) }
    }

    fn stop_signal(&self) -> Stop {
        Stop(self.stop.subscribe())
    }

    /// Starts the loop `name`: `run` gets the stop it must end on.
    pub(crate) fn spawn<Fut>(&self, name: impl Into<String>, run: impl FnOnce(Stop) -> Fut)
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        let task = tokio::spawn(run(self.stop_signal()));
        self.watch(name.into(), task);
    }

    /// Starts the loop `name` on a blocking thread (a job runner): `run`
    /// asks [`Stop::is_set`] between its rounds.
    pub(crate) fn spawn_blocking(&self, name: impl Into<String>, run: impl FnOnce(Stop) + Send + 'static) {
        let stop = self.stop_signal();
        let task = tokio::task::spawn_blocking(move || run(stop));
        self.watch(name.into(), task);
    }

    /// Joins `task` into the set; how it ended is logged by `name`.
    fn watch(&self, name: String, task: tokio::task::JoinHandle<()>) {
        let stopping = self.stop_signal();
        self.loops.lock().spawn(async move {
            let ended = task.await;
            match ended {
                Ok(()) if stopping.is_set() => tracing::info!(loop = %name, "background loop ended"),
                Ok(()) => tracing::warn!(loop = %name, "background loop ended while the node runs"),
                Err(e) if e.is_panic() => tracing::error!(loop = %name, "background loop panicked"),
                Err(_) => tracing::warn!(loop = %name, "background loop cancelled"),
            }
        });
    }

    /// Stops every loop and waits for each to end; returns how many ended.
    /// A loop started after this (by one that was ending) sees the stop
    /// at once.
    pub(crate) async fn stop(&self) -> usize {
        self.stop.send_replace(true);
        let mut ended = 0;
        loop {
            let mut set = std::mem::take(&mut *self.loops.lock());
            if set.is_empty() {
                break;
            }
            while set.join_next().await.is_some() {
                ended += 1;
            }
        }
        tracing::info!(loops = ended, "background loops ended");
        ended
    }
}
