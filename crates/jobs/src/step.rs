//! One step of a claimed job: run it through the components, then complete
//! it (its next state, only while its fence holds) in its own transaction.

use super::*;

mod batch;
pub use batch::*;

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
    let (id, fence) = (&claim.id, claim.fence);
    let n = match next {
        Next::Done => {
            db::execute(c, "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_until_ms = NULL, last_error = NULL WHERE id = ?1 AND fence = ?2 AND state = 'leased'", db::params![id, fence])?
        }
        Next::Pending { due_at_ms, payload, attempts, error } => db::execute(
            c,
            "UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_until_ms = NULL, due_at_ms = ?3, \
             payload = COALESCE(?4, payload), attempts = CASE ?5 WHEN 1 THEN 0 WHEN 2 THEN MAX(attempts - 1, 0) ELSE attempts END, last_error = ?6 \
             WHERE id = ?1 AND fence = ?2 AND state = 'leased'",
            db::params![
                id,
                fence,
                *due_at_ms,
                payload.as_deref(),
                match attempts {
                    Count::Keep => 0i64,
                    Count::Reset => 1,
                    Count::Uncount => 2,
                },
                error.as_deref(),
            ],
        )?,
        Next::Dead(reason) => db::execute(
            c,
            "UPDATE jobs SET state = 'dead', lease_owner = NULL, lease_until_ms = NULL, last_error = ?3 WHERE id = ?1 AND fence = ?2 AND state = 'leased'",
            db::params![id, fence, reason],
        )?,
    };
    // A job finished for good needs no memory of its effects. (Under a
    // stale fence nothing matched, and the caller rolls the step back.)
    if n == 1 && matches!(next, Next::Done | Next::Dead(_)) {
        db::execute(c, "DELETE FROM job_effects WHERE job_id = ?1", db::params![id])?;
    }
    Ok(n == 1)
}

pub(crate) fn next_for(claim: &Claim, outcome: &Outcome) -> (Next, &'static str, Option<String>) {
    let now = crate::clock::now_ms();
    match outcome {
        Outcome::Done => (Next::Done, "done", None),
        Outcome::Retry(r) if claim.attempts >= MAX_ATTEMPTS => (Next::Dead(format!("gave up after {} attempts: {}", claim.attempts, r.reason)), "dead", Some(r.reason.clone())),
        Outcome::Retry(r) => (Next::Pending { due_at_ms: now + r.delay_ms as i64, payload: None, attempts: Count::Keep, error: Some(r.reason.clone()) }, "retry", Some(r.reason.clone())),
        Outcome::Continue(c) => (Next::Pending { due_at_ms: now + c.delay_ms as i64, payload: Some(c.payload_json.clone()), attempts: Count::Reset, error: None }, "continue", None),
        Outcome::Dead(reason) => (Next::Dead(reason.clone()), "dead", Some(reason.clone())),
    }
}

/// Backoff after a trap: 1 s doubling to 1 h.
pub(crate) fn trap_backoff_ms(attempts: i64) -> i64 {
    (1000i64 << (attempts.clamp(1, 13) - 1)).min(3_600_000)
}

pub(crate) fn record_run(c: &crate::db::Connection, claim: &Claim, node: &str, started: i64, outcome: &str, detail: Option<String>) {
    let _ = db::execute(
        c,
        "INSERT OR REPLACE INTO job_runs (job_id, fence, node, started_at_ms, ended_at_ms, outcome, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        db::params![&claim.id, claim.fence, node, started, crate::clock::now_ms(), outcome, detail],
    );
}

/// How long a step whose completion waits in an open group commit waits for
/// the steps still running to join before it commits the group itself.
pub const GROUP_WAIT: Duration = Duration::from_millis(2);

/// A step running longer than this (a slow or hanging receiver) is not
/// waited for: the others' completions commit without it.
pub const GROUP_YOUNG: Duration = Duration::from_millis(20);

