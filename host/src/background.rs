//! The node's background loops beside the server, each in the node's
//! [`Supervisor`]: each database's own (its replica's pulls, its
//! checkpoints, its job runner and vector indexer when this node runs
//! jobs), started for every
//! database open at start and for those opened later; and the plugin
//! reloads on SIGHUP.

use crate::db::Db;
use crate::shared::{DatabaseJobs, Shared};
use crate::supervisor::{Stop, Supervisor};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the node looks for databases registered since it started
/// (`admin database add`), and for those a request opened.
const WATCH_EVERY: Duration = Duration::from_secs(2);
/// How often the maintenance loop runs (the staged-upload sweep); the
/// idempotency purge, the pushed statuses' purge and the finished jobs'
/// purge run every 12th round (hourly).
const MAINTENANCE_EVERY: Duration = Duration::from_secs(300);
/// How often a database's write-ahead log is checkpointed.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// How often a database's vector indexer looks for vectors a step stored
/// (`knowledge::index_pending`), and how long one round moves them at most.
const INDEX_VECTORS_EVERY: Duration = Duration::from_millis(100);
const INDEX_VECTORS_ROUND: Duration = Duration::from_secs(1);

/// Each database's loops, started once per database.
#[derive(Clone)]
pub(crate) struct DatabaseLoops {
    shared: Arc<Shared>,
    loops: Arc<Supervisor>,
    config: crate::jobs::RunnerConfig,
    wait: Duration,
    started: Arc<parking_lot::Mutex<HashSet<String>>>,
}

impl DatabaseLoops {
    pub(crate) fn new(shared: Arc<Shared>, loops: Arc<Supervisor>, config: crate::jobs::RunnerConfig, wait: Duration) -> DatabaseLoops {
        DatabaseLoops { shared, loops, config, wait, started: Arc::default() }
    }

    /// Starts the loops of every open database now, then watches for new
    /// ones.
    pub(crate) fn watch(&self) {
        self.start_new();
        let me = self.clone();
        self.loops.spawn("databases", |mut stop| async move {
            while stop.sleep(WATCH_EVERY).await {
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
            self.start(&name, db);
        }
    }

    fn start(&self, name: &str, db: Arc<Db>) {
        if db.is_replica() {
            // Pulls what this node wrote at the primary (forwarded, shipped).
            let puller = db.clone();
            let pulls = db.freshness().run(Arc::new(move || puller.pull()));
            self.loops.spawn(format!("pulls:{name}"), |mut stop| async move {
                tokio::select! {
                    _ = pulls => {}
                    _ = stop.wait() => {}
                }
            });
        }
        let checkpointed = db.clone();
        self.loops.spawn(format!("checkpoints:{name}"), |mut stop| async move {
            while stop.sleep(CHECKPOINT_EVERY).await {
                let d = checkpointed.clone();
                let _ = tokio::task::spawn_blocking(move || d.checkpoint(false)).await;
            }
        });
        // A far node leaves background work to the nodes beside the
        // primary: every step's statements would cross its far link.
        if self.shared.write_node.is_none() {
            // The vectors job steps stored wait for the ANN index: moved
            // there in short background turns of the write gate.
            let indexed = db.clone();
            let database = name.to_string();
            self.loops.spawn(format!("vectors:{name}"), |mut stop| async move {
                while stop.sleep(INDEX_VECTORS_EVERY).await {
                    let d = indexed.clone();
                    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || switchboard_runtime::knowledge::index_pending(&d, INDEX_VECTORS_ROUND)).await {
                        tracing::debug!(database = %database, error = %format_args!("{e:#}"), "indexing vectors: the next round tries again");
                    }
                }
            });
            let host = Arc::new(DatabaseJobs { shared: self.shared.clone(), db });
            let (config, wait) = (self.config.clone(), self.wait);
            self.loops.spawn_blocking(format!("jobs:{name}"), move |stop| run_jobs(&host, &stop, config, wait));
        }
    }
}

/// The node's upkeep: staged uploads idle longer than `upload_sweep_after`
/// swept every round; expired idempotency records, pushed statuses,
/// finished jobs and the webhook log past `webhook_log_retention` purged
/// every 12th; idle rate limits and console login limits forgotten.
pub(crate) fn spawn_maintenance(shared: Arc<Shared>, loops: &Supervisor, upload_sweep_after: Duration, webhook_log_retention: Duration) {
    loops.spawn("maintenance", |mut stop| async move {
        for round in 0u64.. {
            let j = shared.clone();
            let _ = tokio::task::spawn_blocking(move || {
                for (_, db) in j.app.dbs.all() {
                    if round % 12 == 0 {
                        purge_expired_idempotency(&db);
                        crate::plugins::pushed::purge(&db);
                        crate::jobs::purge_finished(&db, crate::clock::now_ms());
                        crate::jobs::purge_webhook_log(&db, crate::clock::now_ms(), webhook_log_retention);
                    }
                    crate::staging::sweep(&db, upload_sweep_after);
                }
                j.limits.forget_idle();
                j.console.forget_idle();
            })
            .await;
            if !stop.sleep(MAINTENANCE_EVERY).await {
                return;
            }
        }
    });
}

/// Writes the noted uses of keys and sessions (`usage::FLUSH_EVERY`).
pub(crate) fn spawn_usage_flush(shared: Arc<Shared>, loops: &Supervisor) {
    loops.spawn("usage", |mut stop| async move {
        while stop.sleep(crate::usage::FLUSH_EVERY).await {
            let r = shared.clone();
            let _ = tokio::task::spawn_blocking(move || r.app.usage.flush(r.app.dbs.main())).await;
        }
    });
}

/// Runs job rounds of one database on a blocking thread until the node
/// stops; idles 25 ms when there was nothing to do (an idle round is one
/// indexed read). On stop, waits (bounded by `wait`) for steps still
/// calling out, so each ends committed or rolled back whole. Each database
/// has its own dispatcher lease: a job's fence is a statement of its
/// database's transaction.
fn run_jobs(host: &Arc<DatabaseJobs>, stop: &Stop, config: crate::jobs::RunnerConfig, wait: Duration) {
    let mut runner = crate::jobs::Runner::new(config);
    host.shared.app.bells.hang(&host.db, runner.bell());
    while !stop.is_set() {
        if runner.tick(host) == 0 {
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
}

/// SIGHUP reads the plugin folder again (on a blocking thread: plugins
/// compile); calls in flight finish on the version they started with.
pub(crate) fn spawn_plugin_reloads(shared: Arc<Shared>, loops: &Supervisor) {
    #[cfg(unix)]
    loops.spawn("plugin-reloads", |mut stop| async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else { return };
        loop {
            tokio::select! {
                _ = stop.wait() => return,
                signal = hup.recv() => if signal.is_none() { return },
            }
            tracing::info!("SIGHUP: reloading plugins");
            let s = shared.clone();
            let _ = tokio::task::spawn_blocking(move || s.app.components.providers().plugins.reload()).await;
        }
    });
    #[cfg(not(unix))]
    let _ = (shared, loops);
}

/// Deletes idempotency records past their retention.
fn purge_expired_idempotency(db: &Db) {
    let Some(_gate) = db.write_gate(Duration::from_secs(5)) else { return };
    if let Ok(c) = db.conn() {
        let oldest = crate::clock::now_ms() - switchboard_gateway::idempotency::RETENTION_SECONDS * 1000;
        let _ = crate::db::execute(&c, "DELETE FROM idempotency_records WHERE created_at_ms < ?1", crate::db::params![oldest]);
    }
}
