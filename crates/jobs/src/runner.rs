//! The runner: leadership, claim rounds, steps that call out on worker
//! threads, and the idle wait.

use super::*;

/// Steps that call out running at once in a process by default
/// (`--job-concurrency`).
///
/// Such a step spends its time waiting on another service (an AI endpoint,
/// a carrier, a webhook receiver), not on a core, so the bound is what it
/// holds while it waits: a thread of its own (a few hundred KiB of stack
/// touched), one wasm instance slot of the process's pool of
/// [`switchboard_runtime::engine::MAX_INSTANCES`] (128, shared with
/// requests; 64 leaves them the other half) and that instance's memory.
/// One business gets at most half (the fair pick), so 20 calls of one
/// business waiting on a slow AI all run at once (`bench/twilio_turns.sh`).
pub const DEFAULT_CONCURRENCY: usize = 64;

/// Batches the calls-out claims of one kind and one business are split
/// into at least (when there are that many), each run on a thread of its
/// own: one step's guest and completion run while another's requests are
/// out (see `batches`).
pub const BATCH_PARTS: usize = 2;

/// How the runner runs steps (`serve` flags).
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Steps that call out running at once in this process: every
    /// database's runner together (`--job-concurrency`).
    pub concurrency: usize,
    /// How a round's batched claims are split into steps.
    pub batch_split: BatchSplit,
    /// Those steps' slots, shared by the runners made from clones of this
    /// config (one per database).
    slots: Arc<Slots>,
}

impl RunnerConfig {
    pub fn new(concurrency: usize) -> RunnerConfig {
        RunnerConfig { concurrency, batch_split: BatchSplit::default(), slots: Arc::default() }
    }

    /// The same, with `split` instead of the default split.
    pub fn with_batch_split(self, split: BatchSplit) -> RunnerConfig {
        RunnerConfig { batch_split: split, ..self }
    }
}

/// How a round's batched claims of one kind and one business are split
/// (`batches`): into up to `parts` steps of at least `min` claims each.
/// [`BATCH_PARTS`] and [`BATCH_MIN_SPLIT`] by default; the benchmarks
/// compare others (`serve`'s hidden `--job-batch-split PARTS,MIN`, set as
/// `SWITCHBOARD_JOB_BATCH_SPLIT`: `1,1000` runs every batched claim of a
/// round in one step, `1000,1` each alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSplit {
    pub parts: usize,
    pub min: usize,
}

impl Default for BatchSplit {
    fn default() -> Self {
        BatchSplit { parts: BATCH_PARTS, min: BATCH_MIN_SPLIT }
    }
}

impl BatchSplit {
    /// `PARTS,MIN` (each a whole number, spaces around it allowed); `None`
    /// for anything else.
    pub fn parse(text: &str) -> Option<BatchSplit> {
        let (parts, min) = text.split_once(',')?;
        Some(BatchSplit { parts: parts.trim().parse().ok()?, min: min.trim().parse().ok()? })
    }
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig::new(DEFAULT_CONCURRENCY)
    }
}

/// The slots taken by steps that call out, counted across runners.
#[derive(Debug, Default)]
struct Slots {
    taken: AtomicUsize,
}

impl Slots {
    /// Takes every slot of `limit` that is free (none when all are taken).
    fn take_free(&self, limit: usize) -> usize {
        let mut got = 0;
        let _ = self.taken.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| {
            got = limit.saturating_sub(taken);
            Some(taken + got)
        });
        got
    }

    fn give_back(&self, n: usize) {
        self.taken.fetch_sub(n, Ordering::SeqCst);
    }
}

/// What the runner needs from the process: the database and the components.
pub trait JobHost: Send + Sync + 'static {
    fn db(&self) -> &Db;
    fn components(&self) -> &Components;
}

/// Jobs this node is running now: job id → fence. Their leases are renewed
/// while they run, so a live step never loses its job to a reclaim.
pub(crate) type InFlight = Arc<Mutex<HashMap<String, i64>>>;

/// Claims whose step ended without its completion committing (on a node of
/// a primary: the primary went away mid-step): job id → fence. Each round
/// hands them back (fenced) as soon as storage answers, instead of leaving
/// them leased until their lease runs out.
pub(crate) type Unsettled = Arc<Mutex<Vec<(String, i64)>>>;

