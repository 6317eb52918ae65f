//! The instance's stream at the primary (an instance serves one request):
//! the statements deferred to go with the next one, one round trip per
//! send (the stream closed in it when no transaction stays open), the move
//! to the database the request's business lives in, prefetched queries,
//! and the request's deadline on every wait.

use super::*;
use switchboard_sql::FromRow;

/// The name of the main database (where keys and placement live).
const MAIN: &str = "main";

/// A statement waiting to go with the next one: a control statement, a
/// bulk write's first rows, or a prefetched query (with its handle).
pub(crate) struct Deferred {
    pub(crate) stmt: Json,
    pub(crate) prefetch: Option<u32>,
    /// A control statement that waits for the next one (`BEGIN`,
    /// `SAVEPOINT`, ...): no caller waits for its result.
    pub(crate) control: bool,
}

impl Deferred {
    pub(crate) fn statement(stmt: Json) -> Deferred {
        Deferred { stmt, prefetch: None, control: false }
    }
}

/// The row of a business's placement in main: its database's name and
/// URL (NULL when `databases` has no row of that name).
pub(crate) const PLACEMENT: &str = "SELECT b.database, d.url FROM businesses b LEFT JOIN databases d ON d.name = b.database WHERE b.id = ?";

/// The instance's stream at the primary (an instance serves one request).
#[derive(Default)]
pub(crate) struct Stream {
    pub(crate) baton: Option<String>,
    /// Statements waiting to go with the next one.
    pub(crate) deferred: Vec<Deferred>,
    /// Between BEGIN and COMMIT/ROLLBACK: the stream stays open.
    pub(crate) in_transaction: bool,
    pub(crate) round_trips: u32,
    /// Main: the primary of `SWITCHBOARD_PRIMARY_URL`.
    pub(crate) primary: Option<Result<Primary, String>>,
    /// The database of the request's business, once its placement named
    /// one other than main: the stream's statements go there.
    pub(crate) elsewhere: Option<Primary>,
    /// The handle of the business's placement, queued and not back yet.
    pub(crate) placing: Option<u32>,
    /// Why the business's statements cannot run (its placement could not
    /// be read, or names a database with no URL): every statement fails
    /// until the request's transaction ends; never main in its stead.
    pub(crate) misplaced: Option<String>,
    /// The stream (a read transaction) left open at main when the stream
    /// moved: rolled back with the request's `COMMIT`/`ROLLBACK`.
    pub(crate) left_at_main: Option<String>,
    /// What each prefetched query came to, by handle (`None`: not sent yet).
    pub(crate) prefetched: Vec<Option<Result<Vec<Vec<Value>>, StoreError>>>,
    /// The monotonic instant no wait on the primary goes past.
    pub(crate) deadline: Option<u64>,
}

thread_local! {
    static STREAM: RefCell<Stream> = RefCell::new(Stream::default());
}

pub(crate) fn unavailable(detail: &str) -> StoreError {
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
    pub(crate) fn run(&mut self, statement: Json, ends_transaction: bool) -> Result<hrana::StmtResult, StoreError> {
        self.run_all(statement, ends_transaction).map(|mut all| all.pop().unwrap_or_default())
    }

    /// Like [`Stream::run`], with the result of every ordinary statement
    /// sent (prefetched queries keep theirs for `prefetched`).
    pub(crate) fn run_all(&mut self, statement: Json, ends_transaction: bool) -> Result<Vec<hrana::StmtResult>, StoreError> {
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
    pub(crate) fn send(&mut self, ends_transaction: bool) -> Result<Vec<hrana::StmtResult>, StoreError> {
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
        // (the database's name, its url: none when it is not registered)
        let Ok((name, url)) = <(String, Option<String>)>::from_row(row.clone()) else { return Err("the business's placement is not a database name".into()) };
        if name == MAIN {
            return Ok(None);
        }
        let Some(url) = url else { return Err(format!("the business's database {name} is not registered")) };
        match &self.primary {
            Some(Ok(main)) => main.database(&name, &url).map(Some),
            _ => Err("the primary is not configured".into()),
        }
    }

    /// Ends what the stream left at main when it moved (a read
    /// transaction: rolled back, one round trip), and makes the stream
    /// main's again for what follows (the rate-limit table, a next
    /// placement).
    pub(crate) fn leave(&mut self) {
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

    pub(crate) fn reset(&mut self) {
        self.baton = None;
        self.deferred.clear();
        self.in_transaction = false;
    }
}

pub(crate) fn with_stream<T>(f: impl FnOnce(&mut Stream) -> T) -> T {
    STREAM.with(|s| f(&mut s.borrow_mut()))
}

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