/// The group commit of steps that call out, on a local database: a step
/// whose completion finds other steps that started recently still running
/// leaves its transaction open for them (`Writer::hold_open`) and waits; the
/// last of them, or the first to wait `GROUP_WAIT`, or anyone else taking
/// the write gate, commits them all at once. Each step writes in a savepoint
/// of its own (`Writer::begin_locking`), so a stale fence or a failure undoes
/// only that step's writes.
#[derive(Default, Clone)]
pub struct Group {
    /// The steps running now: when each started, and whether it waits in
    /// the open transaction.
    pub(crate) steps: Arc<Mutex<HashMap<u64, (std::time::Instant, bool)>>>,
    pub(crate) next: Arc<std::sync::atomic::AtomicU64>,
    /// `GROUP_WAIT` unless a test says otherwise.
    pub(crate) wait: Option<Duration>,
    /// `GROUP_YOUNG` unless a test says otherwise (on a loaded machine a
    /// step of a test can take longer than 20 ms to reach its completion).
    pub(crate) young: Option<Duration>,
}

/// A step counted in a `Group` while it lives.
pub struct InGroup<'a> {
    group: &'a Group,
    id: u64,
}

impl Group {
    /// Counts a step as running from now until the token is dropped.
    pub fn start(&self) -> InGroup<'_> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        self.steps.lock().insert(id, (std::time::Instant::now(), false));
        InGroup { group: self, id }
    }

    /// Steps waiting in the open transaction.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.steps.lock().values().filter(|(_, held)| *held).count()
    }
}

impl Drop for InGroup<'_> {
    fn drop(&mut self) {
        self.group.steps.lock().remove(&self.id);
    }
}

/// Runs one claimed job in one write transaction, committed only while its
/// fence holds (with other steps' completions when `group` lets them share
/// the commit).
/// Returns the next job of the claim's lane when one was handed to this
/// worker in the same commit (`handoff` allows it).
/// A step whose completion does not commit leaves its claim in `unsettled`.
pub fn run_one(db: &Db, components: &Components, node: &str, claim: &Claim, handoff: bool, unsettled: &Unsettled, group: Option<&Group>) -> Option<Claim> {
    let me = group.filter(|_| claim.calls_out).map(Group::start);
    // One span per step: its events (the step's line, a component's log
    // lines) carry the job, its kind, attempt and business.
    let span = tracing::info_span!("job_step", jobId = %claim.id, kind = %claim.kind, attempt = claim.attempts, businessId = %claim.business_id);
    let _in_step = span.enter();
    let started = crate::clock::now_ms();
    let step = Step { db, claim, node, started, network: claim.calls_out };
    let unsettle = || unsettled.lock().push((claim.id.clone(), claim.fence));
    let Some((conn, gate, result)) = step.run(components) else {
        unsettle();
        return None;
    };
    // What the step comes to: whether its writes and completion are kept,
    // whether its claim is settled whatever the commit does (a stale fence:
    // nothing of it may survive), and the label of its metrics.
    let mut next_in_lane = None;
    let (keep, settled_anyway, label) = match result {
        Ok(outcome) => step.completed(&conn, &outcome, handoff, &mut next_in_lane),
        Err(e) => step.trapped(&conn, e),
    };
    let committed = finish(db, conn, gate, keep, step.grouped(), me.as_ref());
    if keep && committed {
        crate::metrics::job_step(&claim.kind, label, started);
        crate::logging::job_step(label, crate::clock::now_ms() - started);
    } else {
        next_in_lane = None;
        if !settled_anyway {
            unsettle();
        }
    }
    next_in_lane
}

/// A claimed job's step as `run_one` runs it.
struct Step<'a> {
    db: &'a Db,
    claim: &'a Claim,
    node: &'a str,
    started: i64,
    /// Network mode: holding the write gate across a remote call would
    /// stall every writer, so such a step starts without gate or
    /// transaction; its first write takes both (the engine's lazy write),
    /// and the completion joins that transaction. A step therefore makes its
    /// remote call before it writes; its writes and its fenced completion
    /// still commit together or not at all.
    network: bool,
}

