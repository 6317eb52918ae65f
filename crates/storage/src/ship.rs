//! A replica's write transactions sent to the primary as one batch
//! (issue 36). An embedded replica's write transaction is an interactive
//! transaction at the primary: one round trip per statement (14 for a
//! contact create, about 70 for a message send, and the primary's one
//! writer waits through all of them, so a node wrote about 250 a second).
//!
//! Instead, the writer connection of a replica node runs its transaction
//! on the replica's own file, records every statement that changed
//! something (with its parameters, in order, savepoints included), rolls
//! the local transaction back, and sends the primary one Hrana pipeline:
//!
//! ```text
//! BEGIN IMMEDIATE; <guard>; <recorded statements…>; COMMIT   (each step runs
//!                                                             only if the one
//!                                                             before succeeded)
//! ```
//!
//! The guard makes the replay exact: every write to an ordinary table at
//! the primary bumps one counter (`switchboard_write_epoch`, by triggers
//! `install_guard` makes), and the guard fails the batch unless the
//! counter is what the replica showed when the local transaction began.
//! Equal counters mean the primary is in the state the statements ran
//! against, and our statements are deterministic functions of that state
//! and their parameters (no SQL clock or randomness: ids and times come
//! from the host's imports as parameters), so the primary ends where the
//! local run ended. A failed guard is a conflict: the node pulls and runs
//! the whole transaction again (`App::write_batch`, `CONFLICT_RETRIES`).
//! Then the node pulls the committed frames, so its next transaction
//! starts from them.

use crate::db::{block, SqlValue};
use anyhow::{anyhow, Result};
use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value as Json};
use std::time::Duration;

/// The counter every write at the primary bumps, and the statement that
/// fails the batch unless it still holds what the local run saw (SQLite
/// raises "integer overflow" for `abs` of the smallest integer).
pub const EPOCH_TABLE: &str = "switchboard_write_epoch";
const GUARD: &str = "SELECT CASE WHEN n = ?1 THEN 1 ELSE abs(n - n - 9223372036854775807 - 1) END FROM switchboard_write_epoch WHERE id = 1";
pub const READ_EPOCH: &str = "SELECT n FROM switchboard_write_epoch WHERE id = 1";

/// How a shipped transaction ended when it did not commit.
#[derive(Debug)]
pub enum ShipError {
    /// The primary moved on since the replica's view: pull and run again.
    Conflict,
    /// The primary could not be reached or did not answer: nothing or the
    /// whole transaction was written (the commit is the batch's last step,
    /// so never a part), retry.
    Unreachable(String),
    /// The primary refused a statement the local run accepted.
    Refused(String),
}

impl std::fmt::Display for ShipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShipError::Conflict => write!(f, "the primary changed since the replica's view (write conflict)"),
            ShipError::Unreachable(e) => write!(f, "the primary could not be reached: {e}"),
            ShipError::Refused(e) => write!(f, "the primary refused the shipped transaction: {e}"),
        }
    }
}

impl std::error::Error for ShipError {}

/// Request batches that go on from the ones before without a pull (issue
/// 47: a node beside sqld spent a third of each batch's serial chain
/// pulling the writes of the batch before, so that its next local run
/// started from them and its guard held). When more request batches wait,
/// the writer thread asks (`Connection::ask_carry`) that a batch's commit
/// keep the local transaction after shipping it: the next batch runs in
/// the same local transaction, on top of what the last one wrote, and its
/// guard expects the counter those writes left, which is the primary's
/// if nobody else wrote there meanwhile (else the guard fails and the
/// batch runs again after a pull, as any conflict does). Reads never see
/// the carried writes (the replica's file does not commit them); they wait
/// for the pull after the carry ends, as they wait for any pull after a
/// shipped write. A carry ends after `CARRY_BATCHES` batches or
/// `CARRY_FOR`, when no batch waits, or when anything else begins a
/// transaction on the writer connection (a job step, upkeep): the local
/// transaction rolls back and the replica pulls what it shipped. While it
/// lasts the replica does not pull (`Freshness::carrying`): a pull would
/// wait for the local transaction's lock. With `OpenOptions::ship_carry`
/// off (`SWITCHBOARD_SHIP_CARRY=0`, for a side-by-side bench) no batch
/// goes on from a carry: every batch pulls before it runs.
#[derive(Debug, Clone, Copy)]
pub struct Carry {
    batches: u32,
    since: std::time::Instant,
}

