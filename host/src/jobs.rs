//! The durable job runner: leadership, claiming with fencing tokens, running
//! each job through the dispatcher component, and fenced completion.
//!
//! A job's writes and its new state commit in one transaction, and only while
//! the fence taken at claim time is still the job's fence. Work left leased by
//! a crashed or stalled node is reclaimed once its lease expires, with a new
//! fence, so the stalled node's late completion is refused.

use crate::db::{self, Db, SqlValue};
use crate::engine::{CallError, Components, Job, Outcome};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a claimed job stays ours without completing.
pub const JOB_LEASE: Duration = Duration::from_secs(60);
/// How long a node stays leader without renewing.
pub const LEADER_LEASE: Duration = Duration::from_secs(10);
/// Failed attempts before a job is declared dead.
pub const MAX_ATTEMPTS: i64 = 25;
/// Steps that do not call out, claimed per round (run one after another).
const LOCAL_BATCH: i64 = 8;

/// A claimed job and the fence that proves the claim.
#[derive(Debug, Clone)]
pub struct Claim {
    pub id: String,
    pub kind: String,
    pub business_id: String,
    pub payload: String,
    pub attempts: i64,
    pub fence: i64,
    /// The job declared that its steps call out (see `run_one`).
    pub calls_out: bool,
    /// The job's lane, if any (see `PICK_FAIR`).
    pub lane: Option<String>,
}

fn t(v: &SqlValue) -> String {
    match v {
        SqlValue::Text(s) => s.clone(),
        SqlValue::Integer(i) => i.to_string(),
        _ => String::new(),
    }
}
fn i(v: &SqlValue) -> i64 {
    match v {
        SqlValue::Integer(i) => *i,
        _ => 0,
    }
}

/// How the runner runs steps (`serve` flags).
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Steps that call out running at once (`--job-concurrency`).
    pub concurrency: usize,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig { concurrency: 16 }
    }
}

/// What the runner needs from the process: the database and the components.
pub trait JobHost: Send + Sync + 'static {
    fn db(&self) -> &Db;
    fn components(&self) -> &Components;
}

/// Jobs this node is running now: job id → fence. Their leases are renewed
/// while they run, so a live step never loses its job to a reclaim.
type InFlight = Arc<Mutex<HashMap<String, i64>>>;

/// Claims whose step ended without its completion committing (on a node of
/// a primary: the primary went away mid-step): job id → fence. Each round
/// hands them back (fenced) as soon as storage answers, instead of leaving
/// them leased until their lease runs out.
type Unsettled = Arc<Mutex<Vec<(String, i64)>>>;

