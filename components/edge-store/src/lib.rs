//! The storage half of the edge build (world `edge-store`, wit/edge.wit).
//!
//! It exports the platform interfaces an area imports (`store`, `jobs`,
//! `clock`, `ids`, `log`) and the router's `transaction`, and serves them
//! from the libSQL primary: every request of one instance is one Hrana
//! stream, so the router's `BEGIN IMMEDIATE ... COMMIT` is one transaction
//! at the primary, like a node's write transaction. `wac plug` composes it
//! into the router (`switchboard-edge`), so the areas' code is the same
//! code `switchboard serve` runs.
//!
//! Round trips: control statements that cannot fail on their own (`BEGIN`,
//! `SAVEPOINT`, `RELEASE`, `ROLLBACK TO`) wait and go with the next
//! statement in one chained batch, each step run only if the one before it
//! succeeded; `COMMIT`/`ROLLBACK` go with the stream's `close`. A statement
//! outside a transaction runs on a stream of its own, closed in the same
//! round trip.
//!
//! Databases (issue 47): main (`SWITCHBOARD_PRIMARY_URL`) keeps the keys,
//! the rate limits and each business's placement; the router's `place`
//! moves the request's stream to the database its business lives in (see
//! [`Stream::send`] and wit/edge.wit).

mod hrana;
mod primary;

mod bindings {
    wit_bindgen::generate!({
        world: "edge-store",
        path: "../../wit",
        generate_all,
    });
}

use bindings::exports::switchboard::platform::jobs::{self, EffectStart, JobOptions};
use bindings::exports::switchboard::platform::store::{self, StoreError};
use bindings::exports::switchboard::platform::transaction;
use bindings::exports::switchboard::platform::types::Value as WitValue;
use bindings::exports::switchboard::provider::{clock, ids, log};
use primary::Primary;
use serde_json::{json, Value as Json};
use std::cell::RefCell;
use switchboard_gateway::storage::{self as shared, Value};

/// The name of the main database (where keys and placement live).
const MAIN: &str = "main";

/// A statement waiting to go with the next one: a control statement, a
/// bulk write's first rows, or a prefetched query (with its handle).
struct Deferred {
    stmt: Json,
    prefetch: Option<u32>,
    /// A control statement that waits for the next one (`BEGIN`,
    /// `SAVEPOINT`, ...): no caller waits for its result.
    control: bool,
}

impl Deferred {
    fn statement(stmt: Json) -> Deferred {
        Deferred { stmt, prefetch: None, control: false }
    }
}

/// The row of a business's placement in main: its database's name and
/// URL (NULL when `databases` has no row of that name).
const PLACEMENT: &str = "SELECT b.database, d.url FROM businesses b LEFT JOIN databases d ON d.name = b.database WHERE b.id = ?";

/// The instance's stream at the primary (an instance serves one request).
#[derive(Default)]
struct Stream {
    baton: Option<String>,
    /// Statements waiting to go with the next one.
    deferred: Vec<Deferred>,
    /// Between BEGIN and COMMIT/ROLLBACK: the stream stays open.
    in_transaction: bool,
    round_trips: u32,
    /// Main: the primary of `SWITCHBOARD_PRIMARY_URL`.
    primary: Option<Result<Primary, String>>,
    /// The database of the request's business, once its placement named
    /// one other than main: the stream's statements go there.
    elsewhere: Option<Primary>,
    /// The handle of the business's placement, queued and not back yet.
    placing: Option<u32>,
    /// Why the business's statements cannot run (its placement could not
    /// be read, or names a database with no URL): every statement fails
    /// until the request's transaction ends; never main in its stead.
    misplaced: Option<String>,
    /// The stream (a read transaction) left open at main when the stream
    /// moved: rolled back with the request's `COMMIT`/`ROLLBACK`.
    left_at_main: Option<String>,
    /// What each prefetched query came to, by handle (`None`: not sent yet).
    prefetched: Vec<Option<Result<Vec<Vec<Value>>, StoreError>>>,
    /// The monotonic instant no wait on the primary goes past.
    deadline: Option<u64>,
}

