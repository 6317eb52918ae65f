//! libSQL storage: opening the database (a local file, or an embedded
//! replica of a libSQL server primary), migrations, a small pool of
//! connections that each keep their prepared statements, and the
//! process-wide write gate.
//!
//! libsql's local connections do their work synchronously inside async
//! functions: `block` polls such a future once (it is always ready) and only
//! falls back to an executor if it is not. A replica's connections send
//! writes to the primary over the network: those futures are driven inside
//! the replica's own small tokio runtime (`IO`), whatever thread calls.

use anyhow::{anyhow, bail, Context, Result};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::future::Future;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

pub use libsql::Value as SqlValue;

/// The runtime of a replica's network client (its sockets, its periodic
/// sync): made once, when a replica is opened.
static IO: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();

fn io_runtime() -> Result<&'static tokio::runtime::Runtime> {
    if let Some(rt) = IO.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("libsql-io").enable_all().build()?;
    Ok(IO.get_or_init(|| rt))
}

/// Drives a libsql future to completion on the current thread.
pub fn block<F: Future>(f: F) -> F::Output {
    // A replica's request to the primary opens sockets that belong to the
    // IO runtime, whose worker then wakes this thread.
    let _io = IO.get().map(|rt| rt.enter());
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => futures_executor::block_on(f),
    }
}

/// Where the database lives (`--primary-url`).
#[derive(Clone, Default)]
pub enum Storage {
    /// `<data-dir>/switchboard.db`, this machine's file.
    #[default]
    Local,
    /// An embedded replica of a libSQL server: reads from the replica
    /// file under the data dir, every write transaction at the primary.
    Replica(Primary),
}

/// A libSQL server primary. The token is never shown (no `Debug`).
#[derive(Clone)]
pub struct Primary {
    pub url: String,
    pub auth_token: String,
    /// How often the replica pulls the primary's changes: the bound on
    /// how late this node sees another node's writes.
    pub sync_interval: Duration,
    /// The replica's folder under the data dir: a server and an admin
    /// command each keep their own (one process may hold a replica file).
    pub role: &'static str,
    /// Ship the writer's transactions to the primary in one round trip
    /// each (`ship.rs`) instead of one per statement.
    pub ship_writes: bool,
}

/// Prepared statements a connection keeps, least recently used dropped
/// first. The SQL of requests and job steps is a small set of texts (an
/// `IN` list of n items is one text per n), so this holds the hot ones.
const STATEMENT_CACHE: usize = 256;

/// A libSQL connection that compiles each SQL text once: `query_rows` and
/// `execute` reuse its prepared statement (SQLite re-prepares it by itself
/// after a schema change). Parsing and planning cost more than running
/// most of our statements.
pub struct Connection {
    // Declared first so the statements are finalized before the connection
    // closes.
    statements: RefCell<lru::LruCache<Box<str>, libsql::Statement>>,
    inner: libsql::Connection,
    /// In replica mode, the replica to bring up to date after this
    /// connection changes data, so the node reads what it wrote.
    replica: Option<Arc<libsql::Database>>,
    /// A read-only connection on a replica's file (`Db::read_conn`).
    reader: bool,
    /// A replica's connection that began a write transaction (`BEGIN
    /// IMMEDIATE`): its statements run at the primary until it ends.
    writing: std::cell::Cell<bool>,
    /// A replica's writer connection that ships its transactions
    /// (`ship.rs`): it runs them on the replica's file and sends the
    /// primary what they wrote, in one round trip.
    ship: Option<Box<Shipping>>,
}