pub struct Runner {
    pub node: String,
    pub(crate) leader_until_ms: i64,
    config: RunnerConfig,
    in_flight: InFlight,
    unsettled: Unsettled,
    /// Calls-out steps running on worker threads.
    calling_out: Arc<AtomicUsize>,
    last_renewal_ms: i64,
    /// Rung when a step that calls out ends (its slot and its lane are free).
    wake: Arc<Wake>,
    /// The group commit of those steps' completions.
    group: Group,
    /// The job kinds the dispatcher runs several at a time, asked once.
    batched: Option<Vec<String>>,
}

/// A wake-up call for the idle runner.
#[derive(Default)]
pub struct Wake {
    rung: Mutex<bool>,
    bell: parking_lot::Condvar,
}

impl Wake {
    pub fn notify(&self) {
        *self.rung.lock() = true;
        self.bell.notify_one();
    }
    /// Waits until rung or `timeout`.
    pub fn wait(&self, timeout: Duration) {
        let mut rung = self.rung.lock();
        if !*rung {
            self.bell.wait_for(&mut rung, timeout);
        }
        *rung = false;
    }
}

impl Runner {
    pub fn new(config: RunnerConfig) -> Runner {
        Runner {
            group: Group::default(),
            node: uuid::Uuid::new_v4().to_string(),
            leader_until_ms: 0,
            config,
            in_flight: Arc::default(),
            unsettled: Arc::default(),
            calling_out: Arc::default(),
            last_renewal_ms: 0,
            wake: Arc::default(),
            batched: None,
        }
    }

    /// One round: keep or take leadership, renew the leases of running
    /// steps, claim due jobs and run them: steps that call out on worker
    /// threads (up to the concurrency bound), the others here, one after
    /// another (they hold the write lock anyway). Returns how many jobs were
    /// started (0 = idle).
    pub fn tick<H: JobHost>(&mut self, host: &Arc<H>) -> usize {
        let db = host.db();
        if !self.lead(db) {
            return 0;
        }
        self.renew_leases(db);
        self.settle(db);
        // A cheap read first: an idle round takes no write lock.
        if !has_due(db) {
            return 0;
        }
        // The process's free slots, taken for this claim (another
        // database's runner claiming meanwhile finds them taken); the ones
        // it leaves unused go back at once.
        let slots = self.config.slots.clone();
        let free = slots.take_free(self.config.concurrency);
        let per_business = (self.config.concurrency / 2).max(1);
        let claims = match claim_fair(db, &self.node, LOCAL_BATCH, free as i64, per_business as i64) {
            Ok(c) => c,
            Err(e) => {
                slots.give_back(free);
                tracing::warn!(error = %e, "job claim failed");
                return 0;
            }
        };
        let started = claims.len();
        let (remote, local): (Vec<Claim>, Vec<Claim>) = claims.into_iter().partition(|c| c.calls_out);
        slots.give_back(free - remote.len());
        {
            let mut running = self.in_flight.lock();
            for c in remote.iter().chain(&local) {
                running.insert(c.id.clone(), c.fence);
            }
        }
        let batched = self.batched.get_or_insert_with(|| host.components().batched_kinds());
        for batch in batches(remote, batched, self.config.batch_split) {
            self.calling_out.fetch_add(1, Ordering::SeqCst);
            let (host, node, in_flight, calling_out, unsettled) = (host.clone(), self.node.clone(), self.in_flight.clone(), self.calling_out.clone(), self.unsettled.clone());
            let (wake, group, slots) = (self.wake.clone(), self.group.clone(), slots.clone());
            let held = batch.len();
            let spawned = std::thread::Builder::new().name("job-step".into()).spawn(move || {
                // A slot per claim running: fewer as lanes run dry.
                let mut current = batch;
                for handoffs_left in (0..LANE_HANDOFFS).rev() {
                    let next = run_claims(host.db(), host.components(), &node, &current, handoffs_left > 0, &unsettled, Some(&group));
                    {
                        let mut running = in_flight.lock();
                        for c in &current {
                            running.remove(&c.id);
                        }
                        for n in &next {
                            running.insert(n.id.clone(), n.fence);
                        }
                    }
                    if next.len() < current.len() {
                        slots.give_back(current.len() - next.len());
                        wake.notify();
                    }
                    current = next;
                    if current.is_empty() {
                        break;
                    }
                }
                slots.give_back(current.len());
                calling_out.fetch_sub(1, Ordering::SeqCst);
                wake.notify();
            });
            if spawned.is_err() {
                // No thread: the leases run out and the jobs are claimed again.
                self.calling_out.fetch_sub(1, Ordering::SeqCst);
                self.config.slots.give_back(held);
            }
        }
        for c in local {
            run_one(db, host.components(), &self.node, &c, false, &self.unsettled, None);
            self.in_flight.lock().remove(&c.id);
            self.renew_leases(db);
        }
        started
    }