thread_local! {
    static STREAM: RefCell<Stream> = RefCell::new(Stream::default());
}

fn unavailable(detail: &str) -> StoreError {
    // The detail goes to the log; the area's failure says only what to do.
    eprintln!("level=error msg=\"edge storage: {}\"", detail.replace('"', "'"));
    StoreError { kind: "busy".into(), message: "the database primary cannot be reached; nothing was written, retry shortly".into() }
}

fn statement_error(e: hrana::SqlError) -> StoreError {
    let kind = if e.code.contains("CONSTRAINT") || e.message.contains("constraint") || e.message.contains("UNIQUE") {
        "constraint"
    } else if e.code.contains("BUSY") || e.code.contains("LOCKED") || e.message.contains("locked") || e.message.contains("busy") {
        "busy"
    } else {
        "other"
    };
    StoreError { kind: kind.into(), message: e.message }
}

impl Stream {
    /// Sends `statement` (after the deferred statements) and, when no
    /// transaction is open afterwards, closes the stream in the same round
    /// trip.
    fn run(&mut self, statement: Json, ends_transaction: bool) -> Result<hrana::StmtResult, StoreError> {
        self.run_all(statement, ends_transaction).map(|mut all| all.pop().unwrap_or_default())
    }

    /// Like [`Stream::run`], with the result of every ordinary statement
    /// sent (prefetched queries keep theirs for `prefetched`).
    fn run_all(&mut self, statement: Json, ends_transaction: bool) -> Result<Vec<hrana::StmtResult>, StoreError> {
        self.deferred.push(Deferred::statement(statement));
        self.send(ends_transaction)
    }

    /// Sends every deferred statement in one round trip, to main or to the
    /// business's database. The round trip that brings the business's
    /// placement back moves the stream: when it names another database,
    /// what it ran at main besides prefetched queries (control statements
    /// and, in a read, the area's first statement) is sent again there,
    /// at once when a caller waits for a result, else with the next
    /// statement; a transaction left open at main waits for the request's
    /// end ([`Stream::leave`]).
    fn send(&mut self, ends_transaction: bool) -> Result<Vec<hrana::StmtResult>, StoreError> {
        if let Some(why) = self.misplaced.clone() {
            let handles: Vec<Option<u32>> = self.deferred.drain(..).map(|d| d.prefetch).collect();
            self.lose_prefetched(&handles, &why);
            return Err(unavailable(&why));
        }
        if self.elsewhere.is_some() && self.deferred.iter().any(|d| d.prefetch.is_some()) {
            // Keys and rate limits are main's: not read at another database.
            let (early, rest): (Vec<Deferred>, Vec<Deferred>) = self.deferred.drain(..).partition(|d| d.prefetch.is_some());
            for h in early.iter().filter_map(|d| d.prefetch) {
                self.prefetched[h as usize] = Some(Err(StoreError { kind: "other".into(), message: "a prefetched query is main's; this stream is at another database".into() }));
            }
            self.deferred = rest;
            if self.deferred.is_empty() {
                return Ok(Vec::new());
            }
        }
        let placing = self.placing.filter(|h| self.deferred.iter().any(|d| d.prefetch == Some(*h)));
        let replay: Vec<Deferred> = match placing {
            Some(_) => self.deferred.iter().filter(|d| d.prefetch.is_none()).map(|d| Deferred { stmt: d.stmt.clone(), prefetch: None, control: d.control }).collect(),
            None => Vec::new(),
        };
        let result = self.exchange(ends_transaction);
        let Some(handle) = placing else { return result };
        self.placing = None;
        match self.placed(handle) {
            Ok(None) => result,
            Ok(Some(database)) => {
                // What main ran for the business is answered there again;
                // its open stream waits for the request's end.
                self.left_at_main = self.baton.take();
                self.elsewhere = Some(database);
                let waits = replay.iter().any(|d| !d.control);
                self.deferred.splice(0..0, replay);
                if waits {
                    self.send(ends_transaction)
                } else {
                    result
                }
            }
            Err(why) => {
                self.left_at_main = self.baton.take();
                self.deferred.clear();
                self.prefetched[handle as usize] = Some(Err(unavailable(&why)));
                self.misplaced = Some(why.clone());
                if replay.is_empty() {
                    result
                } else {
                    Err(StoreError { kind: "busy".into(), message: "the business's database cannot be reached; nothing was written, retry shortly".into() })
                }
            }
        }
    }