pub struct Runner {
    pub node: String,
    leader_until_ms: i64,
    config: RunnerConfig,
    in_flight: InFlight,
    unsettled: Unsettled,
    /// Calls-out steps running on worker threads.
    calling_out: Arc<AtomicUsize>,
    last_renewal_ms: i64,
    /// Rung when a step that calls out ends (its slot and its lane are free).
    wake: Arc<Wake>,
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
            node: uuid::Uuid::new_v4().to_string(),
            leader_until_ms: 0,
            config,
            in_flight: Arc::default(),
            unsettled: Arc::default(),
            calling_out: Arc::default(),
            last_renewal_ms: 0,
            wake: Arc::default(),
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
        let free = self.config.concurrency.saturating_sub(self.calling_out.load(Ordering::SeqCst));
        let per_business = (self.config.concurrency / 2).max(1);
        let claims = match claim_fair(db, &self.node, LOCAL_BATCH, free as i64, per_business as i64) {
            Ok(c) => c,
            Err(e) => {
                crate::logging::line("warn", &format!("job claim failed: {e}"));
                return 0;
            }
        };
        let started = claims.len();
        let (remote, local): (Vec<Claim>, Vec<Claim>) = claims.into_iter().partition(|c| c.calls_out);
        {
            let mut running = self.in_flight.lock();
            for c in remote.iter().chain(&local) {
                running.insert(c.id.clone(), c.fence);
            }
        }
        for c in remote {
            self.calling_out.fetch_add(1, Ordering::SeqCst);
            let (host, node, in_flight, calling_out, unsettled) =
                (host.clone(), self.node.clone(), self.in_flight.clone(), self.calling_out.clone(), self.unsettled.clone());
            let wake = self.wake.clone();
            let spawned = std::thread::Builder::new().name("job-step".into()).spawn(move || {
                let mut current = c;
                for handoffs_left in (0..LANE_HANDOFFS).rev() {
                    let next = run_one(host.db(), host.components(), &node, &current, handoffs_left > 0, &unsettled);
                    let mut running = in_flight.lock();
                    running.remove(&current.id);
                    match next {
                        Some(n) => {
                            running.insert(n.id.clone(), n.fence);
                            current = n;
                        }
                        None => break,
                    }
                }
                calling_out.fetch_sub(1, Ordering::SeqCst);
                wake.notify();
            });
            if spawned.is_err() {
                // No thread: the lease runs out and the job is claimed again.
                self.calling_out.fetch_sub(1, Ordering::SeqCst);
            }
        }
        for c in local {
            run_one(db, host.components(), &self.node, &c, false, &self.unsettled);
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
            let mut gate = db.write_gate(Duration::from_secs(5)).ok_or_else(|| anyhow::anyhow!("the write gate is busy"))?;
            let rows = claims.iter().map(|(id, fence)| vec![SqlValue::Text(id.clone()), SqlValue::Integer(*fence)]).collect();
            gate.transaction(|c| {
                Ok(c.execute_many(
                    "UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_until_ms = NULL WHERE id = ?1 AND fence = ?2 AND state = 'leased'",
                    rows,
                )?)
            })
        })();
        if settled.is_err() {
            self.unsettled.lock().extend(claims);
        }
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
        let Some(_gate) = db.write_gate(Duration::from_secs(5)) else { return };
        let Ok(c) = db.conn() else { return };
        let until = SqlValue::Integer(now + JOB_LEASE.as_millis() as i64);
        if db::execute(&c, "BEGIN IMMEDIATE", vec![]).is_err() {
            return;
        }
        for (id, fence) in running {
            let _ = db::execute(
                &c,
                "UPDATE jobs SET lease_until_ms = ?3 WHERE id = ?1 AND fence = ?2 AND state = 'leased'",
                vec![SqlValue::Text(id), SqlValue::Integer(fence), until.clone()],
            );
        }
        if db::execute(&c, "COMMIT", vec![]).is_err() {
            let _ = db::execute(&c, "ROLLBACK", vec![]);
        }
    }

    /// Takes or renews the dispatcher lease; true while this node leads.
    /// A node that takes the lease over from another releases the jobs the
    /// other left leased: only the leader runs jobs, so they are orphans,
    /// and the next claim gives them a new fence (a stalled old leader's
    /// late completion is refused).
    fn lead(&mut self, db: &Db) -> bool {
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
            if let Ok(row) = db::query_rows(&c, "SELECT owner, expires_at_ms FROM leases WHERE name = 'dispatcher'", vec![]) {
                if row.first().is_some_and(|r| t(&r[0]) != self.node && i(&r[1]) >= now) {
                    return false;
                }
            }
        }
        let Some(_gate) = db.write_gate(Duration::from_secs(5)) else { return false };
        let until = now + LEADER_LEASE.as_millis() as i64;
        let me = SqlValue::Text(self.node.clone());
        let mut took_over = false;
        let result = (|| -> anyhow::Result<bool> {
            db::execute(&c, "BEGIN IMMEDIATE", vec![])?;
            db::execute(&c, "INSERT OR IGNORE INTO leases (name, owner, fence, expires_at_ms) VALUES ('dispatcher', '', 0, 0)", vec![])?;
            let row = db::query_rows(&c, "SELECT owner, expires_at_ms FROM leases WHERE name = 'dispatcher'", vec![])?;
            let (owner, expires) = row.first().map(|r| (t(&r[0]), i(&r[1]))).unwrap_or_default();
            if owner != self.node && expires >= now {
                return Ok(false);
            }
            db::execute(
                &c,
                "UPDATE leases SET fence = fence + (owner <> ?1), owner = ?1, expires_at_ms = ?2 WHERE name = 'dispatcher'",
                vec![me.clone(), SqlValue::Integer(until)],
            )?;
            if owner != self.node {
                took_over = true;
                let released = db::execute(
                    &c,
                    "UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_until_ms = NULL \
                     WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND lease_owner <> ?1)",
                    vec![me.clone()],
                )?;
                if released > 0 {
                    crate::logging::line("info", &format!("took over the dispatcher lease; released {released} orphaned job(s)"));
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
            crate::logging::line("info", "this node runs the dispatcher now");
        }
        self.leader_until_ms = if won { until } else { 0 };
        won
    }
}

/// How long a finished job (done or dead) and its run records are kept: a
/// week to look into a delivery or a failure, then they go, so the jobs
/// table (every delivery's payload) does not grow for ever.
pub const FINISHED_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Finished jobs deleted per write transaction by `purge_finished`.
const PURGE_BATCH: i64 = 2_000;

/// Every (kind, state) the queue gauges were ever set for: an emptied queue
/// reads 0, not its last depth.
static QUEUE_LABELS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// Sets the queue gauges for a scrape of `/metrics`: the depth and oldest
/// due age of pending and leased jobs per kind, and the rows ingestion
/// versions hold (all businesses together).
pub fn queue_gauges(db: &Db) {
    let int = |v: &SqlValue| match v {
        SqlValue::Integer(i) => *i,
        _ => 0,
    };
    let Ok(conn) = db.conn() else { return };
    let now = crate::clock::now_ms();
    let rows = db::query_rows(
        &conn,
        "SELECT kind, 'pending', COUNT(*), MIN(due_at_ms) FROM jobs INDEXED BY jobs_pending_due WHERE state = 'pending' GROUP BY kind \
         UNION ALL SELECT kind, 'leased', COUNT(*), MIN(due_at_ms) FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' GROUP BY kind",
        vec![],
    )
    .unwrap_or_default();
    let mut seen = QUEUE_LABELS.lock();
    for (kind, state) in seen.iter() {
        let labels = [("kind", kind.clone()), ("state", state.clone())];
        metrics::gauge!("switchboard_jobs_queued", &labels).set(0.0);
        metrics::gauge!("switchboard_jobs_oldest_due_age_seconds", &labels).set(0.0);
    }
    for r in rows {
        let key = (db::text(&r[0]), db::text(&r[1]));
        if !seen.contains(&key) {
            seen.push(key.clone());
        }
        let labels = [("kind", key.0), ("state", key.1)];
        metrics::gauge!("switchboard_jobs_queued", &labels).set(int(&r[2]) as f64);
        let age = ((now - int(&r[3])).max(0) as f64) / 1000.0;
        metrics::gauge!("switchboard_jobs_oldest_due_age_seconds", &labels).set(age);
    }
    drop(seen);
    let rows = db::query_rows(&conn, "SELECT IFNULL(SUM(row_count), 0), COUNT(*) FROM ingestion_versions", vec![]).unwrap_or_default();
    if let Some(r) = rows.first() {
        metrics::gauge!("switchboard_ingestion_rows").set(int(&r[0]) as f64);
        metrics::gauge!("switchboard_ingestion_versions").set(int(&r[1]) as f64);
    }
}

/// Deletes the jobs finished before `FINISHED_RETENTION` (by the time they
/// were last due, about when their last step ran), with their run records,
/// a batch per short write transaction so writers never wait long. Returns
/// how many jobs went.
pub fn purge_finished(db: &Db, now_ms: i64) -> u64 {
    let cutoff = SqlValue::Integer(now_ms - FINISHED_RETENTION.as_millis() as i64);
    let mut purged = 0;
    for state in ["done", "dead"] {
        loop {
            // Found by a read, outside the write gate: no index holds
            // finished jobs (every state change would rewrite it), so this
            // scans the table, oldest rows first.
            let picked = db.read_conn().and_then(|c| {
                db::query_rows(
                    &c,
                    "SELECT id FROM jobs WHERE state = ?1 AND due_at_ms < ?2 LIMIT ?3",
                    vec![SqlValue::Text(state.into()), cutoff.clone(), SqlValue::Integer(PURGE_BATCH)],
                )
            });
            let ids: Vec<SqlValue> = match picked {
                Ok(rows) => rows.into_iter().filter_map(|mut r| r.pop()).collect(),
                Err(e) => {
                    crate::logging::line("warn", &format!("purging finished jobs failed: {e}"));
                    return purged;
                }
            };
            if ids.is_empty() {
                break;
            }
            let Some(mut gate) = db.write_gate(Duration::from_secs(5)) else { return purged };
            let found = ids.len();
            let deleted = gate.transaction(|c| {
                c.execute_many("DELETE FROM job_runs WHERE job_id = ?1", ids.iter().map(|id| vec![id.clone()]).collect())?;
                Ok(c.execute_many("DELETE FROM jobs WHERE id = ?1 AND state = ?2", ids.iter().map(|id| vec![id.clone(), SqlValue::Text(state.into())]).collect())?)
            });
            match deleted {
                Ok(n) => purged += n,
                Err(e) => {
                    crate::logging::line("warn", &format!("purging finished jobs failed: {e}"));
                    return purged;
                }
            }
            if found < PURGE_BATCH as usize {
                break;
            }
        }
    }
    purged
}

/// Whether any job is due (or left with an expired lease), read without the
/// write gate.
fn has_due(db: &Db) -> bool {
    let Ok(c) = db.read_conn() else { return false };
    let now = SqlValue::Integer(crate::clock::now_ms());
    db::query_rows(
        &c,
        "SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_pending_due WHERE state = 'pending' AND due_at_ms <= ?1) \
             OR EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND lease_until_ms < ?1)",
        vec![now],
    )
    .map(|r| matches!(r.first().and_then(|r| r.first()), Some(SqlValue::Integer(1))))
    .unwrap_or(false)
}

/// Claims up to `limit` due jobs of either kind (tests).
#[cfg(test)]
pub fn claim(db: &Db, node: &str, limit: i64) -> anyhow::Result<Vec<Claim>> {
    claim_fair(db, node, limit, limit, i64::MAX)
}

/// Picks the due jobs of one class (`calls_out` 0 or 1) fairly: at most one
/// per lane and none of a lane that has a live step, then round-robin
/// across businesses (every business's oldest job before anyone's second),
/// and no business past `?4` steps of the class at once. `?1` now, `?2` the
/// class, `?3` how many.
///
/// The candidates come from indexes holding only pending or leased jobs
/// (migration 0027): the oldest 2,000 due jobs without a lane, and the head
/// of each lane that has pending work and no live step, found by walking
/// the distinct lanes (`lanes`: one index seek per lane), so a deep backlog
/// in a busy lane is never scanned. A lane holds jobs of one kind, hence
/// one class. `INDEXED BY` because the planner's statistics do not know
/// these partial indexes are small.
const PICK_FAIR: &str = "\
WITH RECURSIVE live_lanes AS (
    SELECT DISTINCT lane FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND lease_until_ms >= ?1 AND lane IS NOT NULL
), lanes(lane) AS (
    SELECT (SELECT lane FROM jobs INDEXED BY jobs_lane_ready WHERE state = 'pending' AND lane IS NOT NULL ORDER BY lane LIMIT 1)
    UNION ALL
    SELECT (SELECT j.lane FROM jobs j INDEXED BY jobs_lane_ready WHERE j.state = 'pending' AND j.lane IS NOT NULL AND j.lane > l.lane ORDER BY j.lane LIMIT 1)
    FROM lanes l WHERE l.lane IS NOT NULL
), heads AS (
    SELECT (SELECT j.id FROM jobs j INDEXED BY jobs_lane_ready WHERE j.state = 'pending' AND j.lane IS NOT NULL AND j.lane = l.lane ORDER BY j.due_at_ms, j.id LIMIT 1) AS id
    FROM lanes l WHERE l.lane IS NOT NULL AND l.lane NOT IN (SELECT lane FROM live_lanes)
), due AS (
    SELECT id, business_id, lane, due_at_ms FROM (
        SELECT * FROM (
            SELECT id, business_id, lane, due_at_ms FROM jobs INDEXED BY jobs_unlaned_ready
            WHERE state = 'pending' AND lane IS NULL AND calls_out = ?2 AND due_at_ms <= ?1 ORDER BY due_at_ms LIMIT 2000
        )
        UNION ALL
        SELECT j.id, j.business_id, j.lane, j.due_at_ms FROM heads h JOIN jobs j ON j.id = h.id WHERE j.calls_out = ?2 AND j.due_at_ms <= ?1
        UNION ALL
        SELECT id, business_id, lane, due_at_ms FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND calls_out = ?2 AND lease_until_ms < ?1
          AND (lane IS NULL OR lane NOT IN (SELECT lane FROM live_lanes))
    )
    ORDER BY due_at_ms LIMIT 2000
), lane_heads AS (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY IFNULL(lane, id) ORDER BY due_at_ms, id) AS lane_rank FROM due
), ranked AS (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY business_id ORDER BY due_at_ms, id) AS turn FROM lane_heads WHERE lane_rank = 1
), busy AS (
    SELECT business_id, COUNT(*) AS running FROM jobs INDEXED BY jobs_leased
    WHERE state = 'leased' AND lease_until_ms >= ?1 AND calls_out = ?2 GROUP BY business_id
)
SELECT r.id FROM ranked r LEFT JOIN busy b ON b.business_id = r.business_id
WHERE r.turn + IFNULL(b.running, 0) <= ?4
ORDER BY r.turn, r.due_at_ms, r.id LIMIT ?3";

