//! The write gate and the one writer connection it guards.

use super::*;

/// How long a background writer (a job step, a claim round, upkeep) that
/// foreground writers keep overtaking waits at most: then it goes next.
pub const BACKGROUND_MAX_WAIT: Duration = Duration::from_millis(50);

/// Foreground turns that may overtake a waiting background writer in a
/// row: then it goes next, however short its wait.
pub const BACKGROUND_AFTER: u32 = 8;

/// Who asks for the write gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// A request's write (a request batch of the writer thread, a side
    /// route's write, start-up work): goes before any background writer
    /// that waits.
    Foreground,
    /// Work nobody waits on an answer for: job steps, the runner's claims,
    /// lease renewals, upkeep, the WAL's restart. Lets foreground writers
    /// that wait go first, at most `BACKGROUND_AFTER` of them in a row or
    /// for `BACKGROUND_MAX_WAIT`.
    Background,
}

/// The write gate (`Db::gate`): one writer at a time inside this process,
/// on the writer connection it guards. Foreground writers that wait are
/// served in arrival order before background ones, which are served in
/// arrival order among themselves, and within bounds (`Priority`): a
/// request's mutation never queues behind job steps that arrived first
/// (issue 47: a send at a far node paid for the delivery steps its
/// previous send started). The gate is handed over directly on release,
/// so nobody can take it between the release and the one it goes to.
#[derive(Clone)]
pub struct Gate(Arc<GateInner>);

struct GateInner {
    /// `OpenOptions::write_priority` off (`SWITCHBOARD_WRITE_PRIORITY=0`):
    /// every writer is served in arrival order, as when the gate was a fair
    /// mutex (for a side-by-side bench).
    in_arrival_order: bool,
    /// Locked only by the holder of the turn, so never contended.
    writer: Arc<parking_lot::Mutex<Writer>>,
    turns: parking_lot::Mutex<Turns>,
}

#[derive(Default)]
struct Turns {
    /// Someone holds the gate, or it was handed to a waiter who has yet to
    /// wake. When it is not held, nobody waits.
    held: bool,
    next_ticket: u64,
    foreground: std::collections::VecDeque<Waiter>,
    background: std::collections::VecDeque<Waiter>,
    /// Foreground turns given while background writers waited, since the
    /// last background turn, and when the first of them was given: the
    /// background's wait that the foreground caused (a background writer
    /// that waits behind other background writers is not owed a turn).
    overtaken: u32,
    overtaken_since: Option<std::time::Instant>,
    /// The ticket the gate was last handed to, until its waiter takes it.
    handed: Option<u64>,
}

struct Waiter {
    ticket: u64,
    bell: Arc<parking_lot::Condvar>,
}

/// Holding the write gate (owned, so a job step can keep it across calls):
/// whoever holds it may write, on the writer connection it guards
/// (`Writer`). Dropping it hands the gate to the next waiter.
pub struct WriteGuard {
    writer: Option<parking_lot::lock_api::ArcMutexGuard<parking_lot::RawMutex, Writer>>,
    gate: Arc<GateInner>,
}

impl std::ops::Deref for WriteGuard {
    type Target = Writer;
    fn deref(&self) -> &Writer {
        self.writer.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for WriteGuard {
    fn deref_mut(&mut self) -> &mut Writer {
        self.writer.as_mut().expect("held until drop")
    }
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        drop(self.writer.take());
        self.gate.release();
    }
}

impl WriteGuard {
    /// Foreground writers waiting for the gate now: a background holder
    /// that could keep it longer (a group commit left open) lets it go
    /// instead.
    pub fn foreground_waiting(&self) -> usize {
        self.gate.turns.lock().foreground.len()
    }
}

impl Gate {
    /// The gate over `writer`; `write_priority` as `OpenOptions` says.
    pub(crate) fn new(writer: Writer, write_priority: bool) -> Gate {
        Gate(Arc::new(GateInner { in_arrival_order: !write_priority, writer: Arc::new(parking_lot::Mutex::new(writer)), turns: parking_lot::Mutex::new(Turns::default()) }))
    }

    /// Takes the gate within `wait` (else `None`), as `priority` says.
    pub fn take(&self, priority: Priority, wait: Duration) -> Option<WriteGuard> {
        self.0.take(priority, Some(std::time::Instant::now() + wait))
    }

    /// Takes the gate as a foreground writer, however long that takes
    /// (start-up work: migrations, the vector table's shape).
    pub fn lock(&self) -> WriteGuard {
        self.0.take(Priority::Foreground, None).expect("an untimed wait ends with the gate")
    }