    /// Where the business's placement (prefetched under `handle`) puts the
    /// stream: main (`None`: main, or no such business, which main's own
    /// checks refuse, as a node does), another database, or why neither.
    fn placed(&self, handle: u32) -> Result<Option<Primary>, String> {
        let rows = match &self.prefetched[handle as usize] {
            Some(Ok(rows)) => rows,
            Some(Err(e)) => return Err(format!("the business's placement could not be read: {}", e.message)),
            None => return Err("the business's placement was not sent".into()),
        };
        let Some(row) = rows.first() else { return Ok(None) };
        let name = match row.first() {
            Some(Value::Text(name)) => name.as_str(),
            _ => return Err("the business's placement is not a database name".into()),
        };
        if name == MAIN {
            return Ok(None);
        }
        let Some(Value::Text(url)) = row.get(1) else { return Err(format!("the business's database {name} is not registered")) };
        match &self.primary {
            Some(Ok(main)) => main.database(name, url).map(Some),
            _ => Err("the primary is not configured".into()),
        }
    }

    /// Ends what the stream left at main when it moved (a read
    /// transaction: rolled back, one round trip), and makes the stream
    /// main's again for what follows (the rate-limit table, a next
    /// placement).
    fn leave(&mut self) {
        if let Some(baton) = self.left_at_main.take() {
            let body = json!({"baton": baton, "requests": [{"type": "execute", "stmt": hrana::stmt("ROLLBACK", &[], false)}, {"type": "close"}]}).to_string();
            if let Some(Ok(main)) = &self.primary {
                self.round_trips += 1;
                if let Err(e) = main.pipeline(body.as_bytes(), self.deadline) {
                    eprintln!("level=warn msg=\"edge storage: the read left at main could not be ended (sqld ends it when the stream expires): {}\"", e.replace('"', "'"));
                }
            }
        }
        self.elsewhere = None;
        self.placing = None;
        self.misplaced = None;
    }