/// The state of a shipping connection.
struct Shipping {
    shipper: Arc<crate::ship::Shipper>,
    /// The replica, pulled after each shipped commit (in the background,
    /// or at the next `BEGIN` if that has not ended).
    replica: Arc<libsql::Database>,
    fresh: Arc<crate::freshness::Freshness>,
    /// What the open transaction changed, in order, to replay at the primary.
    log: RefCell<Vec<(String, Vec<SqlValue>)>>,
    /// The open savepoints, kept out of the log (`ship::Savepoints`).
    savepoints: RefCell<crate::ship::Savepoints>,
    /// The guard's counter as the replica showed it when the open
    /// transaction began; `None` outside a transaction.
    epoch: std::cell::Cell<Option<i64>>,
    /// The next transaction takes the primary's write lock first
    /// (`Writer::begin_locking`), and the stream that holds it.
    locking: std::cell::Cell<bool>,
    locked: RefCell<Option<String>>,
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
    fn new(inner: libsql::Connection, replica: Option<Arc<libsql::Database>>) -> Connection {
        Connection { statements: RefCell::new(lru::LruCache::new(NonZeroUsize::new(STATEMENT_CACHE).expect("non-zero"))), inner, replica, reader: false, writing: std::cell::Cell::new(false), ship: None }
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
    fn with_statement<T>(&self, sql: &str, f: impl FnOnce(&libsql::Statement) -> Result<T, libsql::Error>) -> Result<T, libsql::Error> {
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
    fn in_write_transaction(&self) -> bool {
        self.writing.get() && !self.inner.is_autocommit()
    }

    /// After a statement that changed data and ended outside a transaction
    /// (a `COMMIT`, or a write on its own), pull the primary's new frames
    /// into the replica: this node's next read sees its own write. The
    /// write is committed whatever the pull does; a failed pull only delays
    /// what this node reads (the periodic sync catches up).
    ///
    /// It also notes whether the primary answered (`primary_unreachable`).
    fn after_statement<T>(&self, sql: &str, outcome: &Result<T, libsql::Error>) {
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

    fn query_rows_here(&self, sql: &str, params: Vec<SqlValue>) -> Result<Vec<Vec<SqlValue>>, libsql::Error> {
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

    fn execute_here(&self, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
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
    fn ship_control(&self, ship: &Shipping, sql: &str, params: Vec<SqlValue>) -> Result<u64, libsql::Error> {
        if starts_with_word(sql, "BEGIN") {
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
                    let _ = self.execute_here("ROLLBACK", vec![]);
                    Err(e)
                }
            }
        } else if starts_with_word(sql, "COMMIT") || starts_with_word(sql, "END") {
            let Some(epoch) = ship.epoch.take() else { return self.execute_here(sql, params) };
            let log = std::mem::take(&mut *ship.log.borrow_mut());
            // The replica's file never keeps a write of ours: it gets the
            // primary's frames by the pull below.
            self.execute_here("ROLLBACK", vec![])?;
            // A transaction that wrote nothing still read: its outcome holds
            // only if the primary is where the replica was.
            let locked = ship.locked.borrow_mut().take();
            let shipped = match locked {
                Some(baton) => ship.shipper.ship_locked(baton, epoch, &log),
                None if log.is_empty() => ship.shipper.check(epoch),
                None => ship.shipper.ship(epoch, &log),
            };
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
            ship.epoch.set(None);
            ship.log.borrow_mut().clear();
            *ship.savepoints.borrow_mut() = Default::default();
            self.execute_here(sql, params)
        } else {
            self.shipped(sql, params, |p| self.execute_here(sql, p))
        }
    }

    /// Runs a statement of a shipping connection on the replica's file
    /// and records it when it changed something inside a transaction. A
    /// write outside a transaction is shipped as a transaction of its own.
    fn shipped<T>(&self, sql: &str, params: Vec<SqlValue>, run: impl FnOnce(Vec<SqlValue>) -> Result<T, libsql::Error>) -> Result<T, libsql::Error> {
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
const PRIMARY_BATCH_BYTES: usize = 1 << 20;

impl Connection {
    /// `execute_many` inside a replica's write transaction: the rows'
    /// statements go to the primary in batches of literal statements
    /// (`sql_literals`), a round trip per `PRIMARY_BATCH_BYTES` instead of
    /// one per row, in order; a row whose values cannot be written as
    /// literals, or too long for a batch, goes on its own with parameters.
    /// Under a savepoint, so that a failed row leaves none of them behind
    /// (the primary runs the rest of a batch after a failed statement).
    fn execute_many_at_primary(&self, sql: &str, template: &crate::sql_literals::Template, rows: &[Vec<SqlValue>]) -> Result<u64, libsql::Error> {
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
/// the primary, counted).
fn pull_replica(replica: &libsql::Database) -> Result<(), libsql::Error> {
    switchboard_ops::metrics::primary_call("sync");
    block(replica.sync()).map(|_| ())
}

/// Whether the last attempt to reach the primary failed on the way there
/// (not an SQL error), cleared by the next that gets through: a failure
/// to store then says "the primary cannot be reached", not "busy".
static PRIMARY_UNREACHABLE: AtomicBool = AtomicBool::new(false);

pub fn primary_unreachable() -> bool {
    PRIMARY_UNREACHABLE.load(Ordering::Relaxed)
}

/// An error of the way to the primary: the connection, the write proxy,
/// replication.
fn is_network(e: &libsql::Error) -> bool {
    matches!(e, libsql::Error::WriteDelegation(_) | libsql::Error::Replication(_) | libsql::Error::ConnectionFailed(_))
}

fn starts_with_word(sql: &str, words: &str) -> bool {
    let mut text = sql.split_ascii_whitespace();
    words.split(' ').all(|w| text.next().is_some_and(|t| t.eq_ignore_ascii_case(w)))
}

/// Whether a statement can change data (a write, DDL or a `COMMIT`), by its
/// first word: what is left are reads and transaction control without a
/// commit.
fn changes_data(sql: &str) -> bool {
    let word = sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    !["SELECT", "BEGIN", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA", "EXPLAIN", "VALUES"].iter().any(|w| word.eq_ignore_ascii_case(w))
}

/// Missing trailing parameters are bound as NULL, as a freshly prepared
/// statement would have them; a reused one would otherwise keep the values
/// of its previous run.
fn bind_all(stmt: &libsql::Statement, mut params: Vec<SqlValue>) -> Vec<SqlValue> {
    let wanted = stmt.parameter_count();
    if params.len() < wanted {
        params.resize(wanted, SqlValue::Null);
    }
    params
}

/// What a commit survives (`serve --durability`). In WAL mode both keep the
/// database consistent; they differ in when the WAL reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=NORMAL`: a commit survives a crash of the process; the
    /// last commits before a power loss or an OS crash may be rolled back
    /// (the WAL is synced at checkpoints, every second here).
    Normal,
    /// `synchronous=FULL`: every commit syncs the WAL before it is
    /// answered, so it survives a power loss too. With group commit, one
    /// sync serves every request of a batch.
    Full,
}

impl Durability {
    fn pragma(self) -> &'static str {
        match self {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        }
    }
}

pub struct Db {
    /// Opens this database's connections (the pool's and the writer's).
    opener: Opener,
    /// Replica mode: writes go to the primary, and the file, its WAL and
    /// its statistics are the primary's business, not ours.
    replica: Option<ReplicaFiles>,
    idle: Mutex<Vec<Connection>>,
    /// One writer at a time inside this process: write transactions queue
    /// here in arrival order (a fair mutex, so no writer starves under load)
    /// instead of spinning in SQLite's busy handler. Other processes (the
    /// admin CLI, a second node) are covered by the busy timeout.
    write_gate: Gate,
    /// API keys by hash (`key_cache.rs`): authentication without a query.
    keys: crate::key_cache::KeyCache,
    /// What this node wrote at the primary and its replica has yet to pull.
    fresh: Arc<crate::freshness::Freshness>,
}

/// What a replica keeps beside libsql's own handle.
struct ReplicaFiles {
    /// Plain local connections on the replica's file, for reads only
    /// (`read_conn`): they keep their prepared statements and skip libsql's
    /// per-statement routing, which a replica's connections pay on every
    /// call. The writer's shipping connection is one too, not read-only.
    reader: Arc<libsql::Database>,
    idle_readers: Mutex<Vec<Connection>>,
    /// Ships the writer's transactions to the primary; `None` when the
    /// node writes interactively (SWITCHBOARD_SHIP_WRITES=0).
    shipper: Option<Arc<crate::ship::Shipper>>,
    /// When the last pull for a missing key began (`pull_for_missing_key`).
    key_pull: Mutex<Option<std::time::Instant>>,
    /// The lock on the replica's folder, held while open.
    _lock: std::fs::File,
}

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
    conn: Option<Connection>,
    opener: Opener,
}

impl Writer {
    /// The writer connection, opened on first use (and again after one was
    /// dropped for being left inside a transaction).
    pub fn take(&mut self) -> Result<Connection> {
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
    pub fn begin_locking(&mut self) -> Result<Connection> {
        if self.opener.ship.is_none() {
            return self.begin();
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

/// Opens a connection set up for this database (pragmas, busy timeout).
#[derive(Clone)]
struct Opener {
    database: Arc<libsql::Database>,
    /// Replica mode: the replica's handle (pragmas are the primary's).
    replica: Option<Arc<libsql::Database>>,
    durability: Durability,
    /// The writer's opener of a replica that ships its transactions: the
    /// replica's file, opened as a plain database, and the shipper.
    ship: Option<(Arc<libsql::Database>, Arc<crate::ship::Shipper>, Arc<crate::freshness::Freshness>)>,
}

impl Opener {
    fn open(&self) -> Result<Connection> {
        if let (Some((file, shipper, fresh)), Some(replica)) = (&self.ship, &self.replica) {
            let c = file.connect()?;
            c.busy_timeout(BUSY_TIMEOUT)?;
            let mut c = Connection::new(c, None);
            c.ship = Some(Box::new(Shipping { shipper: shipper.clone(), replica: replica.clone(), fresh: fresh.clone(), log: RefCell::new(Vec::new()), savepoints: RefCell::default(), epoch: std::cell::Cell::new(None), locking: std::cell::Cell::new(false), locked: RefCell::new(None) }));
            return Ok(c);
        }
        let c = self.database.connect()?;
        if self.replica.is_some() {
            // The primary sets synchronous and foreign keys and checkpoints
            // its WAL; a replica refuses pragmas that set a value.
            return Ok(Connection::new(c, self.replica.clone()));
        }
        c.busy_timeout(BUSY_TIMEOUT)?;
        // Checkpoints run on their own thread (`checkpoint`), never inside a
        // committing request: an automatic checkpoint's fsync would stall
        // whichever writer happened to cross the threshold.
        let synchronous = self.durability.pragma();
        block(c.execute_batch(&format!("PRAGMA synchronous={synchronous}; PRAGMA foreign_keys=OFF; PRAGMA wal_autocheckpoint=0;")))?;
        Ok(Connection::new(c, None))
    }
}

/// A pooled connection, returned to the pool on drop.
pub struct Conn<'a> {
    db: &'a Db,
    conn: Option<Connection>,
}

impl std::ops::Deref for Conn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until drop")
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            // A connection left inside a transaction (a replica's whose
            // primary went away mid-way) is not handed to the next caller.
            if !c.is_autocommit() {
                return;
            }
            let pool = match &self.db.replica {
                Some(r) if c.reader => &r.idle_readers,
                _ => &self.db.idle,
            };
            let mut idle = pool.lock();
            if idle.len() < 64 {
                idle.push(c);
            }
        }
    }
}

impl<'a> Conn<'a> {
    /// Takes the connection out of the pool for good (e.g. into a wasm store).
    pub fn detach(mut self) -> Connection {
        self.conn.take().expect("present until drop")
    }
}

pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The least time between two pulls made for unknown keys: at most four
/// a second, however many unknown keys arrive.
const KEY_PULL_GAP: Duration = Duration::from_millis(250);

/// WAL frames (pages) above which the once-a-second checkpoint starts the
/// WAL over (`Db::checkpoint`): 8,192 frames, about 32 MiB.
const WAL_RESTART_FRAMES: i64 = 8_192;

/// The restart takes the write gate once a catch-up pass found at most this
/// many new frames (about 2 MiB) to sync and copy.
const GATED_COPY_FRAMES: i64 = 512;

/// How long that restart waits for the write gate (then it is skipped).
const RESTART_WAIT: Duration = Duration::from_millis(200);

/// Process-wide SQLite settings, made once before any database is opened
/// (SQLite takes them only before it initialises). Memory statistics off:
/// with them on, every allocation SQLite makes takes one global mutex
/// (about 40% of the mutex time of an ingestion step); nothing here reads
/// them.
fn configure_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a documented start-time option with an int argument,
        // called before sqlite3_initialize (libsql initialises on the
        // first database it opens, after this).
        let rc = unsafe { libsql::ffi::sqlite3_config(libsql::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::ffi::c_int) };
        if rc != libsql::ffi::SQLITE_OK {
            tracing::warn!(rc, "SQLite was initialised before its memory statistics could be turned off");
        }
    });
}

/// Open flags of our local connections: read-write-create and
/// `SQLITE_OPEN_NOMUTEX`. Each `Connection` is used by one thread at a
/// time (it is not `Sync`: its statement cache is a `RefCell`), so the
/// per-connection mutex SQLite takes in every API call (bind, step, reset)
/// guards nothing.
fn unlocked_connections() -> libsql::OpenFlags {
    libsql::OpenFlags::from_bits_retain(libsql::OpenFlags::default().bits() | libsql::ffi::SQLITE_OPEN_NOMUTEX)
}

impl Db {
    /// Opens (creating if needed) `<dir>/switchboard.db`, switches on WAL,
    /// applies pending migrations and writes the planner's statistics
    /// (`planner_stats.rs`). Refuses a database newer than this binary.
    /// Local, with the default durability: the tests' and tools' way in.
    pub fn open(dir: &Path) -> Result<Db> {
        Db::open_storage(dir, Durability::Normal, &Storage::Local)
    }

    /// Opens the database where `storage` says: the local file, or an
    /// embedded replica of a primary (synced before anything is read).
    /// Then migrations, which on a primary run at the primary, once.
    pub fn open_storage(dir: &Path, durability: Durability, storage: &Storage) -> Result<Db> {
        configure_sqlite();
        std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
        let db = match storage {
            Storage::Local => {
                let path = dir.join("switchboard.db");
                let database = block(libsql::Builder::new_local(&path).flags(unlocked_connections()).build()).with_context(|| format!("opening {}", path.display()))?;
                let keys = crate::key_cache::KeyCache::local(dir.join(crate::key_cache::SIGNAL_FILE));
                let db = Db::with_database(database, durability, None, keys);
                {
                    let c = db.conn()?;
                    block(c.execute_batch("PRAGMA journal_mode=WAL;"))?;
                }
                db
            }
            Storage::Replica(primary) => Db::open_replica(dir, durability, primary)?,
        };
        db.migrate()?;
        if db.ships_writes() {
            crate::ship::install_guard(&db).context("the write guard of shipped transactions")?;
        }
        Ok(db)
    }

    fn with_database(database: libsql::Database, durability: Durability, replica: Option<ReplicaFiles>, keys: crate::key_cache::KeyCache) -> Db {
        let database = Arc::new(database);
        let fresh = Arc::new(crate::freshness::Freshness::default());
        let opener = Opener { database: database.clone(), replica: replica.as_ref().map(|_| database), durability, ship: None };
        // A replica's writer ships its transactions (`ship.rs`).
        let writer_opener = Opener { ship: replica.as_ref().and_then(|r| Some((r.reader.clone(), r.shipper.clone()?, fresh.clone()))), ..opener.clone() };
        Db {
            keys,
            fresh,
            write_gate: Arc::new(parking_lot::FairMutex::new(Writer { conn: None, opener: writer_opener })),
            opener,
            replica,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// `<dir>/replica-<role>/switchboard.db`, a replica of `primary` kept
    /// by libsql's embedded-replica client; one process at a time (a lock
    /// file), since two clients syncing one file would corrupt it.
    fn open_replica(dir: &Path, durability: Durability, primary: &Primary) -> Result<Db> {
        let folder = dir.join(format!("replica-{}", primary.role));
        std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        let lock = std::fs::File::create(folder.join("lock")).with_context(|| format!("creating {}", folder.join("lock").display()))?;
        // Admin commands queue for their replica; a second server on the
        // same data dir is refused.
        let locked = if primary.role == "admin" { lock.lock().map_err(|e| e.to_string()) } else { lock.try_lock().map_err(|e| e.to_string()) };
        if let Err(e) = locked {
            bail!("another switchboard process keeps the replica in {} ({e}); give each server its own --data-dir", folder.display());
        }
        let rt = io_runtime()?;
        // The periodic sync is a task of the IO runtime.
        let _io = rt.enter();
        let path = folder.join("switchboard.db");
        let database = block(
            // libsql's own connector: http:// or https:// (the system's roots).
            libsql::Builder::new_remote_replica(&path, primary.url.clone(), primary.auth_token.clone())
                // sqld serves the default namespace unless told otherwise;
                // libsql would take the namespace from the host name.
                .namespace("default")
                // We pull once per committed write (`after_statement`)
                // instead of after every statement sent to the primary.
                .read_your_writes(false)
                .sync_interval(primary.sync_interval)
                .build(),
        )
        .with_context(|| format!("opening the replica {}", path.display()))?;
        block(database.sync()).map_err(|e| anyhow!("cannot sync with the primary at {}: {e}", primary.url))?;
        // The replica's file is an ordinary SQLite database in WAL mode that
        // libsql's injector writes: readers of their own see each committed
        // frame, and the node's writes reach it by `after_statement`.
        let reader = Arc::new(block(libsql::Builder::new_local(&path).flags(unlocked_connections()).build()).with_context(|| format!("opening {} for reading", path.display()))?);
        let keys = crate::key_cache::KeyCache::replica(primary.sync_interval);
        let shipper = if primary.ship_writes { Some(Arc::new(crate::ship::Shipper::new(&primary.url, &primary.auth_token)?)) } else { None };
        Ok(Db::with_database(database, durability, Some(ReplicaFiles { reader, idle_readers: Mutex::new(Vec::new()), shipper, key_pull: Mutex::new(None), _lock: lock }), keys))
    }

    /// Read your writes of what this node wrote at the primary without its
    /// replica's file (`freshness.rs`).
    pub fn freshness(&self) -> Arc<crate::freshness::Freshness> {
        self.fresh.clone()
    }

    /// Whether this database is a replica of a primary (`--primary-url`).
    pub fn is_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// Whether the writer ships its transactions to the primary (`ship.rs`).
    pub fn ships_writes(&self) -> bool {
        self.replica.as_ref().is_some_and(|r| r.shipper.is_some())
    }

    /// Pulls the primary's committed frames into the replica now (nothing
    /// to do in the local mode). The write node's answer was sent after
    /// its commit, so a pull started after it arrived brings that write.
    pub fn pull(&self) -> Result<()> {
        let Some(replica) = &self.opener.replica else { return Ok(()) };
        match pull_replica(replica) {
            Ok(_) => {
                PRIMARY_UNREACHABLE.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                PRIMARY_UNREACHABLE.store(is_network(&e), Ordering::Relaxed);
                Err(anyhow!("pulling from the primary: {e}"))
            }
        }
    }

    /// A key this replica does not have may have been made a moment ago
    /// at the primary (the admin CLI, the console of another node): pull
    /// once before the key is refused. Pulls for missing keys are spaced
    /// `KEY_PULL_GAP` apart, so unknown keys cannot flood the primary;
    /// every miss waits for a pull that started after it arrived (one
    /// pull answers all misses that waited for it). False in the local
    /// mode or when the pull failed: nothing new to look at.
    pub fn pull_for_missing_key(&self) -> bool {
        let Some(replica) = &self.replica else { return false };
        let arrived = std::time::Instant::now();
        let pull = || {
            let mut last = replica.key_pull.lock();
            if last.is_some_and(|t| t > arrived) {
                // A pull that began after this miss has ended meanwhile.
                return true;
            }
            if let Some(wait) = last.map(|t| KEY_PULL_GAP.saturating_sub(t.elapsed())).filter(|w| !w.is_zero()) {
                std::thread::sleep(wait);
            }
            *last = Some(std::time::Instant::now());
            self.pull().is_ok()
        };
        // On a tokio worker (admission runs there) the pull must not hold
        // the worker's other tasks.
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(pull),
            _ => pull(),
        }
    }

    /// API keys by hash, kept in memory (`key_cache.rs`).
    pub fn keys(&self) -> &crate::key_cache::KeyCache {
        &self.keys
    }

    /// A pooled connection for reads only: on a replica, a read-only
    /// connection on its file (a write there is refused, so nothing bypasses
    /// the primary); in the local mode, `conn`.
    pub fn read_conn(&self) -> Result<Conn<'_>> {
        let Some(replica) = &self.replica else { return self.conn() };
        if let Some(c) = replica.idle_readers.lock().pop() {
            return Ok(Conn { db: self, conn: Some(c) });
        }
        Ok(Conn { db: self, conn: Some(new_reader(replica)?) })
    }

    /// A new connection for reads outside the pool (closed when dropped).
    pub fn fresh_read_conn(&self) -> Result<Connection> {
        match &self.replica {
            Some(replica) => new_reader(replica),
            None => self.fresh_conn(),
        }
    }

    /// A new connection outside the pool (closed when dropped).
    pub fn fresh_conn(&self) -> Result<Connection> {
        let c = self.opener.database.connect()?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Connection::new(c, self.opener.replica.clone()))
    }

    pub fn conn(&self) -> Result<Conn<'_>> {
        if let Some(c) = self.idle.lock().pop() {
            return Ok(Conn { db: self, conn: Some(c) });
        }
        Ok(Conn { db: self, conn: Some(self.opener.open()?) })
    }

