//! libSQL storage: opening the database file, migrations, a small pool of
//! connections that each keep their prepared statements, and the
//! process-wide write gate.
//!
//! libsql's local connections do their work synchronously inside async
//! functions: `block` polls such a future once (it is always ready) and only
//! falls back to an executor if it is not.

use anyhow::{anyhow, bail, Context, Result};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::future::Future;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

pub use libsql::Value as SqlValue;

/// Drives a libsql future to completion on the current thread.
pub fn block<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => futures_executor::block_on(f),
    }
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
}

impl std::ops::Deref for Connection {
    type Target = libsql::Connection;
    fn deref(&self) -> &libsql::Connection {
        &self.inner
    }
}

impl Connection {
    fn new(inner: libsql::Connection) -> Connection {
        Connection { statements: RefCell::new(lru::LruCache::new(NonZeroUsize::new(STATEMENT_CACHE).expect("non-zero"))), inner }
    }

    /// Runs `f` with the cached statement for `sql`, preparing it on first
    /// use. The statement is reset afterwards whatever happened, so it
    /// holds no read snapshot and no bindings leak into its next use.
    fn with_statement<T>(&self, sql: &str, f: impl FnOnce(&libsql::Statement) -> Result<T, libsql::Error>) -> Result<T, libsql::Error> {
        let mut cache = self.statements.borrow_mut();
        if !cache.contains(sql) {
            let stmt = block(self.inner.prepare(sql))?;
            cache.put(sql.into(), stmt);
        }
        let stmt = cache.get(sql).expect("just inserted");
        let out = f(stmt);
        stmt.reset();
        out
    }

    /// Runs a query and collects all rows.
    pub fn query_rows(&self, sql: &str, params: Vec<SqlValue>) -> Result<Vec<Vec<SqlValue>>, libsql::Error> {
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
        self.with_statement(sql, |stmt| {
            let params = bind_all(stmt, params);
            block(stmt.execute(params)).map(|n| n as u64)
        })
    }

    /// Runs one statement once per row of parameters.
    pub fn execute_many(&self, sql: &str, rows: Vec<Vec<SqlValue>>) -> Result<u64, libsql::Error> {
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
    database: libsql::Database,
    durability: Durability,
    idle: Mutex<Vec<Connection>>,
    /// One writer at a time inside this process: write transactions queue
    /// here in arrival order (a fair mutex, so no writer starves under load)
    /// instead of spinning in SQLite's busy handler. Other processes (the
    /// admin CLI, a second node) are covered by the busy timeout.
    write_gate: Arc<parking_lot::FairMutex<()>>,
}

/// Holding the write gate (owned, so a job step can keep it across calls).
pub type WriteGuard = parking_lot::lock_api::ArcMutexGuard<parking_lot::RawFairMutex, ()>;

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
            let mut idle = self.db.idle.lock();
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

impl Db {
    /// Opens (creating if needed) `<dir>/switchboard.db`, switches on WAL,
    /// applies pending migrations and writes the planner's statistics
    /// (`planner_stats.rs`). Refuses a database newer than this binary.
    pub fn open(dir: &Path) -> Result<Db> {
        Db::open_with(dir, Durability::Normal)
    }

    /// `open`, with the durability of commits made through this handle.
    pub fn open_with(dir: &Path, durability: Durability) -> Result<Db> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
        let path = dir.join("switchboard.db");
        let database = block(libsql::Builder::new_local(&path).build())
            .with_context(|| format!("opening {}", path.display()))?;
        let db = Db { database, durability, idle: Mutex::new(Vec::new()), write_gate: Arc::new(parking_lot::FairMutex::new(())) };
        {
            let c = db.conn()?;
            block(c.execute_batch("PRAGMA journal_mode=WAL;"))?;
        }
        db.migrate()?;
        Ok(db)
    }

    /// A new connection outside the pool (closed when dropped).
    pub fn fresh_conn(&self) -> Result<Connection> {
        let c = self.database.connect()?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Connection::new(c))
    }

    pub fn conn(&self) -> Result<Conn<'_>> {
        if let Some(c) = self.idle.lock().pop() {
            return Ok(Conn { db: self, conn: Some(c) });
        }
        let c = self.database.connect()?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        // Checkpoints run on their own thread (`checkpoint`), never inside a
        // committing request: an automatic checkpoint's fsync would stall
        // whichever writer happened to cross the threshold.
        let synchronous = self.durability.pragma();
        block(c.execute_batch(&format!("PRAGMA synchronous={synchronous}; PRAGMA foreign_keys=OFF; PRAGMA wal_autocheckpoint=0;")))?;
        Ok(Conn { db: self, conn: Some(Connection::new(c)) })
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
        crate::metrics::write_gate_wait(asked, guard.is_some());
        guard
    }

    /// The gate itself, for a job step that takes it only when it first
    /// writes (see `jobs::run_one`).
    pub fn gate(&self) -> Arc<parking_lot::FairMutex<()>> {
        self.write_gate.clone()
    }

    /// Copies committed WAL frames into the database file without blocking
    /// writers (PASSIVE); `truncate` also resets the WAL file (at shutdown).
    pub fn checkpoint(&self, truncate: bool) {
        if let Ok(c) = self.conn() {
            let mode = if truncate { "TRUNCATE" } else { "PASSIVE" };
            let _ = query_rows(&c, &format!("PRAGMA wal_checkpoint({mode})"), vec![]);
        }
    }

    fn migrate(&self) -> Result<()> {
        let _gate = self.write_gate.lock();
        let c = self.conn()?;
        block(c.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);",
        ))?;
        let applied = query_strings(&c, "SELECT name FROM schema_migrations ORDER BY name", vec![])?;
        let known: Vec<&str> = MIGRATIONS.iter().map(|(n, _)| *n).collect();
        if let Some(unknown) = applied.iter().find(|a| !known.contains(&a.as_str())) {
            bail!(
                "this database was migrated by a newer Switchboard (it has migration {unknown}, which this binary does not know); \
                 upgrade the binary or use another --data-dir"
            );
        }
        for (name, sql) in MIGRATIONS {
            if applied.iter().any(|a| a == name) {
                continue;
            }
            block(c.execute_batch(&format!("BEGIN IMMEDIATE;\n{sql}\nINSERT INTO schema_migrations(name, applied_at) VALUES ('{name}', datetime('now'));\nCOMMIT;")))
                .map_err(|e| {
                    let _ = block(c.execute_batch("ROLLBACK"));
                    anyhow!("migration {name} failed: {e}")
                })?;
            crate::logging::line("info", &format!("applied migration {name}"));
        }
        crate::planner_stats::seed(&c).context("writing the query planner's statistics")
    }
}

/// A column as text: text as it is, an integer in decimal, anything else empty.
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
