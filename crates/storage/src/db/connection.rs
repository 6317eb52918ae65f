//! A connection: its statement cache, and on a replica node how its
//! writes reach the primary (shipped, or statement by statement).

use super::*;

/// Prepared statements a connection keeps, least recently used dropped
/// first. The SQL of requests and job steps is a small set of texts (an
/// `IN` list of n items is one text per n), so this holds the hot ones.
pub(crate) const STATEMENT_CACHE: usize = 256;

/// A libSQL connection that compiles each SQL text once: `query_rows` and
/// `execute` reuse its prepared statement (SQLite re-prepares it by itself
/// after a schema change). Parsing and planning cost more than running
/// most of our statements.
pub struct Connection {
    // Declared first so the statements are finalized before the connection
    // closes.
    pub(crate) statements: RefCell<lru::LruCache<Box<str>, libsql::Statement>>,
    pub(crate) inner: libsql::Connection,
    /// In replica mode, the replica to bring up to date after this
    /// connection changes data, so the node reads what it wrote.
    pub(crate) replica: Option<Arc<libsql::Database>>,
    /// A read-only connection on a replica's file (`Db::read_conn`).
    pub(crate) reader: bool,
    /// A replica's connection that began a write transaction (`BEGIN
    /// IMMEDIATE`): its statements run at the primary until it ends.
    pub(crate) writing: std::cell::Cell<bool>,
    /// A replica's writer connection that ships its transactions
    /// (`ship.rs`): it runs them on the replica's file and sends the
    /// primary what they wrote, in one round trip.
    pub(crate) ship: Option<Box<Shipping>>,
}

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
    /// Ends a carried local transaction, if any (its writes are committed
    /// at the primary; the replica pulls them now).
    fn end_carry(&self, conn: &Connection) {
        if self.carry.take().is_some() {
            if !conn.inner.is_autocommit() {
                let _ = conn.execute_here("ROLLBACK", vec![]);
            }
            self.fresh.carrying(false);
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

impl std::ops::Deref for Connection {
    type Target = libsql::Connection;
    fn deref(&self) -> &libsql::Connection {
        &self.inner
    }
}

impl Connection {
    pub(crate) fn new(inner: libsql::Connection, replica: Option<Arc<libsql::Database>>) -> Connection {
        Connection {
            statements: RefCell::new(lru::LruCache::new(NonZeroUsize::new(STATEMENT_CACHE).expect("non-zero"))),
            inner,
            replica,
            reader: false,
            writing: std::cell::Cell::new(false),
            ship: None,
        }
    }

    /// Runs `f` with the cached statement for `sql`, preparing it on first
    /// use. The statement is reset afterwards whatever happened, so it
    /// holds no read snapshot and no bindings leak into its next use.
    ///
    /// On a replica's connection, statements are routed (replica or
    /// primary) when prepared, by the transaction state of that moment, and
    /// a statement routed to the replica does not clear its bindings on
    /// reset. So it caches only statements prepared inside a write
    /// transaction, which all run at the primary and take their parameters
    /// with each call, and uses them only there: each saves the primary's
    /// `describe` round trip that preparing costs. Anything else is
    /// prepared for the call.
    pub(crate) fn with_statement<T>(&self, sql: &str, f: impl FnOnce(&libsql::Statement) -> Result<T, libsql::Error>) -> Result<T, libsql::Error> {
        if self.replica.is_some() && !self.in_write_transaction() {
            if changes_data(sql) {
                switchboard_ops::metrics::primary_call("describe");
                switchboard_ops::metrics::primary_call("statement");
            }
            let out = block(self.inner.prepare(sql)).and_then(|stmt| f(&stmt));
            self.after_statement(sql, &out);
            return out;
        }
        let mut cache = self.statements.borrow_mut();
        if !cache.contains(sql) {
            if self.replica.is_some() {
                switchboard_ops::metrics::primary_call("describe");
            }
            let stmt = block(self.inner.prepare(sql))?;
            cache.put(sql.into(), stmt);
        }
        if self.replica.is_some() {
            switchboard_ops::metrics::primary_call("statement");
        }
        let stmt = cache.get(sql).expect("just inserted");
        let out = f(stmt);
        stmt.reset();
        drop(cache);
        self.after_statement(sql, &out);
        out
    }

    /// A replica's connection between a `BEGIN IMMEDIATE` and its end.
    pub(crate) fn in_write_transaction(&self) -> bool {
        self.writing.get() && !self.inner.is_autocommit()
    }

    /// After a statement that changed data and ended outside a transaction
    /// (a `COMMIT`, or a write on its own), pull the primary's new frames
    /// into the replica: this node's next read sees its own write. The
    /// write is committed whatever the pull does; a failed pull only delays
    /// what this node reads (the periodic sync catches up).
    ///
    /// It also notes whether the primary answered (`primary_unreachable`).
    pub(crate) fn after_statement<T>(&self, sql: &str, outcome: &Result<T, libsql::Error>) {
        let Some(replica) = &self.replica else { return };
        let (begins, changed) = (starts_with_word(sql, "BEGIN IMMEDIATE"), changes_data(sql));
        if outcome.is_ok() && begins {
            self.writing.set(true);
        } else if self.inner.is_autocommit() {
            self.writing.set(false);
        }
        match outcome {
            Err(e) => {
                if is_network(e) {
                    PRIMARY_UNREACHABLE.store(true, Ordering::Relaxed);
                }
                return;
            }
            Ok(_) if changed || begins => PRIMARY_UNREACHABLE.store(false, Ordering::Relaxed),
            Ok(_) => {}
        }
        if !changed || !self.inner.is_autocommit() {
            return;
        }
        if let Err(e) = pull_replica(replica) {
            PRIMARY_UNREACHABLE.store(is_network(&e), Ordering::Relaxed);
            tracing::warn!(error = %e, "the replica could not pull a write it just made; it catches up at the next sync");
        }
    }

    /// Runs a query and collects all rows.
    pub fn query_rows(&self, sql: &str, params: Vec<SqlValue>) -> Result<Vec<Vec<SqlValue>>, libsql::Error> {
        if self.ship.is_some() {
            return self.shipped(sql, params, |p| self.query_rows_here(sql, p));
        }
        self.query_rows_here(sql, params)
    }

    pub(crate) fn query_rows_here(&self, sql: &str, params: Vec<SqlValue>) -> Result<Vec<Vec<SqlValue>>, libsql::Error> {
        self.with_statement(sql, |stmt| {
            let params = bind_all(stmt, params);
            block(async {
                let mut rows = stmt.query(params).await?;
                let n = rows.column_count();
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    let mut vals = Vec::with_capacity(n as usize);
                    for i in 0..n {
                        vals.push(row.get_value(i)?);
                    }
                    out.push(vals);
                }
                Ok(out)
            })
        })
    }

    /// Runs a statement that returns no rows; the number of rows changed.
    pub fn execute(&self, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        if let Some(ship) = &self.ship {
            return self.ship_control(ship, sql, params);
        }
        self.execute_here(sql, params)
    }

    pub(crate) fn execute_here(&self, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        if self.replica.is_some() {
            if self.in_write_transaction() || changes_data(sql) || starts_with_word(sql, "BEGIN IMMEDIATE") {
                switchboard_ops::metrics::primary_call("statement");
            }
            // Straight to the connection: a statement prepared first would
            // cost the primary a `describe` round trip before it runs.
            let out = block(self.inner.execute(sql, params));
            self.after_statement(sql, &out);
            return out;
        }
        self.with_statement(sql, |stmt| {
            let params = bind_all(stmt, params);
            block(stmt.execute(params)).map(|n| n as u64)
        })
    }

    /// Runs one statement once per row of parameters.
    pub fn execute_many(&self, sql: &str, rows: Vec<Vec<SqlValue>>) -> Result<u64, libsql::Error> {
        // A shipping connection records each row (`execute`); a replica's
        // sends them to the primary, in batches inside a write transaction.
        if self.ship.is_some() || self.replica.is_some() {
            if self.replica.is_some() && self.in_write_transaction() && rows.len() > 1 {
                if let Some(template) = crate::sql_literals::Template::parse(sql) {
                    let out = self.execute_many_at_primary(sql, &template, &rows);
                    self.after_statement(sql, &out);
                    return out;
                }
            }
            let mut total = 0;
            for row in rows {
                total += self.execute(sql, row)?;
            }
            return Ok(total);
        }
        self.with_statement(sql, |stmt| {
            let mut total = 0u64;
            for row in rows {
                let params = bind_all(stmt, row);
                total += block(stmt.execute(params))? as u64;
                stmt.reset();
            }
            Ok(total)
        })
    }
}

impl Connection {
    /// A shipping connection's statement: transaction control is ours
    /// (`BEGIN` notes the guard, `COMMIT` ships, `ROLLBACK` forgets); the
    /// rest runs on the replica's file and is recorded (`shipped`).
    pub(crate) fn ship_control(&self, ship: &Shipping, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        if starts_with_word(sql, "BEGIN") {
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
        } else if starts_with_word(sql, "COMMIT") || starts_with_word(sql, "END") {
            let Some(epoch) = ship.epoch.take() else { return self.execute_here(sql, params) };
            let log = std::mem::take(&mut *ship.log.borrow_mut());
            // The local transaction is kept through the ship when the next
            // request batch may go on from it (`ship::Carry`); otherwise the
            // replica's file keeps no write of ours: it gets the primary's
            // frames by a pull, and lets that pull in before the round trip.
            let keep = ship.carry_asked.replace(crate::ship::CarryAsk::No) == crate::ship::CarryAsk::AndKeep
                && ship.locked.borrow().is_none()
                && !log.is_empty()
                && ship.carry.get().is_none_or(|c| c.may_keep());
            if !keep {
                ship.carry.set(None);
                self.execute_here("ROLLBACK", vec![])?;
                ship.fresh.carrying(false);
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
                // goes, with what carried batches wrote (the pull brings it).
                ship.carry.set(None);
                let _ = self.execute_here("ROLLBACK", vec![]);
                ship.fresh.carrying(false);
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
        } else if starts_with_word(sql, "ROLLBACK") && !starts_with_word(sql, "ROLLBACK TO") {
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
        } else {
            self.shipped(sql, params, |p| self.execute_here(sql, p))
        }
    }

    /// Notes the guard's counter as the local transaction shows it (with
    /// what carried batches wrote), for the commit's guard; `out` is the
    /// `BEGIN`'s own answer.
    fn note_epoch(&self, ship: &Shipping, out: u64) -> Result<u64, libsql::Error> {
        match self.query_rows_here(crate::ship::READ_EPOCH, vec![]) {
            Ok(rows) => {
                let epoch = match rows.first().and_then(|r| r.first()) {
                    Some(SqlValue::Integer(n)) => *n,
                    _ => 0,
                };
                ship.epoch.set(Some(epoch));
                Ok(out)
            }
            Err(e) => {
                ship.carry.set(None);
                ship.fresh.carrying(false);
                let _ = self.execute_here("ROLLBACK", vec![]);
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

    /// Asks a shipping connection's next `BEGIN` to go on from the request
    /// batches it carries, if any; with `keep`, inside the transaction,
    /// asks its commit to keep the local transaction for the batch after
    /// (`ship::Carry`).
    pub fn ask_carry(&self, keep: bool) {
        if let Some(ship) = &self.ship {
            ship.carry_asked.set(if keep { crate::ship::CarryAsk::AndKeep } else { crate::ship::CarryAsk::GoOn });
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

/// The most statement text a replica sends its primary in one round trip
/// (`Connection::execute_many_at_primary`), well under what its RPCs take.
pub(crate) const PRIMARY_BATCH_BYTES: usize = 1 << 20;

impl Connection {
    /// `execute_many` inside a replica's write transaction: the rows'
    /// statements go to the primary in batches of literal statements
    /// (`sql_literals`), a round trip per `PRIMARY_BATCH_BYTES` instead of
    /// one per row, in order; a row whose values cannot be written as
    /// literals, or too long for a batch, goes on its own with parameters.
    /// Under a savepoint, so that a failed row leaves none of them behind
    /// (the primary runs the rest of a batch after a failed statement).
    pub(crate) fn execute_many_at_primary(&self, sql: &str, template: &crate::sql_literals::Template, rows: &[Vec<SqlValue>]) -> Result<u64, libsql::Error> {
        let before = self.inner.total_changes();
        let mut pending = String::from("SAVEPOINT execute_many;");
        let send = |pending: &mut String| -> Result<(), libsql::Error> {
            if !pending.is_empty() {
                switchboard_ops::metrics::primary_call("batch");
                block(self.inner.execute_batch(pending))?;
                pending.clear();
            }
            Ok(())
        };
        let all = (|| {
            for row in rows {
                let mark = pending.len();
                if template.render(row, &mut pending) {
                    if pending.len() <= PRIMARY_BATCH_BYTES {
                        continue;
                    }
                    // Too long to join what is queued: send that first, and
                    // this row opens the next batch if it fits one alone.
                    let this = pending.split_off(mark);
                    send(&mut pending)?;
                    if this.len() <= PRIMARY_BATCH_BYTES {
                        pending = this;
                        continue;
                    }
                } else {
                    send(&mut pending)?;
                }
                switchboard_ops::metrics::primary_call("statement");
                block(self.inner.execute(sql, row.clone()))?;
            }
            pending.push_str("RELEASE execute_many;");
            send(&mut pending)
        })();
        match all {
            Ok(()) => Ok(self.inner.total_changes() - before),
            Err(e) => {
                // Nothing to undo when the savepoint never reached the
                // primary; the error that counts is the first.
                let _ = block(self.inner.execute_batch("ROLLBACK TO execute_many; RELEASE execute_many;"));
                Err(e)
            }
        }
    }
}

/// Pulls the primary's new frames into the replica (one `sync` call to
/// the primary, counted). While the primary is compacting its replication
/// log (sqld does when the log passes `--max-log-size`, 200 MB by
/// default), a replica whose next frame is in the compacted part is told
/// "snapshot not found" until the snapshot is written (about 2 s at 200
/// MB): the pull waits for it, up to `SNAPSHOT_WAIT`, instead of failing.
/// A failed pull there left a write node's replica behind its own commits,
/// so every batch's guard failed and the batch under the primary's lock
/// could not pull: each batch of 64 answered 503 for those seconds (issue
/// 47's intermittent 503s at far nodes under load).
pub(crate) fn pull_replica(replica: &libsql::Database) -> Result<(), libsql::Error> {
    let deadline = std::time::Instant::now() + SNAPSHOT_WAIT;
    loop {
        switchboard_ops::metrics::primary_call("sync");
        match block(replica.sync()) {
            Ok(_) => return Ok(()),
            Err(e) if is_compacting(&e) && std::time::Instant::now() < deadline => {
                switchboard_ops::metrics::primary_call("snapshot_wait");
                std::thread::sleep(SNAPSHOT_POLL);
            }
            Err(e) => return Err(e),
        }
    }
}

/// How long a pull waits for the primary's snapshot of a compacted log.
pub(crate) const SNAPSHOT_WAIT: Duration = Duration::from_secs(5);

/// How often it asks meanwhile.
const SNAPSHOT_POLL: Duration = Duration::from_millis(50);

/// The primary's answer while it writes the snapshot of a compacted log
/// (a gRPC `Unavailable` whose message libsql passes on as text).
pub(crate) fn is_compacting(e: &libsql::Error) -> bool {
    e.to_string().contains("snapshot not found")
}

/// Whether the last attempt to reach the primary failed on the way there
/// (not an SQL error), cleared by the next that gets through: a failure
/// to store then says "the primary cannot be reached", not "busy".
pub(crate) static PRIMARY_UNREACHABLE: AtomicBool = AtomicBool::new(false);

pub fn primary_unreachable() -> bool {
    PRIMARY_UNREACHABLE.load(Ordering::Relaxed)
}

/// An error of the way to the primary: the connection, the write proxy,
/// replication.
pub(crate) fn is_network(e: &libsql::Error) -> bool {
    matches!(e, libsql::Error::WriteDelegation(_) | libsql::Error::Replication(_) | libsql::Error::ConnectionFailed(_))
}

pub(crate) fn starts_with_word(sql: &str, words: &str) -> bool {
    let mut text = sql.split_ascii_whitespace();
    words.split(' ').all(|w| text.next().is_some_and(|t| t.eq_ignore_ascii_case(w)))
}

/// Whether a statement can change data (a write, DDL or a `COMMIT`), by its
/// first word: what is left are reads and transaction control without a
/// commit.
pub(crate) fn changes_data(sql: &str) -> bool {
    let word = sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    !["SELECT", "BEGIN", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA", "EXPLAIN", "VALUES"].iter().any(|w| word.eq_ignore_ascii_case(w))
}

/// Missing trailing parameters are bound as NULL, as a freshly prepared
/// statement would have them; a reused one would otherwise keep the values
/// of its previous run.
pub(crate) fn bind_all(stmt: &libsql::Statement, mut params: Vec<SqlValue>) -> Vec<SqlValue> {
    let wanted = stmt.parameter_count();
    if params.len() < wanted {
        params.resize(wanted, SqlValue::Null);
    }
    params
}