    /// Returns a detached connection to the pool.
    pub fn give_back(&self, c: Connection) {
        drop(Conn { db: self, conn: Some(c) });
    }

    /// Holds the in-process write gate; `None` after `wait` (the caller
    /// answers 503, retryable).
    pub fn write_gate(&self, wait: Duration) -> Option<WriteGuard> {
        let asked = std::time::Instant::now();
        let guard = self.write_gate.try_lock_arc_for(wait);
        switchboard_ops::metrics::write_gate_wait(asked, guard.is_some());
        guard
    }

    /// The gate itself, for a job step that takes it only when it first
    /// writes (see `jobs::run_one`).
    pub fn gate(&self) -> Gate {
        self.write_gate.clone()
    }

    /// Copies committed WAL frames into the database file without blocking
    /// writers (PASSIVE); `truncate` also resets the WAL file (at shutdown).
    ///
    /// Under a steady stream of commits a PASSIVE checkpoint never catches
    /// up (writers append while it copies), so SQLite never starts the WAL
    /// over: it grew by about 100 MB a second under webhook load, every
    /// append to new space paid the filesystem's zeroing, and every page
    /// read searched a longer WAL index. Once the WAL holds more than
    /// `WAL_RESTART_FRAMES` after the PASSIVE pass, a RESTART checkpoint
    /// runs holding the write gate (no writer of ours appends meanwhile),
    /// so the next commit writes from the start of the file again.
    pub fn checkpoint(&self, truncate: bool) {
        if self.replica.is_some() {
            return;
        }
        let Ok(c) = self.conn() else { return };
        if truncate {
            let _ = query_rows(&c, "PRAGMA wal_checkpoint(TRUNCATE)", vec![]);
            return;
        }
        // (frames in the WAL, frames copied into the database)
        let passive = || -> (i64, i64) {
            let rows = query_rows(&c, "PRAGMA wal_checkpoint(PASSIVE)", vec![]).unwrap_or_default();
            let int = |i: usize| match rows.first().and_then(|r| r.get(i)) {
                Some(SqlValue::Integer(n)) => *n,
                _ => 0,
            };
            (int(1), int(2))
        };
        let mut frames = passive().0;
        if frames <= WAL_RESTART_FRAMES {
            return;
        }
        let mut copied = 0;
        // Catch up without the gate first: each pass syncs and copies what
        // was committed up to its start, while commits go on. Repeat until
        // a pass finds little new, which is all the gated pass below then
        // syncs and copies while writers wait (it used to find what the
        // first pass let through: syncing those 8 MB of WAL took 20 ms, and
        // the p99 of creates went from 6 to 13 ms).
        for _ in 0..8 {
            let before = frames;
            (frames, copied) = passive();
            if frames - before <= GATED_COPY_FRAMES && frames == copied {
                break;
            }
        }
        if frames != copied {
            return;
        }
        // Under the gate: copy the rest and, when no reader is inside the
        // WAL, have the next commit start it over. Readers are not waited
        // for (SQLite's busy handler sleeps in steps of milliseconds while
        // every writer queues behind the gate): with one inside, nothing
        // restarts and the next second tries again.
        let Some(_gate) = self.write_gate(RESTART_WAIT) else { return };
        if query_rows(&c, "PRAGMA busy_timeout=0", vec![]).is_ok() {
            let _ = query_rows(&c, "PRAGMA wal_checkpoint(RESTART)", vec![]);
            let _ = query_rows(&c, &format!("PRAGMA busy_timeout={}", BUSY_TIMEOUT.as_millis()), vec![]);
        }
    }