impl Step<'_> {
    /// On a local database a step that calls out writes in its savepoint of
    /// a group commit (`Writer::begin_locking`).
    fn grouped(&self) -> bool {
        self.network && !self.db.ships_writes()
    }

    /// The gate with the writer connection in a write transaction, or None.
    /// A step that calls out completes under the primary's write lock
    /// (`Writer::begin_locking`): a conflict would run it, and its call,
    /// again. It takes the gate itself, not through `Db::background_gate`,
    /// so that it joins an open group commit rather than committing it.
    /// Every step is background work: a request's write that waits goes
    /// first.
    fn write(&self) -> Option<(db::WriteGuard, db::Connection)> {
        if self.network {
            let mut gate = self.db.gate().take(db::Priority::Background, Duration::from_secs(30))?;
            let conn = gate.begin_locking().ok()?;
            return Some((gate, conn));
        }
        let mut gate = self.db.background_gate(Duration::from_secs(30))?;
        let conn = gate.begin().ok()?;
        Some((gate, conn))
    }

    /// Runs the step through the components. Returns the writer connection
    /// in the step's open write transaction, with the gate, and what the
    /// step answered; None when storage gave neither (the claim stays
    /// unsettled).
    fn run(&self, components: &Components) -> Option<(db::Connection, db::WriteGuard, Result<Outcome, CallError>)> {
        let (db, claim) = (self.db, self.claim);
        // A local step runs on the writer connection, under the gate, from
        // the start; a step that calls out starts on a pooled connection of
        // its own.
        let (conn, local_gate) = if self.network {
            (db.conn().ok()?.detach(), None)
        } else {
            let (gate, conn) = self.write()?;
            (conn, Some(gate))
        };
        let job = job_of(claim);
        let (conn, lazy, result) = components.run_job(conn, &job, self.network.then(|| db.gate()));
        let (conn, gate) = match (local_gate, lazy) {
            (Some(gate), _) => (conn, gate),
            // The step wrote: its transaction is open on the writer
            // connection and the gate held; its own connection goes back to
            // the pool.
            (None, Some((gate, own))) => {
                db.give_back(own);
                (conn, gate)
            }
            // It only read (or trapped before writing): the gate and the
            // writer connection now, for the completion.
            (None, None) => {
                db.give_back(conn);
                let (gate, writer) = self.write()?;
                (writer, gate)
            }
        };
        Some((conn, gate, result))
    }

    /// The step answered `outcome`: its completion, the run's record and,
    /// when `handoff` allows it, the next job of its lane. Returns (keep,
    /// settled anyway, label) as `run_one` reads them.
    fn completed(&self, conn: &db::Connection, outcome: &Outcome, handoff: bool, next_in_lane: &mut Option<Claim>) -> (bool, bool, &'static str) {
        let claim = self.claim;
        let (next, label, detail) = next_for(claim, outcome);
        match complete(conn, claim, &next) {
            Ok(true) => {
                record_run(conn, claim, self.node, self.started, label, detail);
                if let (true, Some(lane)) = (handoff, &claim.lane) {
                    *next_in_lane = hand_off(conn, lane, self.node).unwrap_or(None);
                }
                (true, false, label)
            }
            // Stale fence: another node reclaimed the job. Nothing of this
            // run may survive.
            Ok(false) => {
                tracing::warn!(jobId = %claim.id, fence = claim.fence, "job completion refused: stale fence");
                (false, true, label)
            }
            // Storage did not answer (a primary restarting): the step is
            // rolled back and its claim handed back, so it runs again as
            // soon as storage answers rather than when its lease runs out.
            Err(e) => {
                tracing::warn!(jobId = %claim.id, error = %e, "job completion failed, handed back");
                (false, false, label)
            }
        }
    }

    /// The step failed (a trap, a limit, or no instance slot): its own
    /// writes go and its failure is recorded in their place, as a retry
    /// with backoff or, after the last attempt, dead.
    fn trapped(&self, conn: &db::Connection, e: CallError) -> (bool, bool, &'static str) {
        let failure = Failure::of(self.claim, e);
        let kept = self.undo(conn) && self.record_failure(conn, &failure);
        (kept, false, "trapped")
    }

    /// Undoes the step's writes, leaving the transaction open for its
    /// completion.
    fn undo(&self, conn: &db::Connection) -> bool {
        if self.grouped() {
            db::execute(conn, &format!("ROLLBACK TO {}", db::STEP_SAVEPOINT), vec![]).is_ok()
        } else {
            let _ = db::execute(conn, "ROLLBACK", vec![]);
            db::execute(conn, "BEGIN IMMEDIATE", vec![]).is_ok()
        }
    }

    /// Completes the claim with `failure` (after `undo`).
    fn record_failure(&self, conn: &db::Connection, failure: &Failure) -> bool {
        let claim = self.claim;
        let never_ran = failure.never_ran;
        let reason = failure.reason.clone();
        let next = if claim.attempts >= MAX_ATTEMPTS && !never_ran {
            Next::Dead(reason.clone())
        } else {
            let attempts = if never_ran { Count::Uncount } else { Count::Keep };
            Next::Pending { due_at_ms: crate::clock::now_ms() + trap_backoff_ms(claim.attempts), payload: None, attempts, error: Some(reason.clone()) }
        };
        complete(conn, claim, &next).unwrap_or(false) && {
            record_run(conn, claim, self.node, self.started, "trapped", Some(reason));
            true
        }
    }
}