    /// One round trip: every deferred statement, to where the stream is.
    fn exchange(&mut self, ends_transaction: bool) -> Result<Vec<hrana::StmtResult>, StoreError> {
        let waiting: Vec<Deferred> = self.deferred.drain(..).collect();
        let handles: Vec<Option<u32>> = waiting.iter().map(|d| d.prefetch).collect();
        let mut requests = vec![hrana::chained_with(waiting.into_iter().map(|d| (d.stmt, d.prefetch.is_some())).collect())];
        let close = ends_transaction || !self.in_transaction;
        if close {
            requests.push(json!({"type": "close"}));
        }
        let body = json!({"baton": self.baton, "requests": requests}).to_string();
        let primary = match &self.elsewhere {
            Some(database) => database,
            None => match self.primary.get_or_insert_with(Primary::from_env) {
                Ok(p) => p,
                Err(e) => {
                    let e = e.clone();
                    self.lose_prefetched(&handles, &e);
                    return Err(unavailable(&e));
                }
            },
        };
        self.round_trips += 1;
        let sent = primary.pipeline(body.as_bytes(), self.deadline);
        let answer = match sent.and_then(|bytes| serde_json::from_slice::<Json>(&bytes).map_err(|e| format!("the primary's answer is not JSON: {e}"))) {
            Ok(a) => a,
            Err(e) => {
                // The stream (and any transaction on it) is gone.
                self.reset();
                self.lose_prefetched(&handles, &e);
                return Err(unavailable(&e));
            }
        };
        self.baton = if close { None } else { answer.get("baton").and_then(Json::as_str).map(String::from) };
        if close {
            self.in_transaction = false;
        }
        let first = answer.get("results").and_then(Json::as_array).and_then(|r| r.first()).cloned().unwrap_or(Json::Null);
        let steps = match hrana::steps(&first) {
            Ok(Ok(steps)) => steps,
            Ok(Err(e)) => {
                let e = statement_error(e);
                for h in handles.iter().flatten() {
                    self.prefetched[*h as usize] = Some(Err(e.clone()));
                }
                return Err(e);
            }
            Err(e) => {
                self.reset();
                self.lose_prefetched(&handles, &e);
                return Err(unavailable(&e));
            }
        };
        let mut ordinary = Vec::new();
        let mut failed = None;
        for (step, handle) in steps.into_iter().zip(&handles) {
            match (handle, step) {
                (Some(h), Some(r)) => self.prefetched[*h as usize] = Some(r.map(|r| r.rows).map_err(statement_error)),
                (Some(h), None) => self.prefetched[*h as usize] = Some(Err(StoreError { kind: "other".into(), message: "a statement before it failed".into() })),
                (None, Some(Ok(r))) => ordinary.push(r),
                (None, Some(Err(e))) => {
                    failed.get_or_insert(statement_error(e));
                }
                (None, None) => {
                    failed.get_or_insert(StoreError { kind: "other".into(), message: "a statement before it failed".into() });
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(ordinary),
        }
    }

    fn lose_prefetched(&mut self, handles: &[Option<u32>], why: &str) {
        for h in handles.iter().flatten() {
            self.prefetched[*h as usize] = Some(Err(StoreError { kind: "busy".into(), message: why.to_string() }));
        }
    }

    fn reset(&mut self) {
        self.baton = None;
        self.deferred.clear();
        self.in_transaction = false;
    }
}

fn with_stream<T>(f: impl FnOnce(&mut Stream) -> T) -> T {
    STREAM.with(|s| f(&mut s.borrow_mut()))
}

fn to_shared(v: WitValue) -> Value {
    match v {
        WitValue::Null => Value::Null,
        WitValue::Integer(i) => Value::Integer(i),
        WitValue::Real(f) => Value::Real(f),
        WitValue::Text(s) => Value::Text(s),
        WitValue::Blob(b) => Value::Blob(b),
    }
}

fn to_wit(v: Value) -> WitValue {
    match v {
        Value::Null => WitValue::Null,
        Value::Integer(i) => WitValue::Integer(i),
        Value::Real(f) => WitValue::Real(f),
        Value::Text(s) => WitValue::Text(s),
        Value::Blob(b) => WitValue::Blob(b),
    }
}

fn refuse_control(sql: &str) -> Result<(), StoreError> {
    if shared::transaction_control(sql) {
        return Err(StoreError { kind: "other".into(), message: "transactions and connection settings belong to the host".into() });
    }
    Ok(())
}

/// Runs a statement for the shared code in this crate (`jobs.enqueue`).
struct Statements;

impl shared::Sql for Statements {
    fn query(&mut self, sql: &str, params: Vec<Value>) -> Result<Vec<Vec<Value>>, String> {
        with_stream(|s| s.run(hrana::stmt(sql, &params, true), false)).map(|r| r.rows).map_err(|e| e.message)
    }
    fn execute(&mut self, sql: &str, params: Vec<Value>) -> Result<u64, String> {
        with_stream(|s| s.run(hrana::stmt(sql, &params, false), false)).map(|r| r.affected).map_err(|e| e.message)
    }
}

struct EdgeStore;

impl store::Guest for EdgeStore {
    fn query(sql: String, params: Vec<WitValue>) -> Result<Vec<Vec<WitValue>>, StoreError> {
        refuse_control(&sql)?;
        let params: Vec<Value> = params.into_iter().map(to_shared).collect();
        let result = with_stream(|s| s.run(hrana::stmt(&sql, &params, true), false))?;
        Ok(result.rows.into_iter().map(|r| r.into_iter().map(to_wit).collect()).collect())
    }

    fn execute(sql: String, params: Vec<WitValue>) -> Result<u64, StoreError> {
        refuse_control(&sql)?;
        let params: Vec<Value> = params.into_iter().map(to_shared).collect();
        Ok(with_stream(|s| s.run(hrana::stmt(&sql, &params, false), false))?.affected)
    }

    fn execute_many(sql: String, rows: Vec<Vec<WitValue>>) -> Result<u64, StoreError> {
        refuse_control(&sql)?;
        if rows.is_empty() {
            return Ok(0);
        }
        // One round trip for the whole list: a chained batch (after any
        // waiting control statements, which change no rows).
        let chain: Vec<Json> = rows.into_iter().map(|r| hrana::stmt(&sql, &r.into_iter().map(to_shared).collect::<Vec<_>>(), false)).collect();
        let results = with_stream(|s| {
            let mut chain = chain;
            let last = chain.pop().expect("at least one row");
            s.deferred.extend(chain.into_iter().map(Deferred::statement));
            s.run_all(last, false)
        })?;
        Ok(results.iter().map(|r| r.affected).sum())
    }
}

impl jobs::Guest for EdgeStore {
    fn enqueue(kind: String, business_id: String, payload_json: String, options: JobOptions) -> Result<String, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let job = shared::NewJob { id: id.clone(), kind, business_id, payload_json, calls_out: options.calls_out, lane: options.lane, delay_ms: options.delay_ms };
        shared::enqueue_job(&mut Statements, job, now_ms()).map_err(|message| StoreError { kind: "other".into(), message })?;
        Ok(id)
    }

    fn begin_effect(_key: String) -> Result<EffectStart, StoreError> {
        // Job steps run at a native dispatcher node, never at the edge.
        Err(StoreError { kind: "other".into(), message: "job steps do not run at the edge".into() })
    }
}

impl transaction::Guest for EdgeStore {
    fn control(statement: String) -> Result<(), StoreError> {
        let upper = statement.trim().to_ascii_uppercase();
        let word = upper.split_whitespace().next().unwrap_or("");
        let ends = matches!(word, "COMMIT" | "END") || (word == "ROLLBACK" && !upper.contains(" TO "));
        with_stream(|s| {
            if ends {
                let ended = if s.baton.is_none() && s.deferred.iter().all(|d| d.prefetch.is_none()) {
                    // Nothing reached the database yet: nothing to end.
                    s.reset();
                    Ok(())
                } else {
                    s.run(hrana::stmt(&statement, &[], false), true).map(|_| ())
                };
                s.leave();
                return ended;
            }
            match word {
                "BEGIN" => s.in_transaction = true,
                "SAVEPOINT" | "RELEASE" | "ROLLBACK" => {}
                _ => return Err(StoreError { kind: "other".into(), message: format!("{word} is not a transaction-control statement") }),
            }
            s.deferred.push(Deferred { stmt: hrana::stmt(&statement, &[], false), prefetch: None, control: true });
            Ok(())
        })
    }