    /// Applies pending migrations, one transaction each. What is applied
    /// is read inside that write transaction, so when several nodes start
    /// on one primary, the first applies a migration and the others find
    /// it done; a database that has a migration this binary does not know
    /// is refused.
    fn migrate(&self) -> Result<()> {
        let _gate = self.write_gate.lock();
        let c = self.conn()?;
        execute(&c, "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)", vec![])?;
        let known: Vec<&str> = MIGRATIONS.iter().map(|(n, _)| *n).collect();
        let next = || -> Result<Option<&str>> {
            let applied = query_strings(&c, "SELECT name FROM schema_migrations ORDER BY name", vec![])?;
            if let Some(unknown) = applied.iter().find(|a| !known.contains(&a.as_str())) {
                bail!(
                    "this database was migrated by a newer Switchboard (it has migration {unknown}, which this binary does not know); \
                     upgrade the binary or use another --data-dir"
                );
            }
            let Some((name, sql)) = MIGRATIONS.iter().find(|(n, _)| !applied.iter().any(|a| a == n)) else { return Ok(None) };
            block(c.execute_batch(sql)).map_err(|e| anyhow!("migration {name} failed: {e}"))?;
            execute(&c, "INSERT INTO schema_migrations(name, applied_at) VALUES (?1, datetime('now'))", vec![SqlValue::Text(name.to_string())])?;
            Ok(Some(name))
        };
        while let Some(name) = in_transaction(&c, &next)? {
            switchboard_ops::logging::line("info", &format!("applied migration {name}"));
        }
        if self.replica.is_some() {
            // The primary refuses ANALYZE, so sqlite_stat1 cannot be made
            // there; a replica plans without our statistics.
            return Ok(());
        }
        crate::planner_stats::seed(&c).context("writing the query planner's statistics")
    }
}

