//! The write gate and the one writer connection it guards.

use super::*;

/// Holding the write gate (owned, so a job step can keep it across calls).
/// The write gate's guard: whoever holds it may write, on the writer
/// connection it guards (`Writer`).
pub type WriteGuard = parking_lot::lock_api::ArcMutexGuard<parking_lot::RawFairMutex, Writer>;

/// The write gate itself (`Db::gate`), for a step that takes it late.
pub type Gate = Arc<parking_lot::FairMutex<Writer>>;

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
        let c = self.take()?;
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

    /// Puts the connection back for the next holder of the gate. One left
    /// inside a transaction (its end failed) is closed instead.
    pub fn put_back(&mut self, c: Connection) {
        if c.is_autocommit() {
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