    fn round_trips() -> u32 {
        with_stream(|s| s.round_trips)
    }

    fn prefetch(sql: String, params: Vec<WitValue>) -> u32 {
        let params: Vec<Value> = params.into_iter().map(to_shared).collect();
        with_stream(|s| {
            let handle = s.prefetched.len() as u32;
            s.prefetched.push(None);
            s.deferred.push(Deferred { stmt: hrana::stmt(&sql, &params, true), prefetch: Some(handle), control: false });
            handle
        })
    }

    fn place(business_id: String) -> u32 {
        with_stream(|s| {
            let handle = s.prefetched.len() as u32;
            if s.elsewhere.is_some() || s.placing.is_some() || s.misplaced.is_some() {
                // One business per request (a second could not move a
                // stream that moved already).
                s.prefetched.push(Some(Err(StoreError { kind: "other".into(), message: "this request's business is placed already".into() })));
                return handle;
            }
            s.prefetched.push(None);
            s.deferred.push(Deferred { stmt: hrana::stmt(PLACEMENT, &[Value::Text(business_id)], true), prefetch: Some(handle), control: false });
            s.placing = Some(handle);
            handle
        })
    }

    fn prefetched(handle: u32) -> Result<Vec<Vec<WitValue>>, StoreError> {
        with_stream(|s| {
            let slot = s.prefetched.get(handle as usize).ok_or_else(|| StoreError { kind: "other".into(), message: "no such prefetched query".into() })?;
            if slot.is_none() {
                // Not carried by a statement yet: it goes now, with what waits.
                let _ = s.send(false);
            }
            match s.prefetched[handle as usize].clone() {
                Some(r) => r.map(|rows| rows.into_iter().map(|r| r.into_iter().map(to_wit).collect()).collect()),
                None => Err(unavailable("a prefetched query was not sent")),
            }
        })
    }