/// A read-only connection on a replica's file (a write there is refused,
/// so nothing bypasses the primary).
fn new_reader(replica: &ReplicaFiles) -> Result<Connection> {
    let c = replica.reader.connect()?;
    c.busy_timeout(BUSY_TIMEOUT)?;
    block(c.execute_batch("PRAGMA query_only=ON;"))?;
    let mut c = Connection::new(c, None);
    c.reader = true;
    Ok(c)
}

/// Runs `f` in one write transaction on `c`: committed when it succeeds,
/// rolled back whole when it fails.
pub fn in_transaction<T>(c: &Connection, f: impl FnOnce() -> Result<T>) -> Result<T> {
    execute(c, "BEGIN IMMEDIATE", vec![])?;
    match f() {
        Ok(v) => {
            execute(c, "COMMIT", vec![])?;
            Ok(v)
        }
        Err(e) => {
            let _ = execute(c, "ROLLBACK", vec![]);
            Err(e)
        }
    }
}

/// A column as text: text as it is, an integer in decimal, anything else empty.
/// The shared request path's statements (`switchboard_gateway::storage`)
/// run on a connection through this.
impl switchboard_gateway::storage::Sql for &Connection {
    fn query(&mut self, sql: &str, params: Vec<Shared>) -> Result<Vec<Vec<Shared>>, String> {
        let params = params.into_iter().map(from_shared).collect();
        self.query_rows(sql, params).map(|rows| rows.into_iter().map(|r| r.into_iter().map(to_shared).collect()).collect()).map_err(|e| e.to_string())
    }
    fn execute(&mut self, sql: &str, params: Vec<Shared>) -> Result<u64, String> {
        Connection::execute(*self, sql, params.into_iter().map(from_shared).collect()).map_err(|e| e.to_string())
    }
}