/// Why a step failed, as its claim records it.
struct Failure {
    reason: String,
    /// No instance slot: the step never ran, and the claim does not count.
    never_ran: bool,
}

impl Failure {
    fn of(claim: &Claim, e: CallError) -> Failure {
        let never_ran = matches!(e, CallError::Capacity);
        let reason = match e {
            CallError::Deadline => "the job step exceeded its deadline".to_string(),
            CallError::ResourceLimit => "the job step exceeded its memory limit".to_string(),
            CallError::Capacity => "no instance slot was free".to_string(),
            CallError::Trap(detail) => {
                tracing::error!(jobId = %claim.id, kind = %claim.kind, detail = %detail, "job step trapped");
                "the job step failed".to_string()
            }
        };
        Failure { reason, never_ran }
    }
}

/// The job a claim's step runs.
fn job_of(claim: &Claim) -> Job {
    Job {
        id: claim.id.clone(),
        kind: claim.kind.clone(),
        business_id: claim.business_id.clone(),
        payload_json: claim.payload.clone(),
        attempt: claim.attempts.max(1) as u32,
        fence: claim.fence as u64,
    }
}

/// Ends a step's transaction: kept (`keep`) and committed, or rolled back;
/// a grouped step's through `end_grouped`. Returns whether it committed.
fn finish(db: &Db, conn: db::Connection, mut gate: db::WriteGuard, keep: bool, grouped: bool, me: Option<&InGroup>) -> bool {
    if grouped {
        return end_grouped(db, conn, gate, keep, me);
    }
    let committed = keep && db::execute(&conn, "COMMIT", vec![]).is_ok();
    if !committed {
        let _ = db::execute(&conn, "ROLLBACK", vec![]);
    }
    gate.put_back(conn);
    committed
}

/// Ends a grouped step: its savepoint released (`keep`) or undone, then the
/// transaction committed now, or held open for the steps still running and
/// committed with theirs. Returns whether it committed.
pub(crate) fn end_grouped(db: &Db, conn: db::Connection, mut gate: db::WriteGuard, keep: bool, me: Option<&InGroup>) -> bool {
    let ended = (keep || db::execute(&conn, &format!("ROLLBACK TO {}", db::STEP_SAVEPOINT), vec![]).is_ok()) && db::execute(&conn, &format!("RELEASE {}", db::STEP_SAVEPOINT), vec![]).is_ok();
    if !ended {
        gate.close_group(conn, false);
        return false;
    }
    // Wait for the others only while one of them, started recently, is
    // still running (not waiting itself), and no request's write waits for
    // the gate: it would commit the group first, and wait for that.
    let waiting_for = me.filter(|_| gate.foreground_waiting() == 0).filter(|me| {
        let mut steps = me.group.steps.lock();
        let others = steps.iter().any(|(id, (started, held))| *id != me.id && !*held && started.elapsed() < me.group.young.unwrap_or(GROUP_YOUNG));
        if others {
            if let Some(mine) = steps.get_mut(&me.id) {
                mine.1 = true;
            }
        }
        others
    });
    let Some(me) = waiting_for else {
        let committed = db::execute(&conn, "COMMIT", vec![]).is_ok();
        gate.close_group(conn, committed);
        return committed;
    };
    let (told, outcome) = std::sync::mpsc::sync_channel(1);
    gate.hold_open(
        conn,
        Box::new(move |committed| {
            let _ = told.send(committed);
        }),
    );
    drop(gate);
    if let Ok(committed) = outcome.recv_timeout(me.group.wait.unwrap_or(GROUP_WAIT)) {
        return committed;
    }
    // Nobody committed it meanwhile: taking the gate does (`Db::background_gate`).
    drop(db.background_gate(Duration::from_secs(30)));
    outcome.recv_timeout(Duration::from_secs(30)).unwrap_or(false)
}
