//! A connection: its statement cache, and on a replica node how its
//! writes reach the primary (statement by statement, or shipped: the
//! shipping connection's own control is `shipping.rs`).

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
                        vals.push(from_libsql(row.get_value(i)?));
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
            let out = block(self.inner.execute(sql, to_libsql(params)));
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
                block(self.inner.execute(sql, to_libsql(row.clone())))?;
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
pub(crate) fn bind_all(stmt: &libsql::Statement, mut params: Vec<SqlValue>) -> Vec<libsql::Value> {
    let wanted = stmt.parameter_count();
    if params.len() < wanted {
        params.resize(wanted, SqlValue::Null);
    }
    to_libsql(params)
}

/// Parameters as libsql binds them: with [`from_libsql`], the one place the
/// storage layer's value ([`SqlValue`], `switchboard_sql::Value`) and
/// libsql's meet. Each cell moves; no text or blob is copied.
pub(crate) fn to_libsql(params: Vec<SqlValue>) -> Vec<libsql::Value> {
    params
        .into_iter()
        .map(|v| match v {
            SqlValue::Null => libsql::Value::Null,
            SqlValue::Integer(i) => libsql::Value::Integer(i),
            SqlValue::Real(f) => libsql::Value::Real(f),
            SqlValue::Text(s) => libsql::Value::Text(s),
            SqlValue::Blob(b) => libsql::Value::Blob(b),
        })
        .collect()
}

/// A cell libsql read, as the storage layer's value.
pub(crate) fn from_libsql(v: libsql::Value) -> SqlValue {
    match v {
        libsql::Value::Null => SqlValue::Null,
        libsql::Value::Integer(i) => SqlValue::Integer(i),
        libsql::Value::Real(f) => SqlValue::Real(f),
        libsql::Value::Text(s) => SqlValue::Text(s),
        libsql::Value::Blob(b) => SqlValue::Blob(b),
    }
}
