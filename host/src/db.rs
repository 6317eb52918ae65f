//! libSQL storage: opening the database file, migrations, a small connection
//! pool and the process-wide write gate.
//!
//! libsql's local connections do their work synchronously inside async
//! functions, so every call here runs on a blocking thread (see
//! `run_blocking`), never on a tokio worker.

use anyhow::{anyhow, bail, Context, Result};
use parking_lot::Mutex;
use std::sync::Arc;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

pub use libsql::Value as SqlValue;

/// Drives a libsql future to completion on the current (blocking) thread.
pub fn block<F: Future>(f: F) -> F::Output {
    futures_executor::block_on(f)
}

pub struct Db {
    database: libsql::Database,
    idle: Mutex<Vec<libsql::Connection>>,
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
    conn: Option<libsql::Connection>,
}

impl std::ops::Deref for Conn<'_> {
    type Target = libsql::Connection;
    fn deref(&self) -> &libsql::Connection {
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
    pub fn detach(mut self) -> libsql::Connection {
        self.conn.take().expect("present until drop")
    }
}

pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

impl Db {
    /// Opens (creating if needed) `<dir>/switchboard.db`, switches on WAL and
    /// applies pending migrations. Refuses a database newer than this binary.
    pub fn open(dir: &Path) -> Result<Db> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
        let path = dir.join("switchboard.db");
        let database = block(libsql::Builder::new_local(&path).build())
            .with_context(|| format!("opening {}", path.display()))?;
        let db = Db { database, idle: Mutex::new(Vec::new()), write_gate: Arc::new(parking_lot::FairMutex::new(())) };
        {
            let c = db.conn()?;
            block(c.execute_batch("PRAGMA journal_mode=WAL;"))?;
        }
        db.migrate()?;
        Ok(db)
    }

    /// A new connection outside the pool (closed when dropped).
    pub fn fresh_conn(&self) -> Result<libsql::Connection> {
        let c = self.database.connect()?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        Ok(c)
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
        block(c.execute_batch("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; PRAGMA wal_autocheckpoint=0;"))?;
        Ok(Conn { db: self, conn: Some(c) })
    }

    /// Returns a detached connection to the pool.
    pub fn give_back(&self, c: libsql::Connection) {
        drop(Conn { db: self, conn: Some(c) });
    }

    /// Holds the in-process write gate; `None` after `wait` (the caller
    /// answers 503, retryable).
    pub fn write_gate(&self, wait: Duration) -> Option<WriteGuard> {
        self.write_gate.try_lock_arc_for(wait)
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
            tracing_info(&format!("applied migration {name}"));
        }
        Ok(())
    }
}

fn tracing_info(msg: &str) {
    eprintln!("{{\"level\":\"info\",\"msg\":{}}}", serde_json::Value::String(msg.into()));
}

/// Runs a query and returns the first column of every row as text.
pub fn query_strings(c: &libsql::Connection, sql: &str, params: Vec<SqlValue>) -> Result<Vec<String>> {
    let rows = query_rows(c, sql, params)?;
    Ok(rows
        .into_iter()
        .map(|r| match r.into_iter().next() {
            Some(SqlValue::Text(s)) => s,
            Some(SqlValue::Integer(i)) => i.to_string(),
            _ => String::new(),
        })
        .collect())
}

/// Runs a query and collects all rows.
pub fn query_rows(c: &libsql::Connection, sql: &str, params: Vec<SqlValue>) -> Result<Vec<Vec<SqlValue>>> {
    block(async {
        let mut rows = c.query(sql, params).await?;
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
}

pub fn execute(c: &libsql::Connection, sql: &str, params: Vec<SqlValue>) -> Result<u64> {
    Ok(block(c.execute(sql, params))?)
}