    /// Takes the gate as a background writer within `wait`: a job step
    /// that writes late (`jobs::run_one`, the engine's lazy write). The
    /// name is the one of the fair mutex the gate was.
    pub fn try_lock_arc_for(&self, wait: Duration) -> Option<WriteGuard> {
        self.take(Priority::Background, wait)
    }

    /// Foreground writers waiting for the gate now.
    pub fn foreground_waiting(&self) -> usize {
        self.0.turns.lock().foreground.len()
    }

    /// Background writers waiting for the gate now.
    pub fn background_waiting(&self) -> usize {
        self.0.turns.lock().background.len()
    }
}

impl GateInner {
    fn take(self: &Arc<Self>, priority: Priority, deadline: Option<std::time::Instant>) -> Option<WriteGuard> {
        let priority = if self.in_arrival_order { Priority::Background } else { priority };
        let mut turns = self.turns.lock();
        if turns.held {
            let ticket = turns.next_ticket;
            turns.next_ticket += 1;
            let bell = Arc::new(parking_lot::Condvar::new());
            let waiter = Waiter { ticket, bell: bell.clone() };
            match priority {
                Priority::Foreground => turns.foreground.push_back(waiter),
                Priority::Background => {
                    if turns.background.is_empty() {
                        (turns.overtaken, turns.overtaken_since) = (0, None);
                    }
                    turns.background.push_back(waiter)
                }
            }
            while turns.handed != Some(ticket) {
                let timed_out = match deadline {
                    Some(d) => bell.wait_until(&mut turns, d).timed_out(),
                    None => {
                        bell.wait(&mut turns);
                        false
                    }
                };
                if timed_out && turns.handed != Some(ticket) {
                    turns.foreground.retain(|w| w.ticket != ticket);
                    turns.background.retain(|w| w.ticket != ticket);
                    if turns.background.is_empty() {
                        (turns.overtaken, turns.overtaken_since) = (0, None);
                    }
                    return None;
                }
            }
            turns.handed = None;
        }
        turns.held = true;
        drop(turns);
        Some(WriteGuard { writer: Some(self.writer.lock_arc()), gate: self.clone() })
    }

    /// Hands the gate to the next waiter: the first foreground one, unless
    /// foreground writers have overtaken the background ones
    /// `BACKGROUND_AFTER` times or for `BACKGROUND_MAX_WAIT` since its last
    /// turn; else it is free.
    fn release(&self) {
        let mut turns = self.turns.lock();
        let background_due = !turns.background.is_empty() && (turns.overtaken >= BACKGROUND_AFTER || turns.overtaken_since.is_some_and(|t| t.elapsed() >= BACKGROUND_MAX_WAIT));
        let next = if turns.foreground.is_empty() || background_due {
            let next = turns.background.pop_front();
            if next.is_some() {
                (turns.overtaken, turns.overtaken_since) = (0, None);
            }
            next
        } else {
            if !turns.background.is_empty() {
                turns.overtaken += 1;
                turns.overtaken_since.get_or_insert_with(std::time::Instant::now);
            }
            turns.foreground.pop_front()
        };
        match next {
            Some(w) => {
                turns.handed = Some(w.ticket);
                w.bell.notify_one();
            }
            None => turns.held = false,
        }
    }
}

/// What the write gate guards: the writer connection. The hot write
/// transactions (request batches, job steps and their completions, claims)
/// all run on this one connection, so its page cache stays valid from one
/// transaction to the next: SQLite empties a connection's whole cache when
/// another connection committed since its last transaction, and with a
/// pooled connection per job step thread every write transaction read its
/// pages back from the WAL (a fifth of a webhook delivery's CPU).
pub struct Writer {
    pub(crate) conn: Option<Connection>,
    pub(crate) opener: Opener,
    /// The job steps whose completions wait in the open transaction of a
    /// group commit (`hold_open`): told whether it committed.
    pub(crate) held: Vec<Box<dyn FnOnce(bool) + Send>>,
}

/// The savepoint a job step joining a group commit writes in.
pub const STEP_SAVEPOINT: &str = "step";

impl Writer {
    /// The writer connection, opened on first use (and again after one was
    /// dropped for being left inside a transaction).
    /// A group commit left open (`hold_open`) commits first.
    pub fn take(&mut self) -> Result<Connection> {
        self.flush();
        match self.conn.take() {
            Some(c) => Ok(c),
            None => self.opener.open(),
        }
    }