/// Claims due jobs, giving each a new fence: up to `local` steps that do not
/// call out and `remote` that do, picked fairly (see `PICK_FAIR`; a business
/// runs at most `per_business` steps that call out at once).
pub fn claim_fair(db: &Db, node: &str, local: i64, remote: i64, per_business: i64) -> anyhow::Result<Vec<Claim>> {
    // The pick is a read, done without the write gate: a round that finds
    // nothing claimable (e.g. a backlog whose lane is busy) must not hold up
    // the steps that are completing.
    let now = crate::clock::now_ms();
    let mut ids = Vec::new();
    {
        let c = db.conn()?;
        for (class, limit, cap) in [(0i64, local, i64::MAX), (1, remote, per_business)] {
            if limit <= 0 {
                continue;
            }
            let picked = db::query_rows(
                &c,
                PICK_FAIR,
                vec![SqlValue::Integer(now), SqlValue::Integer(class), SqlValue::Integer(limit), SqlValue::Integer(cap)],
            )?;
            ids.extend(picked.iter().map(|r| t(&r[0])));
        }
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let Some(mut gate) = db.write_gate(Duration::from_secs(5)) else { return Ok(Vec::new()) };
    gate.transaction(|c| {
        let mut claims = Vec::new();
        for id in ids {
            // Still claimable? (Only this leader claims, and a hand-off only
            // takes jobs of a lane that is running, which the pick left out.)
            let rows = db::query_rows(
                &c,
                "SELECT id, kind, business_id, payload, attempts, fence, calls_out, lane FROM jobs WHERE id = ?1 \
                 AND ((state = 'pending' AND due_at_ms <= ?2) OR (state = 'leased' AND lease_until_ms < ?2))",
                vec![SqlValue::Text(id), SqlValue::Integer(now)],
            )?;
            let Some(r) = rows.first() else { continue };
            claims.push(lease(c, r, node, now)?);
        }
        Ok(claims)
    })
}

/// Leases the job of row `r` (id, kind, business_id, payload, attempts,
/// fence, calls_out, lane) to `node` with a new fence.
fn lease(c: &crate::db::Connection, r: &[SqlValue], node: &str, now: i64) -> anyhow::Result<Claim> {
    let claim = Claim {
        id: t(&r[0]),
        kind: t(&r[1]),
        business_id: t(&r[2]),
        payload: t(&r[3]),
        attempts: i(&r[4]) + 1,
        fence: i(&r[5]) + 1,
        calls_out: i(&r[6]) != 0,
        lane: match &r[7] {
            SqlValue::Text(l) => Some(l.clone()),
            _ => None,
        },
    };
    db::execute(
        c,
        "UPDATE jobs SET state = 'leased', lease_owner = ?2, lease_until_ms = ?3, fence = ?4, attempts = ?5 WHERE id = ?1",
        vec![
            SqlValue::Text(claim.id.clone()),
            SqlValue::Text(node.into()),
            SqlValue::Integer(now + JOB_LEASE.as_millis() as i64),
            SqlValue::Integer(claim.fence),
            SqlValue::Integer(claim.attempts),
        ],
    )?;
    Ok(claim)
}

/// Consecutive jobs of one lane a worker takes before its slot goes back to
/// the fair pick (see `run_one`'s hand-off).
pub const LANE_HANDOFFS: u32 = 64;

/// In the completing step's transaction: leases the next due job of the same
/// lane to the same worker (a backlog of one subscription drains without a
/// claim round per delivery; nobody else could run that lane meanwhile).
fn hand_off(c: &crate::db::Connection, lane: &str, node: &str) -> anyhow::Result<Option<Claim>> {
    let now = crate::clock::now_ms();
    let rows = db::query_rows(
        c,
        "SELECT id, kind, business_id, payload, attempts, fence, calls_out, lane FROM jobs INDEXED BY jobs_lane_ready \
         WHERE lane = ?1 AND lane IS NOT NULL AND state = 'pending' AND due_at_ms <= ?2 ORDER BY due_at_ms, id LIMIT 1",
        vec![SqlValue::Text(lane.into()), SqlValue::Integer(now)],
    )?;
    match rows.first() {
        Some(r) => Ok(Some(lease(c, r, node, now)?)),
        None => Ok(None),
    }
}

/// What a pending job's attempt count becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// This claim counts (a retry after a failure).
    Keep,
    /// From zero again: the step moved its payload on.
    Reset,
    /// This claim does not count: the step never ran (no instance slot).
    /// Components read a second claim of one payload as a run that ended
    /// mid-way (the webhook step counts its attempt as interrupted).
    Uncount,
}