    /// Hands unsettled claims back: pending again, due as they were, still
    /// only if their fence holds. Kept for the next round when storage
    /// does not answer.
    fn settle(&mut self, db: &Db) {
        let claims: Vec<(String, i64)> = std::mem::take(&mut *self.unsettled.lock());
        if claims.is_empty() {
            return;
        }
        let settled = (|| -> anyhow::Result<u64> {
            let mut gate = db.background_gate(Duration::from_secs(5)).ok_or_else(|| anyhow::anyhow!("the write gate is busy"))?;
            let rows = claims.iter().map(|(id, fence)| db::params![id, *fence]).collect();
            gate.transaction(|c| Ok(c.execute_many("UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_until_ms = NULL WHERE id = ?1 AND fence = ?2 AND state = 'leased'", rows)?))
        })();
        if settled.is_err() {
            self.unsettled.lock().extend(claims);
        }
    }

    /// The bell that ends this runner's idle wait: rung when a step that
    /// calls out ends, and by whoever makes a step due that should run now
    /// (a carrier's turn post, host/src/carrier_events/turns.rs).
    pub fn bell(&self) -> Arc<Wake> {
        self.wake.clone()
    }

    /// Idles until a step that calls out ends, or `timeout`.
    pub fn idle(&self, timeout: Duration) {
        self.wake.wait(timeout);
    }

    /// Steps that call out and are still running.
    pub fn calling_out(&self) -> usize {
        self.calling_out.load(Ordering::SeqCst)
    }

    /// Extends the lease of every step this node is running, once a third of
    /// the lease has passed (a stalled node stops renewing, so its jobs are
    /// reclaimed when the lease runs out).
    fn renew_leases(&mut self, db: &Db) {
        let now = crate::clock::now_ms();
        if now - self.last_renewal_ms < JOB_LEASE.as_millis() as i64 / 3 {
            return;
        }
        let running: Vec<(String, i64)> = self.in_flight.lock().iter().map(|(k, v)| (k.clone(), *v)).collect();
        self.last_renewal_ms = now;
        if running.is_empty() {
            return;
        }
        let Some(_gate) = db.background_gate(Duration::from_secs(5)) else { return };
        let Ok(c) = db.conn() else { return };
        let until = now + JOB_LEASE.as_millis() as i64;
        if db::execute(&c, "BEGIN IMMEDIATE", vec![]).is_err() {
            return;
        }
        for (id, fence) in running {
            let _ = db::execute(&c, "UPDATE jobs SET lease_until_ms = ?3 WHERE id = ?1 AND fence = ?2 AND state = 'leased'", db::params![id, fence, until]);
        }
        if db::execute(&c, "COMMIT", vec![]).is_err() {
            let _ = db::execute(&c, "ROLLBACK", vec![]);
        }
    }

    /// Gives the dispatcher lease up (a graceful stop with no step still
    /// calling out), so a node started next on this data takes it at once
    /// instead of waiting for it to expire.
    pub fn step_down(&mut self, db: &Db) {
        if self.leader_until_ms == 0 {
            return;
        }
        let Some(_gate) = db.background_gate(Duration::from_secs(5)) else { return };
        let Ok(c) = db.conn() else { return };
        let released = db::execute(&c, "UPDATE leases SET expires_at_ms = 0 WHERE name = 'dispatcher' AND owner = ?1", db::params![&self.node]);
        if released.is_ok_and(|n| n == 1) {
            tracing::info!("gave the dispatcher lease up");
        }
        self.leader_until_ms = 0;
    }