    /// The writer connection inside a new write transaction (`BEGIN
    /// IMMEDIATE`); when that cannot begin, the connection stays here.
    pub fn begin(&mut self) -> Result<Connection> {
        self.begin_asking(false)
    }

    fn begin_asking(&mut self, go_on: bool) -> Result<Connection> {
        let c = self.take()?;
        if go_on {
            c.ask_carry(crate::ship::CarryAsk::GoOn);
        }
        if let Err(e) = execute(&c, "BEGIN IMMEDIATE", vec![]) {
            self.put_back(c);
            return Err(e);
        }
        Ok(c)
    }

    /// A write transaction that holds the primary's write lock from its
    /// `BEGIN IMMEDIATE` on: on a replica that ships, the primary's lock is
    /// taken first (`Shipper::lock`), the replica pulls, and the shipped
    /// commit ends the lock (three round trips whatever the statement
    /// count); elsewhere `begin`. For a job step that has called out: a
    /// shipped commit that met a conflict would hand the step back to run
    /// again, and so make its call twice; under the lock nothing can
    /// conflict.
    ///
    /// On a local database the step joins the group commit of job steps
    /// instead: the transaction a finished step left open (`hold_open`),
    /// else a new one, and its writes go into a savepoint of their own
    /// (`STEP_SAVEPOINT`), so one step's failure undoes only its own.
    pub fn begin_locking(&mut self) -> Result<Connection> {
        if self.opener.ship.is_none() {
            let c = match self.conn.take() {
                Some(c) if !self.held.is_empty() => c,
                other => {
                    self.conn = other;
                    self.begin()?
                }
            };
            if let Err(e) = execute(&c, &format!("SAVEPOINT {STEP_SAVEPOINT}"), vec![]) {
                self.close_group(c, false);
                return Err(e);
            }
            return Ok(c);
        }
        let c = self.take()?;
        if let Some(ship) = &c.ship {
            ship.locking.set(true);
        }
        if let Err(e) = execute(&c, "BEGIN IMMEDIATE", vec![]) {
            self.put_back(c);
            return Err(e);
        }
        Ok(c)
    }

    /// `begin` for a request batch of the writer thread: on a replica that
    /// ships, it goes on from the batches the last ones carried
    /// (`ship::Carry`; `Connection::ask_carry` before its commit keeps the
    /// carry for the next). Elsewhere `begin`.
    pub fn begin_carrying(&mut self) -> Result<Connection> {
        self.begin_asking(true)
    }

    /// Puts the connection back for the next holder of the gate. One left
    /// inside a transaction (its end failed) is closed instead, unless that
    /// transaction is a carry of shipped request batches (`ship::Carry`).
    pub fn put_back(&mut self, c: Connection) {
        if c.is_autocommit() || c.carrying() {
            self.conn = Some(c);
        }
    }

    /// Leaves `c`'s write transaction open for the next job step to join
    /// (group commit: the WAL frames of the pages every completion dirties
    /// are written once per group, not once per step); `done` hears whether
    /// it committed. Whoever takes the writer connection next other than a
    /// joining step (`take`, `Db::write_gate`) commits it first.
    pub fn hold_open(&mut self, c: Connection, done: Box<dyn FnOnce(bool) + Send>) {
        self.held.push(done);
        self.conn = Some(c);
    }

    /// Commits a group left open by `hold_open`, if any, and tells its steps.
    pub fn flush(&mut self) {
        if self.held.is_empty() {
            return;
        }
        match self.conn.take() {
            Some(c) => {
                let committed = execute(&c, "COMMIT", vec![]).is_ok();
                self.close_group(c, committed);
            }
            None => self.close_group_without_connection(),
        }
    }

    /// Ends the open group on `c` (rolled back unless it `committed`), tells
    /// its steps, and keeps the connection if it is usable.
    pub fn close_group(&mut self, c: Connection, committed: bool) {
        if !committed {
            let _ = execute(&c, "ROLLBACK", vec![]);
        }
        self.put_back(c);
        for done in self.held.drain(..) {
            done(committed);
        }
    }

    fn close_group_without_connection(&mut self) {
        for done in self.held.drain(..) {
            done(false);
        }
    }

    /// Runs `f` in one write transaction on the writer connection
    /// (`in_transaction`: committed when it succeeds, rolled back whole
    /// when it fails), then puts the connection back.
    pub fn transaction<T>(&mut self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let c = self.take()?;
        let out = in_transaction(&c, || f(&c));
        self.put_back(c);
        out
    }
}