/// The job's next state for an outcome.
pub enum Next {
    Done,
    Pending { due_at_ms: i64, payload: Option<String>, attempts: Count, error: Option<String> },
    Dead(String),
}

/// Writes the job's next state, only if `fence` is still its fence. Returns
/// false for a stale fence (the caller must roll back the job's writes).
pub fn complete(c: &crate::db::Connection, claim: &Claim, next: &Next) -> anyhow::Result<bool> {
    let id = SqlValue::Text(claim.id.clone());
    let fence = SqlValue::Integer(claim.fence);
    let n = match next {
        Next::Done => db::execute(
            c,
            "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_until_ms = NULL, last_error = NULL WHERE id = ?1 AND fence = ?2 AND state = 'leased'",
            vec![id.clone(), fence],
        )?,
        Next::Pending { due_at_ms, payload, attempts, error } => db::execute(
            c,
            "UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_until_ms = NULL, due_at_ms = ?3, \
             payload = COALESCE(?4, payload), attempts = CASE ?5 WHEN 1 THEN 0 WHEN 2 THEN MAX(attempts - 1, 0) ELSE attempts END, last_error = ?6 \
             WHERE id = ?1 AND fence = ?2 AND state = 'leased'",
            vec![
                id.clone(),
                fence,
                SqlValue::Integer(*due_at_ms),
                payload.clone().map(SqlValue::Text).unwrap_or(SqlValue::Null),
                SqlValue::Integer(match attempts {
                    Count::Keep => 0,
                    Count::Reset => 1,
                    Count::Uncount => 2,
                }),
                error.clone().map(SqlValue::Text).unwrap_or(SqlValue::Null),
            ],
        )?,
        Next::Dead(reason) => db::execute(
            c,
            "UPDATE jobs SET state = 'dead', lease_owner = NULL, lease_until_ms = NULL, last_error = ?3 WHERE id = ?1 AND fence = ?2 AND state = 'leased'",
            vec![id.clone(), fence, SqlValue::Text(reason.clone())],
        )?,
    };
    // A job finished for good needs no memory of its effects. (Under a
    // stale fence nothing matched, and the caller rolls the step back.)
    if n == 1 && matches!(next, Next::Done | Next::Dead(_)) {
        db::execute(c, "DELETE FROM job_effects WHERE job_id = ?1", vec![id])?;
    }
    Ok(n == 1)
}