/// The most request batches one carry ships.
pub const CARRY_BATCHES: u32 = 8;

/// The longest a carry lasts: how much later, at most, a read waits for a
/// write this node answered (the pull after the carry ends, besides).
pub const CARRY_FOR: Duration = Duration::from_millis(50);

impl Carry {
    pub(crate) fn begin() -> Carry {
        Carry { batches: 1, since: std::time::Instant::now() }
    }

    pub(crate) fn next(self) -> Carry {
        Carry { batches: self.batches + 1, ..self }
    }

    /// Whether another batch may go on from this carry (when carries are
    /// on at all: `OpenOptions::ship_carry`).
    pub(crate) fn may_go_on(&self) -> bool {
        self.since.elapsed() < CARRY_FOR
    }

    /// Whether the batch that went on from it may keep it for one more.
    pub(crate) fn may_keep(&self) -> bool {
        self.may_go_on() && self.batches < CARRY_BATCHES
    }
}

/// What the writer asked of a shipping connection's next transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarryAsk {
    /// Nothing: it ends any carry (a job step, upkeep, a side route).
    No,
    /// Go on from a carry, then end it.
    GoOn,
    /// Go on from a carry, and keep the local transaction after the commit.
    AndKeep,
}

/// Sends shipped transactions to the primary's HTTP API (Hrana over
/// HTTP, the protocol sqld serves beside replication).
pub struct Shipper {
    client: reqwest::Client,
    pipeline_url: String,
    auth_token: String,
    /// `x-namespace-bin`: the namespace's name in base64 without padding.
    /// sqld with namespaces on reads it first (else the host name's first
    /// label: `127` for `127.0.0.1`); one without ignores it.
    namespace: String,
}