use switchboard_gateway::storage::Value as Shared;

pub fn to_shared(v: SqlValue) -> Shared {
    match v {
        SqlValue::Null => Shared::Null,
        SqlValue::Integer(i) => Shared::Integer(i),
        SqlValue::Real(f) => Shared::Real(f),
        SqlValue::Text(s) => Shared::Text(s),
        SqlValue::Blob(b) => Shared::Blob(b),
    }
}

pub fn from_shared(v: Shared) -> SqlValue {
    match v {
        Shared::Null => SqlValue::Null,
        Shared::Integer(i) => SqlValue::Integer(i),
        Shared::Real(f) => SqlValue::Real(f),
        Shared::Text(s) => SqlValue::Text(s),
        Shared::Blob(b) => SqlValue::Blob(b),
    }
}

pub fn text(v: &SqlValue) -> String {
    match v {
        SqlValue::Text(s) => s.clone(),
        SqlValue::Integer(i) => i.to_string(),
        _ => String::new(),
    }
}

/// Runs a query and returns the first column of every row as text.
pub fn query_strings(c: &Connection, sql: &str, params: Vec<SqlValue>) -> Result<Vec<String>> {
    let rows = query_rows(c, sql, params)?;
    Ok(rows.iter().map(|r| r.first().map(text).unwrap_or_default()).collect())
}