fn next_for(claim: &Claim, outcome: &Outcome) -> (Next, &'static str, Option<String>) {
    let now = crate::clock::now_ms();
    match outcome {
        Outcome::Done => (Next::Done, "done", None),
        Outcome::Retry(r) if claim.attempts >= MAX_ATTEMPTS => {
            (Next::Dead(format!("gave up after {} attempts: {}", claim.attempts, r.reason)), "dead", Some(r.reason.clone()))
        }
        Outcome::Retry(r) => (
            Next::Pending { due_at_ms: now + r.delay_ms as i64, payload: None, attempts: Count::Keep, error: Some(r.reason.clone()) },
            "retry",
            Some(r.reason.clone()),
        ),
        Outcome::Continue(c) => (
            Next::Pending { due_at_ms: now + c.delay_ms as i64, payload: Some(c.payload_json.clone()), attempts: Count::Reset, error: None },
            "continue",
            None,
        ),
        Outcome::Dead(reason) => (Next::Dead(reason.clone()), "dead", Some(reason.clone())),
    }
}

/// Backoff after a trap: 1 s doubling to 1 h.
fn trap_backoff_ms(attempts: i64) -> i64 {
    (1000i64 << (attempts.clamp(1, 13) - 1)).min(3_600_000)
}

fn record_run(c: &crate::db::Connection, claim: &Claim, node: &str, started: i64, outcome: &str, detail: Option<String>) {
    let _ = db::execute(
        c,
        "INSERT OR REPLACE INTO job_runs (job_id, fence, node, started_at_ms, ended_at_ms, outcome, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        vec![
            SqlValue::Text(claim.id.clone()),
            SqlValue::Integer(claim.fence),
            SqlValue::Text(node.into()),
            SqlValue::Integer(started),
            SqlValue::Integer(crate::clock::now_ms()),
            SqlValue::Text(outcome.into()),
            detail.map(SqlValue::Text).unwrap_or(SqlValue::Null),
        ],
    );
}