impl Shipper {
    pub fn new(primary_url: &str, auth_token: &str, namespace: &str) -> Result<Shipper> {
        let client = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).timeout(Duration::from_secs(60)).tcp_nodelay(true).pool_idle_timeout(Duration::from_secs(60)).build()?;
        Ok(Shipper { client, pipeline_url: format!("{}/v2/pipeline", primary_url.trim_end_matches('/')), auth_token: auth_token.to_string(), namespace: STANDARD_NO_PAD.encode(namespace) })
    }

    /// Runs the recorded statements at the primary in one transaction,
    /// guarded by `epoch`: one round trip, or one per `REQUEST_BYTES` of
    /// statements on one stream when the transaction is large (an
    /// ingestion step's thousands of rows), the commit in the last.
    pub fn ship(&self, epoch: i64, statements: &[(String, Vec<SqlValue>)]) -> Result<(), ShipError> {
        let steps = steps(epoch, statements, true).map_err(|e| ShipError::Refused(e.to_string()))?;
        self.run(steps, None, 0)
    }

    /// Takes the primary's write lock: a stream whose `BEGIN IMMEDIATE`
    /// ran (one round trip). Nobody writes at the primary until
    /// `ship_locked` or `release` ends it (or sqld's own limit on a held
    /// transaction does), so a replica that pulls after this has exactly
    /// the primary's state and a transaction run on it cannot conflict.
    pub fn lock(&self) -> Result<String, ShipError> {
        let answer = self.send(json!({"baton": null, "requests": [{"type": "execute", "stmt": {"sql": "BEGIN IMMEDIATE"}}]}))?;
        let result = &answer["results"][0];
        if result["type"] != "ok" {
            let message = result["error"]["message"].as_str().unwrap_or("no answer").to_string();
            return Err(ShipError::Unreachable(message));
        }
        answer["baton"].as_str().map(String::from).ok_or_else(|| ShipError::Unreachable("the primary kept no stream".into()))
    }

    /// Ships on the stream `lock` opened (the guard still checked) and
    /// commits, releasing the lock.
    pub fn ship_locked(&self, baton: String, epoch: i64, statements: &[(String, Vec<SqlValue>)]) -> Result<(), ShipError> {
        let steps = match steps(epoch, statements, false) {
            Ok(steps) => steps,
            Err(e) => {
                self.release(baton);
                return Err(ShipError::Refused(e.to_string()));
            }
        };
        // Step 0, the BEGIN, ran already.
        self.run(steps, Some(baton), 1)
    }

    /// Ends a locked stream without committing (its transaction rolls back).
    pub fn release(&self, baton: String) {
        let _ = self.send(json!({"baton": baton, "requests": [{"type": "close"}]}));
    }

    /// Sends `steps` (their transaction's steps from `first_step` on) in
    /// requests of at most `REQUEST_BYTES`, on the stream of `baton` if
    /// one is open; the last request closes the stream.
    fn run(&self, steps: Vec<Json>, mut baton: Option<String>, mut first_step: usize) -> Result<(), ShipError> {
        let chunks = chunked(steps);
        let last = chunks.len() - 1;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let len = chunk.len();
            let mut requests = vec![json!({"type": "batch", "batch": {"steps": chained(chunk)}})];
            if i == last {
                requests.push(json!({"type": "close"}));
            }
            let answer = self.send(json!({"baton": baton, "requests": requests}))?;
            if let Err(e) = chunk_outcome(&answer, first_step, len) {
                if i != last {
                    // Ends the stream, and with it the open transaction.
                    let _ = self.send(json!({"baton": answer["baton"], "requests": [{"type": "close"}]}));
                }
                return Err(e);
            }
            baton = answer["baton"].as_str().map(String::from);
            first_step += len;
        }
        Ok(())
    }

    /// Whether the primary is still in the state a transaction that wrote
    /// nothing read (its answer, a 404 say, stands only then): the guard
    /// alone, one round trip, no write lock.
    pub fn check(&self, epoch: i64) -> Result<(), ShipError> {
        let guard = json!({"stmt": {"sql": GUARD, "args": [value(&SqlValue::Integer(epoch)).map_err(|e| ShipError::Refused(e.to_string()))?]}});
        let answer = self.send(json!({"requests": [{"type": "batch", "batch": {"steps": [guard]}}, {"type": "close"}]}))?;
        // Step 0 of this batch is the guard: read it as the transaction's step 1.
        chunk_outcome(&answer, 1, 1)
    }

    /// One pipeline request to the primary.
    fn send(&self, body: Json) -> Result<Json, ShipError> {
        let body = serde_json::to_vec(&body).map_err(|e| ShipError::Refused(e.to_string()))?;
        let mut req = self.client.post(&self.pipeline_url).header("content-type", "application/json").header("x-namespace-bin", &self.namespace).body(body);
        if !self.auth_token.is_empty() {
            req = req.bearer_auth(&self.auth_token);
        }
        switchboard_ops::metrics::primary_call("batch");
        block(async {
            let r = req.send().await.map_err(|e| ShipError::Unreachable(e.without_url().to_string()))?;
            let status = r.status();
            if !status.is_success() {
                let text = r.text().await.unwrap_or_default();
                return Err(ShipError::Unreachable(format!("HTTP {status}: {}", text.chars().take(200).collect::<String>())));
            }
            let bytes = r.bytes().await.map_err(|e| ShipError::Unreachable(e.without_url().to_string()))?;
            serde_json::from_slice::<Json>(&bytes).map_err(|e| ShipError::Unreachable(format!("an answer that is not JSON: {e}")))
        })
    }
}

/// The most statement JSON one pipeline request carries.
const REQUEST_BYTES: usize = 2 << 20;

/// The transaction's statements in order: `BEGIN IMMEDIATE` (unless the
/// stream began it), the guard,
/// the recorded statements, `COMMIT`.
fn steps(epoch: i64, statements: &[(String, Vec<SqlValue>)], begin: bool) -> Result<Vec<Json>> {
    let mut steps = Vec::with_capacity(statements.len() + 3);
    if begin {
        steps.push(json!({"sql": "BEGIN IMMEDIATE"}));
    }
    steps.push(json!({"sql": GUARD, "args": [value(&SqlValue::Integer(epoch))?]}));
    for (sql, params) in statements {
        let args = params.iter().map(value).collect::<Result<Vec<_>>>()?;
        steps.push(json!({"sql": sql, "args": args, "want_rows": false}));
    }
    steps.push(json!({"sql": "COMMIT"}));
    Ok(steps)
}

