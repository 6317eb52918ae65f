//! A shipping connection (`ship.rs`): the writer connection of a replica
//! node, whose transactions run on the replica's file and go to the
//! primary as one guarded batch. Its transaction control (`BEGIN` notes
//! the guard, `COMMIT` ships, `ROLLBACK` forgets), the statements it
//! records, and the request batches it carries (`ship::Carry`).

use super::*;

/// The state of a shipping connection.
pub(crate) struct Shipping {
    pub(crate) shipper: Arc<crate::ship::Shipper>,
    /// The replica, pulled after each shipped commit (in the background,
    /// or at the next `BEGIN` if that has not ended).
    pub(crate) replica: Arc<libsql::Database>,
    pub(crate) fresh: Arc<crate::freshness::Freshness>,
    /// What the open transaction changed, in order, to replay at the primary.
    pub(crate) log: RefCell<Vec<(String, Vec<SqlValue>)>>,
    /// The open savepoints, kept out of the log (`ship::Savepoints`).
    pub(crate) savepoints: RefCell<crate::ship::Savepoints>,
    /// The guard's counter as the replica showed it when the open
    /// transaction began; `None` outside a transaction.
    pub(crate) epoch: std::cell::Cell<Option<i64>>,
    /// The next transaction takes the primary's write lock first
    /// (`Writer::begin_locking`), and the stream that holds it.
    pub(crate) locking: std::cell::Cell<bool>,
    pub(crate) locked: RefCell<Option<String>>,
    /// Request batches whose shipped writes the local transaction still
    /// holds (`ship::Carry`), and what the next transaction asked for.
    pub(crate) carry: std::cell::Cell<Option<crate::ship::Carry>>,
    pub(crate) carry_asked: std::cell::Cell<crate::ship::CarryAsk>,
    /// Whether a commit may keep its local transaction for the next
    /// request batch, which starts a carry (`OpenOptions::ship_carry`; off,
    /// no carry ever starts and every batch pulls before it runs).
    pub(crate) carries: bool,
}

impl Drop for Shipping {
    /// A connection closed while it carried (its transaction rolls back
    /// with it) must not leave the pulling task waiting for a carry's end.
    fn drop(&mut self) {
        if self.carry.get().is_some() {
            self.fresh.carrying(false);
        }
    }
}

impl Shipping {
    /// Rolls the local transaction back, with what carried batches wrote
    /// (committed at the primary: the replica pulls them now).
    fn roll_back_local(&self, conn: &Connection) -> Result<(), libsql::Error> {
        self.carry.set(None);
        let out = conn.execute_here("ROLLBACK", vec![]);
        self.fresh.carrying(false);
        out.map(|_| ())
    }

    /// Ends a carried local transaction, if any (one SQLite already rolled
    /// back leaves the ROLLBACK nothing to do).
    fn end_carry(&self, conn: &Connection) {
        if self.carry.get().is_some() {
            let _ = self.roll_back_local(conn);
        }
    }
}