/// Runs a query and collects all rows (through the connection's statement cache).
pub fn query_rows(c: &Connection, sql: &str, params: Vec<SqlValue>) -> Result<Vec<Vec<SqlValue>>> {
    Ok(c.query_rows(sql, params)?)
}

/// Runs a statement (through the connection's statement cache).
pub fn execute(c: &Connection, sql: &str, params: Vec<SqlValue>) -> Result<u64> {
    Ok(c.execute(sql, params)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db() -> (Db, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("switchboard-db-test-{}", uuid::Uuid::new_v4()));
        (Db::open(&dir).expect("open"), dir)
    }

    /// Frames in the WAL after a PASSIVE pass.
    fn wal_frames(db: &Db) -> i64 {
        let c = db.conn().expect("conn");
        match &query_rows(&c, "PRAGMA wal_checkpoint(PASSIVE)", vec![]).expect("checkpoint")[0][1] {
            SqlValue::Integer(n) => *n,
            other => panic!("frames: {other:?}"),
        }
    }

    fn write_pages(db: &Db, rows: usize) {
        let c = db.conn().expect("conn");
        execute(&c, "CREATE TABLE IF NOT EXISTS filler (id INTEGER PRIMARY KEY, blob BLOB)", vec![]).expect("table");
        execute(&c, "BEGIN IMMEDIATE", vec![]).expect("begin");
        for _ in 0..rows {
            execute(&c, "INSERT INTO filler (blob) VALUES (zeroblob(4000))", vec![]).expect("insert");
        }
        execute(&c, "COMMIT", vec![]).expect("commit");
    }

    #[test]
    fn a_grown_wal_starts_over_and_a_reader_does_not_hold_the_restart_up() {
        let (db, dir) = temp_db();
        // A reader that pins the WAL: the restart cannot finish while it reads.
        let reader = db.fresh_conn().expect("reader");
        execute(&reader, "BEGIN", vec![]).expect("begin read");
        query_rows(&reader, "SELECT COUNT(*) FROM jobs", vec![]).expect("read");
        write_pages(&db, (WAL_RESTART_FRAMES + 1_000) as usize);
        let asked = std::time::Instant::now();
        db.checkpoint(false);
        assert!(asked.elapsed() < BUSY_TIMEOUT, "the restart does not wait for readers");
        // Writers are not held up by the attempt.
        assert!(db.write_gate(Duration::from_millis(10)).is_some());
        write_pages(&db, 10);
        assert!(wal_frames(&db) > WAL_RESTART_FRAMES, "the pinned WAL could not start over");
        // Once the reader is gone, the next checkpoint starts the WAL over,
        // and the next commit writes from its start.
        execute(&reader, "COMMIT", vec![]).expect("end read");
        db.checkpoint(false);
        write_pages(&db, 10);
        assert!(wal_frames(&db) < 100, "the WAL started over: {} frames", wal_frames(&db));
        drop(reader);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_reused_statement_starts_from_fresh_bindings() {
        let (db, dir) = temp_db();
        let c = db.conn().expect("conn");
        let sql = "SELECT ?1, ?2";
        let first = c.query_rows(sql, vec![SqlValue::Integer(1), SqlValue::Text("two".into())]).expect("first");
        assert_eq!(first, vec![vec![SqlValue::Integer(1), SqlValue::Text("two".into())]]);
        // The same text, cached, with one parameter short: the missing one is
        // NULL as in a fresh statement, not the previous run's "two".
        let second = c.query_rows(sql, vec![SqlValue::Integer(3)]).expect("second");
        assert_eq!(second, vec![vec![SqlValue::Integer(3), SqlValue::Null]]);
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_cached_statement_holds_no_snapshot_after_use() {
        let (db, dir) = temp_db();
        let reader = db.conn().expect("reader").detach();
        let writer = db.conn().expect("writer").detach();
        writer.execute("CREATE TABLE t (v INTEGER)", vec![]).expect("create");
        let count = |c: &Connection| c.query_rows("SELECT COUNT(*) FROM t", vec![]).expect("count")[0][0].clone();
        assert_eq!(count(&reader), SqlValue::Integer(0));
        // Were the reader's statement left mid-read, it would keep its
        // snapshot and miss this row.
        writer.execute("INSERT INTO t VALUES (1)", vec![]).expect("insert");
        assert_eq!(count(&reader), SqlValue::Integer(1));
        // A failed statement is reset too and can run again.
        assert!(writer.execute("INSERT INTO missing VALUES (1)", vec![]).is_err());
        writer.execute("INSERT INTO t VALUES (2)", vec![]).expect("insert after a failure");
        assert_eq!(count(&reader), SqlValue::Integer(2));
        drop((reader, writer, db));
        let _ = std::fs::remove_dir_all(dir);
    }
}