/// The steps cut into requests of at most `REQUEST_BYTES` (a statement
/// larger than that goes alone).
fn chunked(steps: Vec<Json>) -> Vec<Vec<Json>> {
    let mut chunks = vec![Vec::new()];
    let mut bytes = 0;
    for step in steps {
        let size = step.to_string().len();
        let current = chunks.last_mut().expect("one chunk at least");
        if !current.is_empty() && bytes + size > REQUEST_BYTES {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        chunks.last_mut().expect("one chunk at least").push(step);
    }
    chunks
}

/// One request's batch: each step runs only if the one before succeeded.
fn chained(chunk: Vec<Json>) -> Vec<Json> {
    chunk
        .into_iter()
        .enumerate()
        .map(|(i, stmt)| match i {
            0 => json!({"stmt": stmt}),
            _ => json!({"stmt": stmt, "condition": {"type": "ok", "step": i - 1}}),
        })
        .collect()
}

/// Whether every step of a request succeeded; `first` is the index of its
/// first step in the whole transaction (0 `BEGIN`, 1 the guard). A failed
/// guard is a conflict; a failed `BEGIN` or a busy primary is retryable;
/// any other failed step is the primary refusing a statement.
fn chunk_outcome(answer: &Json, first: usize, len: usize) -> Result<(), ShipError> {
    let result = &answer["results"][0];
    if result["type"] != "ok" {
        let message = result["error"]["message"].as_str().unwrap_or("no answer").to_string();
        return Err(ShipError::Refused(message));
    }
    let inner = &result["response"]["result"];
    let (results, errors) = (&inner["step_results"], &inner["step_errors"]);
    if (0..len).all(|i| !results[i].is_null()) {
        return Ok(());
    }
    match (0..len).find(|i| !errors[*i].is_null()) {
        Some(i) => {
            let message = errors[i]["message"].as_str().unwrap_or("").to_string();
            match first + i {
                1 => Err(ShipError::Conflict),
                0 => Err(ShipError::Unreachable(message)),
                _ if message.contains("SQLITE_BUSY") || message.contains("database is locked") => Err(ShipError::Unreachable(message)),
                n => Err(ShipError::Refused(format!("statement {} of the transaction: {message}", n - 1))),
            }
        }
        None => Err(ShipError::Refused("a step did not run".into())),
    }
}

/// A value in Hrana's JSON form.
fn value(v: &SqlValue) -> Result<Json> {
    Ok(match v {
        SqlValue::Null => json!({"type": "null"}),
        SqlValue::Integer(i) => json!({"type": "integer", "value": i.to_string()}),
        SqlValue::Real(f) if f.is_finite() => json!({"type": "float", "value": f}),
        SqlValue::Real(f) => return Err(anyhow!("a real that JSON cannot carry ({f})")),
        SqlValue::Text(s) => json!({"type": "text", "value": s}),
        SqlValue::Blob(b) => json!({"type": "blob", "base64": STANDARD_NO_PAD.encode(b)}),
    })
}

/// Whether a statement of a shipped transaction must be replayed at the
/// primary: anything but a plain read. Savepoints go too, so that a
/// request rolled back to its savepoint is rolled back there alike.
pub fn recorded(sql: &str) -> bool {
    let word = sql.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("");
    !["SELECT", "VALUES", "EXPLAIN", "PRAGMA"].iter().any(|w| word.eq_ignore_ascii_case(w))
}

/// The savepoints of a shipped transaction, kept out of what is shipped:
/// a savepoint released without a rollback to it groups nothing the
/// primary needs to know, and a rollback to one removes what it undid
/// from the log. So the primary replays only the statements whose effect
/// the local run kept (a contact create: 3 statements instead of 5). A
/// savepoint statement this cannot read (or whose name it does not hold)
/// is recorded as it is.
#[derive(Default)]
pub struct Savepoints {
    /// Open savepoints: their name and where the log stood when each began.
    open: Vec<(String, usize)>,
}

impl Savepoints {
    /// Applies a savepoint statement that ran to the log; false when `sql`
    /// is not one it handles (the caller records it).
    pub fn compact(&mut self, sql: &str, log: &mut Vec<(String, Vec<SqlValue>)>) -> bool {
        let words: Vec<String> = sql.split_ascii_whitespace().map(|w| w.trim_end_matches(';').to_ascii_lowercase()).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).filter(|w| !w.is_empty()).collect();
        let name = |w: &[&str]| -> Option<String> {
            match w {
                [n] if n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => Some(n.to_string()),
                _ => None,
            }
        };
        let find = |open: &[(String, usize)], n: &str| open.iter().rposition(|(m, _)| m == n);
        match words.as_slice() {
            ["savepoint", rest @ ..] => match name(rest) {
                Some(n) => {
                    self.open.push((n, log.len()));
                    true
                }
                None => false,
            },
            ["rollback", "to", rest @ ..] | ["rollback", "transaction", "to", rest @ ..] => {
                let rest = rest.strip_prefix(&["savepoint"]).unwrap_or(rest);
                match name(rest).and_then(|n| find(&self.open, &n)) {
                    Some(i) => {
                        log.truncate(self.open[i].1);
                        self.open.truncate(i + 1);
                        true
                    }
                    None => false,
                }
            }
            ["release", rest @ ..] => {
                let rest = rest.strip_prefix(&["savepoint"]).unwrap_or(rest);
                match name(rest).and_then(|n| find(&self.open, &n)) {
                    Some(i) => {
                        self.open.truncate(i);
                        true
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }
}

/// The guard's counter and its triggers at the primary: one AFTER INSERT,
/// UPDATE and DELETE trigger on every ordinary table. Checked at every
/// open of a replica and after the vector table is made (`serve`), so
/// tables of newer migrations are covered; what is missing is read from
/// the replica and made in one write transaction (a few round trips,
/// nothing when all is there). Virtual tables and their shadow tables
/// cannot have triggers; they are only written beside ordinary tables of
/// the same transaction.
pub fn install_guard(db: &crate::db::Db) -> Result<()> {
    let missing = {
        let c = db.read_conn()?;
        let tables: Vec<String> = crate::db::query_as(
            &c,
            "SELECT name FROM sqlite_master AS t WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE 'libsql\\_%' ESCAPE '\\' \
             AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE '%\\_shadow' ESCAPE '\\' AND name NOT IN ('switchboard_write_epoch', 'edge_rate_limits') AND sql NOT LIKE 'CREATE VIRTUAL%' \
             AND NOT EXISTS (SELECT 1 FROM sqlite_master AS v WHERE v.type = 'table' AND v.sql LIKE 'CREATE VIRTUAL%' AND t.name LIKE v.name || '\\_%' ESCAPE '\\') ORDER BY name",
            vec![],
        )?;
        let triggers: Vec<String> = crate::db::query_as(&c, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'switchboard\\_epoch\\_%' ESCAPE '\\'", vec![])?;
        let epoch: Vec<String> = crate::db::query_as(&c, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'switchboard_write_epoch'", vec![])?;
        let mut script = String::new();
        if epoch.is_empty() {
            script
                .push_str(&format!("CREATE TABLE IF NOT EXISTS {EPOCH_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL); INSERT OR IGNORE INTO {EPOCH_TABLE} (id, n) VALUES (1, 0);"));
        }
        for table in &tables {
            for event in ["insert", "update", "delete"] {
                let name = format!("switchboard_epoch_{table}_{event}");
                if !triggers.contains(&name) {
                    script
                        .push_str(&format!("CREATE TRIGGER IF NOT EXISTS \"{name}\" AFTER {} ON \"{table}\" BEGIN UPDATE {EPOCH_TABLE} SET n = n + 1 WHERE id = 1; END;", event.to_ascii_uppercase()));
                }
            }
        }
        script
    };
    if missing.is_empty() {
        return Ok(());
    }
    let _gate = db.write_gate(Duration::from_secs(30)).ok_or_else(|| anyhow!("the write gate"))?;
    let c = db.conn()?;
    crate::db::in_transaction(&c, || {
        block(c.execute_batch(&missing))?;
        Ok(())
    })?;
    db.pull()
}

#[cfg(test)]
mod tests;