thread_local! {
    /// Set when this thread's last shipped commit met a write conflict
    /// (`take_conflict`): the caller runs its transaction again.
    static CONFLICT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the last commit on this thread failed on a write conflict at
/// the primary (shipping connections only; the replica has pulled since,
/// so running the transaction again sees what the primary has). Clears it.
pub fn take_conflict() -> bool {
    CONFLICT.with(|c| c.replace(false))
}

/// Whether the last commit on this thread met a write conflict, leaving
/// it for `take_conflict`.
pub fn conflicted() -> bool {
    CONFLICT.with(|c| c.get())
}

impl Connection {
    /// A shipping connection's statement: transaction control is ours
    /// (`BEGIN` notes the guard, `COMMIT` ships, `ROLLBACK` forgets); the
    /// rest runs on the replica's file and is recorded (`shipped`).
    pub(crate) fn ship_control(&self, ship: &Shipping, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        if starts_with_word(sql, "BEGIN") {
            self.ship_begin(ship, sql, params)
        } else if starts_with_word(sql, "COMMIT") || starts_with_word(sql, "END") {
            self.ship_commit(ship, sql, params)
        } else if starts_with_word(sql, "ROLLBACK") && !starts_with_word(sql, "ROLLBACK TO") {
            self.ship_rollback(ship, sql, params)
        } else {
            self.shipped(sql, params, |p| self.execute_here(sql, p))
        }
    }

    /// `BEGIN`: goes on from the carried request batches when the next one
    /// asked to, else starts from what the primary has (under its lock for
    /// `Writer::begin_locking`) and notes the guard's counter.
    fn ship_begin(&self, ship: &Shipping, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        let asked = ship.carry_asked.replace(crate::ship::CarryAsk::No);
        if let Some(carry) = ship.carry.get() {
            // The transaction goes on from the request batches this
            // connection shipped last (`ship::Carry`): no pull, the
            // local transaction already holds what they wrote.
            if asked != crate::ship::CarryAsk::No && !ship.locking.get() && !self.inner.is_autocommit() && carry.may_go_on() {
                ship.log.borrow_mut().clear();
                *ship.savepoints.borrow_mut() = Default::default();
                ship.carry_asked.set(asked);
                switchboard_ops::metrics::primary_call("carried");
                return self.note_epoch(ship, 0);
            }
            ship.end_carry(self);
        }
        if ship.locking.replace(false) {
            // The primary's lock first, then everything it has: the
            // local run then sees exactly what the primary holds.
            let baton = ship.shipper.lock().map_err(|e| {
                PRIMARY_UNREACHABLE.store(true, Ordering::Relaxed);
                libsql::Error::WriteDelegation(e.into())
            })?;
            if !ship.fresh.pull_now(|| pull_replica(&ship.replica).is_ok()) {
                ship.shipper.release(baton);
                return Err(libsql::Error::Replication("the replica could not pull under the primary's lock".into()));
            }
            *ship.locked.borrow_mut() = Some(baton);
        } else {
            // The transaction must start from this node's last shipped
            // commit, or its guard fails.
            ship.fresh.pull_if_behind(|| pull_replica(&ship.replica).is_ok());
        }
        let out = match self.execute_here(sql, params) {
            Ok(out) => out,
            Err(e) => {
                if let Some(baton) = ship.locked.borrow_mut().take() {
                    ship.shipper.release(baton);
                }
                return Err(e);
            }
        };
        ship.log.borrow_mut().clear();
        *ship.savepoints.borrow_mut() = Default::default();
        ship.carry_asked.set(asked);
        self.note_epoch(ship, out)
    }

    /// `COMMIT`: ships what the transaction changed as one guarded batch
    /// (or checks the guard of one that only read), keeping the local
    /// transaction when the next request batch may carry on from it.
    fn ship_commit(&self, ship: &Shipping, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        let Some(epoch) = ship.epoch.take() else { return self.execute_here(sql, params) };
        let log = std::mem::take(&mut *ship.log.borrow_mut());
        // The local transaction is kept through the ship when the next
        // request batch may go on from it (`ship::Carry`); otherwise the
        // replica's file keeps no write of ours: it gets the primary's
        // frames by a pull, and lets that pull in before the round trip.
        // With carries off (`OpenOptions::ship_carry`) nothing is kept: a
        // kept transaction would only be rolled back at the next BEGIN.
        let keep = ship.carry_asked.replace(crate::ship::CarryAsk::No) == crate::ship::CarryAsk::AndKeep
            && ship.carries
            && ship.locked.borrow().is_none()
            && !log.is_empty()
            && ship.carry.get().is_none_or(|c| c.may_keep());
        if !keep {
            ship.roll_back_local(self)?;
        }
        // A transaction that wrote nothing still read: its outcome holds
        // only if the primary is where the replica was.
        let locked = ship.locked.borrow_mut().take();
        let shipped = match locked {
            Some(baton) => ship.shipper.ship_locked(baton, epoch, &log),
            None if log.is_empty() => ship.shipper.check(epoch),
            None => ship.shipper.ship(epoch, &log),
        };
        if keep && shipped.is_ok() {
            ship.carry.set(Some(ship.carry.get().map_or_else(crate::ship::Carry::begin, crate::ship::Carry::next)));
            ship.fresh.carrying(true);
        } else if keep {
            // Not committed (or not known to be): the local transaction
            // goes.
            let _ = ship.roll_back_local(self);
        }
        match shipped {
            Ok(()) => {
                PRIMARY_UNREACHABLE.store(false, Ordering::Relaxed);
                // Answered now; the replica pulls it in the background
                // (reads wait for that), or at the next BEGIN.
                if !log.is_empty() {
                    ship.fresh.wrote();
                }
                Ok(0)
            }
            Err(crate::ship::ShipError::Conflict) => {
                switchboard_ops::metrics::primary_call("conflict");
                // Running it again must see what the primary has.
                let _ = pull_replica(&ship.replica);
                CONFLICT.with(|c| c.set(true));
                Err(libsql::Error::SqliteFailure(libsql::ffi::SQLITE_BUSY, "write conflict at the primary: the transaction runs again".into()))
            }
            Err(crate::ship::ShipError::Unreachable(e)) => {
                PRIMARY_UNREACHABLE.store(true, Ordering::Relaxed);
                Err(libsql::Error::WriteDelegation(e.into()))
            }
            Err(e @ crate::ship::ShipError::Refused(_)) => Err(libsql::Error::SqliteFailure(libsql::ffi::SQLITE_ERROR, e.to_string())),
        }
    }

    /// `ROLLBACK`: forgets the transaction, the primary's lock and any
    /// carry.
    fn ship_rollback(&self, ship: &Shipping, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        if let Some(baton) = ship.locked.borrow_mut().take() {
            ship.shipper.release(baton);
        }
        // Undoes the carried batches' local writes too: they are the
        // primary's to give back, by a pull.
        ship.carry.set(None);
        ship.carry_asked.set(crate::ship::CarryAsk::No);
        ship.fresh.carrying(false);
        ship.epoch.set(None);
        ship.log.borrow_mut().clear();
        *ship.savepoints.borrow_mut() = Default::default();
        self.execute_here(sql, params)
    }

    /// Notes the guard's counter as the local transaction shows it (with
    /// what carried batches wrote), for the commit's guard; `out` is the
    /// `BEGIN`'s own answer.
    fn note_epoch(&self, ship: &Shipping, out: u64) -> Result<u64, libsql::Error> {
        match self.query_rows_here(crate::ship::READ_EPOCH, vec![]) {
            Ok(rows) => {
                let epoch = rows.into_iter().next().and_then(|r| i64::from_row(r).ok()).unwrap_or(0);
                ship.epoch.set(Some(epoch));
                Ok(out)
            }
            Err(e) => {
                let _ = ship.roll_back_local(self);
                Err(e)
            }
        }
    }

    /// Whether this shipping connection holds the local transaction of
    /// request batches it shipped (`ship::Carry`): inside a transaction,
    /// yet fit for the next holder of the write gate.
    pub fn carrying(&self) -> bool {
        self.ship.as_ref().is_some_and(|s| s.carry.get().is_some()) && !self.inner.is_autocommit()
    }

    /// Asks of a shipping connection's carry (`ship::Carry`): before a
    /// `BEGIN`, `GoOn` from the request batches it carries, if any; inside
    /// the transaction, `AndKeep` the local transaction after the commit
    /// for the batch after.
    pub fn ask_carry(&self, ask: crate::ship::CarryAsk) {
        if let Some(ship) = &self.ship {
            ship.carry_asked.set(ask);
        }
    }

    /// Runs a statement of a shipping connection on the replica's file
    /// and records it when it changed something inside a transaction. A
    /// write outside a transaction is shipped as a transaction of its own.
    pub(crate) fn shipped<T>(&self, sql: &str, params: Vec<SqlValue>, run: impl FnOnce(Vec<SqlValue>) -> Result<T, libsql::Error>) -> Result<T, libsql::Error> {
        let ship = self.ship.as_ref().expect("a shipping connection");
        if !crate::ship::recorded(sql) {
            return run(params);
        }
        if ship.epoch.get().is_none() {
            self.execute("BEGIN IMMEDIATE", vec![])?;
            let out = self.shipped(sql, params, run);
            let end = if out.is_ok() { "COMMIT" } else { "ROLLBACK" };
            self.execute(end, vec![])?;
            return out;
        }
        let out = run(params.clone())?;
        if !ship.savepoints.borrow_mut().compact(sql, &mut ship.log.borrow_mut()) {
            ship.log.borrow_mut().push((sql.to_string(), params));
        }
        Ok(out)
    }
}