    fn set_deadline(at: u64) {
        with_stream(|s| s.deadline = Some(at));
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl clock::Guest for EdgeStore {
    fn now_ms() -> i64 {
        now_ms()
    }
    fn now_rfc3339() -> String {
        switchboard_formats::time::rfc3339_ms(now_ms())
    }
}

impl ids::Guest for EdgeStore {
    fn uuid_v7() -> String {
        uuid::Uuid::now_v7().to_string()
    }
    /// At most 4 KiB from the runtime's CSPRNG.
    fn random_bytes(len: u32) -> Vec<u8> {
        wasip2::random::random::get_random_bytes(u64::from(len.min(4096)))
    }
}

impl log::Guest for EdgeStore {
    fn log(level: log::Level, message: String) {
        let level = match level {
            log::Level::Debug => "debug",
            log::Level::Info => "info",
            log::Level::Warn => "warn",
            log::Level::Error => "error",
        };
        eprintln!("level={level} msg=\"{}\"", message.replace('"', "'"));
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(EdgeStore with_types_in bindings);

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(rows: Result<Vec<Vec<Value>>, StoreError>) -> Result<Option<String>, String> {
        let main = Primary::parse("http://127.0.0.1:8080", Some("t0k".into())).unwrap();
        let stream = Stream { primary: Some(Ok(main)), prefetched: vec![Some(rows)], ..Stream::default() };
        stream.placed(0).map(|p| p.map(|p| p.authority().to_string()))
    }

    #[test]
    fn a_placement_moves_the_stream_to_its_database_or_fails_it() {
        let row = |name: &str, url: Value| Ok(vec![vec![Value::Text(name.into()), url]]);
        assert_eq!(placed(row("main", Value::Null)), Ok(None));
        // No such business: main, whose own checks refuse it (as a node does).
        assert_eq!(placed(Ok(vec![])), Ok(None));
        assert_eq!(placed(row("second", Value::Text("http://127.0.0.1:8081".into()))), Ok(Some("127.0.0.1:8081".into())));
        // Never main in its stead.
        assert!(placed(row("gone", Value::Null)).unwrap_err().contains("not registered"));
        assert!(placed(row("second", Value::Text("local".into()))).unwrap_err().contains("database second"));
        assert!(placed(Err(StoreError { kind: "busy".into(), message: "down".into() })).unwrap_err().contains("could not be read"));
    }
}