    /// Takes or renews the dispatcher lease; true while this node leads.
    /// A node that takes the lease over from another releases the jobs the
    /// other left leased: only the leader runs jobs, so they are orphans,
    /// and the next claim gives them a new fence (a stalled old leader's
    /// late completion is refused).
    pub(crate) fn lead(&mut self, db: &Db) -> bool {
        let now = crate::clock::now_ms();
        // Renew only past half the lease, to keep idle writes rare.
        if self.leader_until_ms - now > LEADER_LEASE.as_millis() as i64 / 2 {
            return true;
        }
        let Ok(c) = db.conn() else { return false };
        // A follower reads the lease first, without a write transaction (on
        // a node of a primary: from its replica), and asks for it only once
        // it looks expired.
        if self.leader_until_ms == 0 {
            if let Ok(row) = db::query_one_as::<(String, i64)>(&c, "SELECT owner, expires_at_ms FROM leases WHERE name = 'dispatcher'", db::params![]) {
                if row.is_some_and(|(owner, expires)| owner != self.node && expires >= now) {
                    return false;
                }
            }
        }
        let Some(_gate) = db.background_gate(Duration::from_secs(5)) else { return false };
        let until = now + LEADER_LEASE.as_millis() as i64;
        let me = &self.node;
        let mut took_over = false;
        let result = (|| -> anyhow::Result<bool> {
            db::execute(&c, "BEGIN IMMEDIATE", vec![])?;
            db::execute(&c, "INSERT OR IGNORE INTO leases (name, owner, fence, expires_at_ms) VALUES ('dispatcher', '', 0, 0)", vec![])?;
            let row = db::query_one_as::<(String, i64)>(&c, "SELECT owner, expires_at_ms FROM leases WHERE name = 'dispatcher'", db::params![])?;
            let (owner, expires) = row.unwrap_or_default();
            if owner != self.node && expires >= now {
                return Ok(false);
            }
            db::execute(&c, "UPDATE leases SET fence = fence + (owner <> ?1), owner = ?1, expires_at_ms = ?2 WHERE name = 'dispatcher'", db::params![me, until])?;
            if owner != self.node {
                took_over = true;
                let released = db::execute(
                    &c,
                    "UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_until_ms = NULL \
                     WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND lease_owner <> ?1)",
                    db::params![me],
                )?;
                if released > 0 {
                    tracing::info!(released, "took over the dispatcher lease and released the orphaned jobs");
                }
            }
            Ok(true)
        })();
        let won = match result {
            Ok(won) => db::execute(&c, "COMMIT", vec![]).is_ok() && won,
            Err(_) => {
                let _ = db::execute(&c, "ROLLBACK", vec![]);
                false
            }
        };
        if won && took_over {
            tracing::info!("this node runs the dispatcher now");
        }
        self.leader_until_ms = if won { until } else { 0 };
        won
    }
}

/// Whether any job is due (or left with an expired lease), read without the
/// write gate. `+?1`: prepared once, as `PICK_FAIR` says.
pub(crate) fn has_due(db: &Db) -> bool {
    let Ok(c) = db.read_conn() else { return false };
    let now = crate::clock::now_ms();
    db::query_one_as::<bool>(
        &c,
        "SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_pending_due WHERE state = 'pending' AND due_at_ms <= +?1) \
             OR EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND lease_until_ms < +?1)",
        db::params![now],
    )
    .is_ok_and(|due| due == Some(true))
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn runners_made_from_one_config_share_its_slots() {
        let config = RunnerConfig::new(4);
        let (a, b) = (config.clone(), config.clone());
        assert_eq!(a.slots.take_free(a.concurrency), 4);
        assert_eq!(b.slots.take_free(b.concurrency), 0, "another database's runner finds them taken");
        a.slots.give_back(3);
        assert_eq!(b.slots.take_free(b.concurrency), 3);
        assert_eq!(RunnerConfig::new(4).slots.take_free(4), 4, "another config counts its own");
    }

    #[test]
    fn a_batch_split_reads_parts_and_min() {
        assert_eq!(BatchSplit::parse("5,2"), Some(BatchSplit { parts: 5, min: 2 }));
        assert_eq!(BatchSplit::parse(" 1 , 1000 "), Some(BatchSplit { parts: 1, min: 1000 }));
        for bad in ["", "5", "5,", ",2", "a,2", "5,2,1", "-1,2"] {
            assert_eq!(BatchSplit::parse(bad), None, "{bad}");
        }
        assert_eq!(BatchSplit::default(), BatchSplit { parts: BATCH_PARTS, min: BATCH_MIN_SPLIT });
    }
}
