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

/// The one SQL value of every statement, here and in the components and the
/// edge (`switchboard_sql::Value`): libsql's own value appears only where a
/// connection hands parameters to libsql and reads its rows
/// (`connection.rs`).
pub use switchboard_sql::Value as SqlValue;
pub use switchboard_sql::{params, FromRow, FromValue, Mismatch};

mod connection;
mod database;
mod shipping;
#[cfg(test)]
mod tests;
mod writer;

pub use connection::*;
pub use database::*;
pub use shipping::*;
pub use writer::*;

/// The runtime of a replica's network client (its sockets, its periodic
/// sync): made once, when a replica is opened.
pub(crate) static IO: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();

pub(crate) fn io_runtime() -> Result<&'static tokio::runtime::Runtime> {
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
    /// The sqld namespace the database is (`default` unless a registered
    /// database's URL names one): sent on every call, so a sqld with
    /// `--enable-namespaces` never guesses it from the host name.
    pub namespace: String,
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

/// How a database is opened, besides where it is ([`Storage`]): what a
/// commit survives, and two switches of its writer that side-by-side
/// benches turn off (`serve`'s hidden `--write-priority` and
/// `--ship-carry`, set as `SWITCHBOARD_WRITE_PRIORITY=0` and
/// `SWITCHBOARD_SHIP_CARRY=0`). `main.rs` builds it from the command
/// line; the default is every test's and tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    pub durability: Durability,
    /// The write gate serves requests' writes before background ones
    /// ([`Priority`]); off, every writer in arrival order, as when the gate
    /// was a fair mutex.
    pub write_priority: bool,
    /// A replica's writer lets a request batch go on from the local
    /// transaction of the batches before (`ship::Carry`); off, every batch
    /// pulls before it runs.
    pub ship_carry: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { durability: Durability::Normal, write_priority: true, ship_carry: true }
    }
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

/// A connection runs the statements written once for several callers
/// (`switchboard_gateway::storage`'s request path, the areas' rule crates
/// through `crates/admin`'s `Tx`) through the one statement trait.
impl switchboard_sql::Statements for Connection {
    type Error = anyhow::Error;
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>> {
        Ok(self.query_rows(sql, params.to_vec())?)
    }
    fn execute(&self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        Ok(Connection::execute(self, sql, params.to_vec())?)
    }
}

/// Runs a query and collects all rows (through the connection's statement cache).
pub fn query_rows(c: &Connection, sql: &str, params: Vec<SqlValue>) -> Result<Vec<Vec<SqlValue>>> {
    Ok(c.query_rows(sql, params)?)
}

/// Runs a query and reads every row as `T` (a tuple of the columns' Rust
/// types, or a row struct's [`FromRow`]): a cell of another type is an
/// error, never a default.
pub fn query_as<T: FromRow>(c: &Connection, sql: &str, params: Vec<SqlValue>) -> Result<Vec<T>> {
    Ok(switchboard_sql::decode_rows(c.query_rows(sql, params)?)?)
}

/// The first row of a query read as `T`, if there is one.
pub fn query_one_as<T: FromRow>(c: &Connection, sql: &str, params: Vec<SqlValue>) -> Result<Option<T>> {
    match c.query_rows(sql, params)?.into_iter().next() {
        Some(row) => Ok(Some(T::from_row(row)?)),
        None => Ok(None),
    }
}

/// Runs a statement (through the connection's statement cache).
pub fn execute(c: &Connection, sql: &str, params: Vec<SqlValue>) -> Result<u64> {
    Ok(c.execute(sql, params)?)
}

/// Refuses a business id that is not in this data dir (`business` already
/// lowercased): what every admin command, and a provider choice, checks
/// before it writes for a business. Tenancy, not a domain rule: the one
/// statement that knows a business is a row of `businesses`.
pub fn require_business(c: &Connection, business: &str) -> Result<()> {
    if query_one_as::<String>(c, "SELECT id FROM businesses WHERE id = ?1", params![business])?.is_none() {
        bail!("no business {business} in this data dir");
    }
    Ok(())
}