/// Runs one claimed job in one write transaction, committed only while its
/// fence holds.
/// Returns the next job of the claim's lane when one was handed to this
/// worker in the same commit (`handoff` allows it).
/// A step whose completion does not commit leaves its claim in `unsettled`.
pub fn run_one(db: &Db, components: &Components, node: &str, claim: &Claim, handoff: bool, unsettled: &Unsettled) -> Option<Claim> {
    // One span per step: its events (the step's line, a component's log
    // lines) carry the job, its kind, attempt and business.
    let span = tracing::info_span!("job_step", jobId = %claim.id, kind = %claim.kind, attempt = claim.attempts, businessId = %claim.business_id);
    let _in_step = span.enter();
    let mut next_in_lane = None;
    let started = crate::clock::now_ms();
    // Network mode: holding the write gate across a remote call would stall
    // every writer, so such a step starts without gate or transaction; its
    // first write takes both (the engine's lazy write), and the completion
    // below joins that transaction. A step therefore makes its remote call
    // before it writes; its writes and its fenced completion still commit
    // together or not at all.
    let network = claim.calls_out;
    let unsettle = || unsettled.lock().push((claim.id.clone(), claim.fence));
    // The gate with the writer connection in a write transaction, or None.
    // A step that calls out completes under the primary's write lock
    // (`Writer::begin_locking`): a conflict would run it, and its call, again.
    let write = || -> Option<(db::WriteGuard, db::Connection)> {
        let mut gate = db.write_gate(Duration::from_secs(30))?;
        let conn = if network { gate.begin_locking() } else { gate.begin() }.ok()?;
        Some((gate, conn))
    };
    // A local step runs on the writer connection, under the gate, from the
    // start; a step that calls out starts on a pooled connection of its own.
    let (conn, local_gate) = if network {
        let Ok(conn) = db.conn().map(|c| c.detach()) else {
            unsettle();
            return None;
        };
        (conn, None)
    } else {
        let Some((gate, conn)) = write() else {
            unsettle();
            return None;
        };
        (conn, Some(gate))
    };
    let job = Job {
        id: claim.id.clone(),
        kind: claim.kind.clone(),
        business_id: claim.business_id.clone(),
        payload_json: claim.payload.clone(),
        attempt: claim.attempts.max(1) as u32,
        fence: claim.fence as u64,
    };
    let (conn, lazy, result) = components.run_job(conn, &job, network.then(|| db.gate()));
    let (conn, mut gate) = match (local_gate, lazy) {
        (Some(gate), _) => (conn, gate),
        // The step wrote: its transaction is open on the writer connection
        // and the gate held; its own connection goes back to the pool.
        (None, Some((gate, own))) => {
            db.give_back(own);
            (conn, gate)
        }
        // It only read (or trapped before writing): the gate and the
        // writer connection now, for the completion.
        (None, None) => {
            db.give_back(conn);
            let Some((gate, writer)) = write() else {
                unsettle();
                return None;
            };
            (writer, gate)
        }
    };
    let finished = match result {
        Ok(outcome) => {
            let (next, label, detail) = next_for(claim, &outcome);
            match complete(&conn, claim, &next) {
                Ok(true) => {
                    record_run(&conn, claim, node, started, label, detail);
                    if let (true, Some(lane)) = (handoff, &claim.lane) {
                        next_in_lane = hand_off(&conn, lane, node).unwrap_or(None);
                    }
                    let committed = db::execute(&conn, "COMMIT", vec![]).is_ok();
                    if committed {
                        crate::metrics::job_step(&claim.kind, label, started);
                        crate::logging::job_step(label, crate::clock::now_ms() - started);
                    } else {
                        next_in_lane = None;
                    }
                    committed
                }
                Ok(false) => {
                    // Stale fence: another node reclaimed the job. Nothing
                    // of this run may survive.
                    let _ = db::execute(&conn, "ROLLBACK", vec![]);
                    crate::logging::line("warn", &format!("job {} completion refused: stale fence {}", claim.id, claim.fence));
                    true
                }
                // Storage did not answer (a primary restarting): the step is
                // rolled back below and its claim handed back, so it runs
                // again as soon as storage answers rather than when its
                // lease runs out.
                Err(e) => {
                    crate::logging::line("warn", &format!("job {} completion failed, handed back: {e}", claim.id));
                    false
                }
            }
        }
        Err(e) => {
            let _ = db::execute(&conn, "ROLLBACK", vec![]);
            let never_ran = matches!(e, CallError::Capacity);
            let reason = match e {
                CallError::Deadline => "the job step exceeded its deadline".to_string(),
                CallError::ResourceLimit => "the job step exceeded its memory limit".to_string(),
                CallError::Capacity => "no instance slot was free".to_string(),
                CallError::Trap(detail) => {
                    crate::logging::line("error", &format!("job {} ({}) trapped: {detail}", claim.id, claim.kind));
                    "the job step failed".to_string()
                }
            };
            let next = if claim.attempts >= MAX_ATTEMPTS && !never_ran {
                Next::Dead(reason.clone())
            } else {
                let attempts = if never_ran { Count::Uncount } else { Count::Keep };
                Next::Pending { due_at_ms: crate::clock::now_ms() + trap_backoff_ms(claim.attempts), payload: None, attempts, error: Some(reason.clone()) }
            };
            db::execute(&conn, "BEGIN IMMEDIATE", vec![]).is_ok()
                && complete(&conn, claim, &next).unwrap_or(false)
                && {
                    record_run(&conn, claim, node, started, "trapped", Some(reason));
                    let committed = db::execute(&conn, "COMMIT", vec![]).is_ok();
                    if committed {
                        crate::metrics::job_step(&claim.kind, "trapped", started);
                        crate::logging::job_step("trapped", crate::clock::now_ms() - started);
                    }
                    committed
                }
        }
    };
    if !finished {
        let _ = db::execute(&conn, "ROLLBACK", vec![]);
        unsettle();
    }
    gate.put_back(conn);
    next_in_lane
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db() -> (Db, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("switchboard-jobs-{}", uuid::Uuid::new_v4()));
        (Db::open(&dir).unwrap(), dir)
    }

    fn enqueue(db: &Db, id: &str) {
        let c = db.conn().unwrap();
        db::execute(
            &c,
            "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms) VALUES (?1, 'test', 'b', '{}', 0, 0)",
            vec![SqlValue::Text(id.into())],
        )
        .unwrap();
    }

    fn expire_leases(db: &Db) {
        let c = db.conn().unwrap();
        db::execute(&c, "UPDATE jobs SET lease_until_ms = 0 WHERE state = 'leased'", vec![]).unwrap();
    }

    #[test]
    fn a_stale_fence_cannot_complete_a_reclaimed_job() {
        let (db, dir) = temp_db();
        enqueue(&db, "j1");
        let first = claim(&db, "node-a", 10).unwrap();
        assert_eq!(first.len(), 1);
        assert!(claim(&db, "node-b", 10).unwrap().is_empty(), "a live lease is not claimable");
        // node-a stalls; its lease expires and node-b reclaims with a new fence.
        expire_leases(&db);
        let second = claim(&db, "node-b", 10).unwrap();
        assert_eq!(second[0].fence, first[0].fence + 1);
        assert_eq!(second[0].attempts, 2);
        let c = db.conn().unwrap();
        assert!(!complete(&c, &first[0], &Next::Done).unwrap(), "the stale fence is refused");
        assert!(complete(&c, &second[0], &Next::Done).unwrap());
        assert!(claim(&db, "node-a", 10).unwrap().is_empty(), "done jobs never run again");
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_new_leader_releases_jobs_the_old_one_left_leased() {
        let (db, dir) = temp_db();
        let mut a = Runner::new(RunnerConfig::default());
        let mut b = Runner::new(RunnerConfig::default());
        assert!(a.lead(&db));
        enqueue(&db, "j1");
        let claimed = claim(&db, &a.node, 10).unwrap();
        assert_eq!(claimed.len(), 1);
        // a dies holding the job; once its leader lease expires b leads and
        // can run the job at once, without waiting for the job's own lease.
        let c = db.conn().unwrap();
        db::execute(&c, "UPDATE leases SET expires_at_ms = 0", vec![]).unwrap();
        assert!(b.lead(&db));
        let reclaimed = claim(&db, &b.node, 10).unwrap();
        assert_eq!(reclaimed.len(), 1);
        assert!(reclaimed[0].fence > claimed[0].fence);
        assert!(!complete(&c, &claimed[0], &Next::Done).unwrap(), "the dead leader's fence is stale");
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn only_one_node_leads() {
        let (db, dir) = temp_db();
        let mut a = Runner::new(RunnerConfig::default());
        let mut b = Runner::new(RunnerConfig::default());
        assert!(a.lead(&db));
        assert!(!b.lead(&db), "a live leader keeps the lease");
        // a stops renewing; once its lease expires b takes over.
        let c = db.conn().unwrap();
        db::execute(&c, "UPDATE leases SET expires_at_ms = 0", vec![]).unwrap();
        assert!(b.lead(&db));
        a.leader_until_ms = 0;
        assert!(!a.lead(&db));
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    fn enqueue_as(db: &Db, id: &str, business: &str, due: i64, calls_out: bool, lane: Option<&str>) {
        let c = db.conn().unwrap();
        db::execute(
            &c,
            "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms, calls_out, lane) VALUES (?1, 'test', ?2, '{}', ?3, 0, ?4, ?5)",
            vec![
                SqlValue::Text(id.into()),
                SqlValue::Text(business.into()),
                SqlValue::Integer(due),
                SqlValue::Integer(calls_out as i64),
                lane.map(|l| SqlValue::Text(l.into())).unwrap_or(SqlValue::Null),
            ],
        )
        .unwrap();
    }

    fn ids(claims: &[Claim]) -> Vec<&str> {
        claims.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn a_lane_runs_one_step_at_a_time_oldest_first() {
        let (db, dir) = temp_db();
        enqueue_as(&db, "l1", "b", 1, true, Some("webhooks:s1"));
        enqueue_as(&db, "l2", "b", 2, true, Some("webhooks:s1"));
        enqueue_as(&db, "o1", "b", 3, true, Some("webhooks:s2"));
        let first = claim_fair(&db, "n", 0, 10, 100).unwrap();
        assert_eq!(ids(&first), vec!["l1", "o1"], "one per lane, the oldest");
        assert!(claim_fair(&db, "n", 0, 10, 100).unwrap().is_empty(), "a lane with a live step waits");
        let c = db.conn().unwrap();
        assert!(complete(&c, &first[0], &Next::Done).unwrap());
        assert_eq!(ids(&claim_fair(&db, "n", 0, 10, 100).unwrap()), vec!["l2"]);
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_deep_backlog_in_a_busy_lane_hides_no_other_lane_and_no_unlaned_job() {
        let (db, dir) = temp_db();
        for i in 0..3_000 {
            enqueue_as(&db, &format!("deep{i:05}"), "b", i, true, Some("webhooks:deep"));
        }
        let first = claim_fair(&db, "n", 0, 10, 100).unwrap();
        assert_eq!(ids(&first), vec!["deep00000"], "the lane's head alone");
        // Younger work behind the busy lane's whole backlog.
        enqueue_as(&db, "other", "b", 5_000, true, Some("webhooks:other"));
        enqueue_as(&db, "loose", "b", 5_001, true, None);
        enqueue_as(&db, "local", "b", 5_002, false, Some("campaign:i1"));
        let next = claim_fair(&db, "n", 10, 10, 100).unwrap();
        assert_eq!(ids(&next), vec!["local", "other", "loose"], "each found although 2,999 older jobs wait in a busy lane");
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_claim_that_never_ran_is_not_counted() {
        let (db, dir) = temp_db();
        enqueue_as(&db, "j", "b", 1, true, None);
        let claim = claim_fair(&db, "n", 0, 10, 100).unwrap().remove(0);
        assert_eq!(claim.attempts, 1);
        let c = db.conn().unwrap();
        let next = Next::Pending { due_at_ms: 0, payload: None, attempts: Count::Uncount, error: Some("no instance slot was free".into()) };
        assert!(complete(&c, &claim, &next).unwrap());
        let again = claim_fair(&db, "n", 0, 10, 100).unwrap().remove(0);
        assert_eq!(again.attempts, 1, "the next claim is still the first run of this payload");
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn finished_jobs_and_their_runs_go_after_the_retention_and_nothing_else_does() {
        let (db, dir) = temp_db();
        let now = crate::clock::now_ms();
        let old = now - FINISHED_RETENTION.as_millis() as i64 - 1;
        for (id, due) in [("done-old", old), ("dead-old", old), ("pending-old", old), ("leased-old", old), ("done-new", now)] {
            enqueue_as(&db, id, "b", due, false, None);
        }
        let c = db.conn().unwrap();
        for (id, state) in [("done-old", "done"), ("dead-old", "dead"), ("leased-old", "leased"), ("done-new", "done")] {
            db::execute(&c, "UPDATE jobs SET state = ?2 WHERE id = ?1", vec![SqlValue::Text(id.into()), SqlValue::Text(state.into())]).unwrap();
            db::execute(
                &c,
                "INSERT INTO job_runs (job_id, fence, node, started_at_ms, ended_at_ms, outcome) VALUES (?1, 1, 'n', 0, 0, 'done')",
                vec![SqlValue::Text(id.into())],
            )
            .unwrap();
        }
        assert_eq!(purge_finished(&db, now), 2);
        let left = |table: &str, column: &str| -> Vec<String> {
            db::query_rows(&c, &format!("SELECT {column} FROM {table} ORDER BY {column}"), vec![]).unwrap().iter().map(|r| t(&r[0])).collect()
        };
        assert_eq!(left("jobs", "id"), vec!["done-new", "leased-old", "pending-old"]);
        assert_eq!(left("job_runs", "job_id"), vec!["done-new", "leased-old"]);
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn businesses_take_turns_and_one_business_cannot_take_every_slot() {
        let (db, dir) = temp_db();
        for n in 0..6 {
            enqueue_as(&db, &format!("a{n}"), "busy", n, true, None);
        }
        enqueue_as(&db, "b0", "quiet", 100, true, None);
        enqueue_as(&db, "local", "busy", 0, false, None);
        // Four slots: the quiet business's only job is among them although
        // it is the newest, and the busy one gets at most its cap (3).
        let picked = claim_fair(&db, "n", 0, 4, 3).unwrap();
        assert_eq!(ids(&picked), vec!["a0", "b0", "a1", "a2"]);
        assert!(picked.iter().all(|c| c.calls_out));
        let more = claim_fair(&db, "n", 5, 4, 3).unwrap();
        assert_eq!(ids(&more), vec!["local"], "the busy business is at its cap; local steps are another class");
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }
}
