//! The node's background loops beside the server: each database's own
//! (its replica's pulls, its checkpoints, its job runner when this node
//! runs jobs), started for every database open at start and for those
//! opened later; and the plugin reloads on SIGHUP.

use crate::db::Db;
use crate::shared::{DatabaseJobs, Shared};
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the node looks for databases registered since it started
/// (`admin database add`), and for those a request opened.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// Each database's loops, started once per database.
#[derive(Clone)]
pub(crate) struct DatabaseLoops {
    shared: Arc<Shared>,
    stop: Arc<AtomicBool>,
    config: crate::jobs::RunnerConfig,
    wait: Duration,
    started: Arc<parking_lot::Mutex<HashSet<String>>>,
    runners: Arc<parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl DatabaseLoops {
    pub(crate) fn new(shared: Arc<Shared>, stop: Arc<AtomicBool>, config: crate::jobs::RunnerConfig, wait: Duration) -> DatabaseLoops {
        DatabaseLoops { shared, stop, config, wait, started: Arc::default(), runners: Arc::default() }
    }

    /// Starts the loops of every open database now, then watches for new
    /// ones.
    pub(crate) fn watch(&self) {
        self.start_new();
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let m = me.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    m.shared.app.dbs.open_registered();
                })
                .await;
                me.start_new();
            }
        });
    }

    fn start_new(&self) {
        for (name, db) in self.shared.app.dbs.all() {
            if !self.started.lock().insert(name.clone()) {
                continue;
            }
            self.start(db);
        }
    }

    fn start(&self, db: Arc<Db>) {
        if db.is_replica() {
            // Pulls what this node wrote at the primary (forwarded, shipped).
            let puller = db.clone();
            tokio::spawn(db.freshness().run(Arc::new(move || puller.pull())));
        }
        let checkpointed = db.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let d = checkpointed.clone();
                let _ = tokio::task::spawn_blocking(move || d.checkpoint(false)).await;
            }
        });
        // A far node leaves background work to the nodes beside the
        // primary: every step's statements would cross its far link.
        if self.shared.write_node.is_none() {
            let host = Arc::new(DatabaseJobs { shared: self.shared.clone(), db });
            self.runners.lock().push(spawn_job_runner(host, self.stop.clone(), self.config.clone(), self.wait));
        }
    }

    /// Waits for every runner to finish its current steps (after `stop`).
    pub(crate) async fn join_runners(&self) {
        let runners: Vec<_> = std::mem::take(&mut *self.runners.lock());
        for r in runners {
            let _ = r.await;
        }
    }
}

/// Each database's runner bell (`Runner::bell`), by the database.
static BELLS: std::sync::Mutex<Vec<(std::sync::Weak<crate::db::Db>, Arc<crate::jobs::Wake>)>> = std::sync::Mutex::new(Vec::new());

/// Ends the idle wait of `db`'s job runner on this node, if it runs here:
/// a step made due now starts at once instead of at the next round (up to
/// 25 ms later).
pub(crate) fn ring(db: &Arc<crate::db::Db>) {
    let bells = BELLS.lock().unwrap_or_else(|p| p.into_inner());
    for (d, bell) in bells.iter() {
        if d.upgrade().is_some_and(|d| Arc::ptr_eq(&d, db)) {
            bell.notify();
        }
    }
}

/// Runs job rounds of one database on a blocking thread until `stop`;
/// idles 25 ms when there was nothing to do (an idle round is one indexed
/// read). On stop, waits (bounded) for steps still calling out, so each
/// ends committed or rolled back whole. Each database has its own
/// dispatcher lease: a job's fence is a statement of its database's
/// transaction.
fn spawn_job_runner(host: Arc<DatabaseJobs>, stop: Arc<AtomicBool>, config: crate::jobs::RunnerConfig, wait: Duration) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        let mut runner = crate::jobs::Runner::new(config);
        {
            let mut bells = BELLS.lock().unwrap_or_else(|p| p.into_inner());
            bells.retain(|(d, _)| d.strong_count() > 0);
            bells.push((Arc::downgrade(&host.db), runner.bell()));
        }
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            if runner.tick(&host) == 0 {
                runner.idle(Duration::from_millis(25));
            }
        }
        let deadline = Instant::now() + wait;
        while runner.calling_out() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // A step still calling out keeps its job leased: then the lease
        // runs out as it would after a crash.
        if runner.calling_out() == 0 {
            runner.step_down(&host.db);
        }
    })
}

/// SIGHUP reads the plugin folder again (on a blocking thread: plugins
/// compile); calls in flight finish on the version they started with.
pub(crate) fn spawn_plugin_reloads(shared: Arc<Shared>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else { return };
        while hup.recv().await.is_some() {
            crate::logging::line("info", "SIGHUP: reloading plugins");
            let s = shared.clone();
            let _ = tokio::task::spawn_blocking(move || s.app.components.providers().plugins.reload()).await;
        }
    });
    #[cfg(not(unix))]
    let _ = shared;
}
