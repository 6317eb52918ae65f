//! SQL access through the host `store` interface, with failures already
//! mapped for the handler, plus parameter and row helpers.
//!
//! ```ignore
//! let rows = db::query("SELECT id, name FROM t WHERE business_id = ?1", &[biz.into()])?;
//! for r in &rows { let id = r.text(0); let name = r.opt_text(1); }
//! ```

use crate::{fail, log, store, Failure, StoreError, Value};

pub type Row = Vec<Value>;

/// Maps a store error to a failure. `busy` is a retryable 503; anything else
/// is a 500 whose message stays generic (details go to the host log).
pub fn store_failure(e: StoreError) -> Failure {
    log::log(log::Level::Error, &format!("store error ({}): {}", e.kind, e.message));
    match e.kind.as_str() {
        "busy" => fail::busy("store_busy", "the database is busy; retry the request"),
        _ => fail::internal("internal_error", "an internal database error occurred"),
    }
}

pub fn query(sql: &str, params: &[Value]) -> Result<Vec<Row>, Failure> {
    store::query(sql, params).map_err(store_failure)
}

pub fn execute(sql: &str, params: &[Value]) -> Result<u64, Failure> {
    store::execute(sql, params).map_err(store_failure)
}

pub fn execute_many(sql: &str, rows: &[Vec<Value>]) -> Result<u64, Failure> {
    if rows.is_empty() {
        return Ok(0);
    }
    store::execute_many(sql, rows).map_err(store_failure)
}

/// Runs a statement; a `constraint` error (UNIQUE/CHECK) becomes the failure
/// made by `on_constraint`, e.g. a domain `409`.
pub fn execute_or(sql: &str, params: &[Value], on_constraint: impl FnOnce() -> Failure) -> Result<u64, Failure> {
    store::execute(sql, params).map_err(|e| if e.kind == "constraint" { on_constraint() } else { store_failure(e) })
}

/// First row of a query, if any.
pub fn query_one(sql: &str, params: &[Value]) -> Result<Option<Row>, Failure> {
    Ok(query(sql, params)?.into_iter().next())
}

/// `?{start},?{start+1},...` — `n` numbered placeholders for an `IN (...)` list.
pub fn placeholders(start: usize, n: usize) -> String {
    (start..start + n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(",")
}

/// `%text%` as a `LIKE … ESCAPE '\\'` pattern: a substring match in which
/// `%`, `_` and the escape itself match only themselves.
pub fn contains_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for ch in text.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('%');
    out
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Text(s.to_string())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}
impl From<&String> for Value {
    fn from(s: &String) -> Self {
        Value::Text(s.clone())
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Integer(n)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Integer(b as i64)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}

/// The area's `store` import (inside the request's or the job step's
/// transaction), its clock and its ids as a [`switchboard_sql::Sql`]: what
/// the binding-free rule crates an area shares with the admin commands run
/// on (voice accounts and credits, summary prices, channel connections).
pub struct Store;

impl switchboard_sql::Sql for Store {
    type Error = Failure;
    fn query(&self, sql: &str, params: &[switchboard_sql::Value]) -> Result<Vec<switchboard_sql::Row>, Failure> {
        Ok(query(sql, &to_store(params))?.into_iter().map(|r| r.into_iter().map(switchboard_sql::Value::from).collect()).collect())
    }
    fn execute(&self, sql: &str, params: &[switchboard_sql::Value]) -> Result<u64, Failure> {
        execute(sql, &to_store(params))
    }
    fn now(&self) -> String {
        crate::now()
    }
    fn new_id(&self) -> String {
        crate::new_id()
    }
}

/// The one conversion between the rule crates' value
/// ([`switchboard_sql::Value`]) and the `store` import's (WIT) value, each
/// way; the edge's shared statements cross the same boundary with it.
impl From<switchboard_sql::Value> for Value {
    fn from(v: switchboard_sql::Value) -> Self {
        use switchboard_sql::Value as V;
        match v {
            V::Null => Value::Null,
            V::Integer(n) => Value::Integer(n),
            V::Real(f) => Value::Real(f),
            V::Text(s) => Value::Text(s),
            V::Blob(b) => Value::Blob(b),
        }
    }
}

impl From<Value> for switchboard_sql::Value {
    fn from(v: Value) -> Self {
        use switchboard_sql::Value as V;
        match v {
            Value::Null => V::Null,
            Value::Integer(n) => V::Integer(n),
            Value::Real(f) => V::Real(f),
            Value::Text(s) => V::Text(s),
            Value::Blob(b) => V::Blob(b),
        }
    }
}

/// A row that did not read as the statement's Rust types
/// ([`switchboard_sql::FromRow`]): a programming error, answered as any
/// internal failure (the details go to the host log).
impl From<switchboard_sql::Mismatch> for Failure {
    fn from(m: switchboard_sql::Mismatch) -> Self {
        log::log(log::Level::Error, &format!("a row did not read as its statement's types: {m}"));
        fail::internal("internal_error", "an internal database error occurred")
    }
}

fn to_store(params: &[switchboard_sql::Value]) -> Vec<Value> {
    params.iter().cloned().map(Value::from).collect()
}

/// A row of the store as a rule crate reads it.
pub fn sql_row(r: &[Value]) -> switchboard_sql::Row {
    r.iter().cloned().map(switchboard_sql::Value::from).collect()
}

/// Typed reads of a row's columns. Reading a column with an unexpected type
/// is a programming error and traps (the host rolls back and answers 500).
pub trait RowExt {
    fn opt_text(&self, i: usize) -> Option<String>;
    fn opt_int(&self, i: usize) -> Option<i64>;
    fn text(&self, i: usize) -> String {
        self.opt_text(i).unwrap_or_else(|| panic!("column {i} is NULL"))
    }
    fn int(&self, i: usize) -> i64 {
        self.opt_int(i).unwrap_or_else(|| panic!("column {i} is NULL"))
    }
    fn boolean(&self, i: usize) -> bool {
        self.int(i) != 0
    }
}

impl RowExt for [Value] {
    fn opt_text(&self, i: usize) -> Option<String> {
        match &self[i] {
            Value::Null => None,
            Value::Text(s) => Some(s.clone()),
            Value::Integer(n) => Some(n.to_string()),
            Value::Real(f) => Some(f.to_string()),
            Value::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        }
    }
    fn opt_int(&self, i: usize) -> Option<i64> {
        match &self[i] {
            Value::Null => None,
            Value::Integer(n) => Some(*n),
            Value::Real(f) => Some(*f as i64),
            Value::Text(s) => Some(s.parse().unwrap_or_else(|_| panic!("column {i} is not an integer"))),
            Value::Blob(_) => panic!("column {i} is a blob"),
        }
    }
}

impl RowExt for Vec<Value> {
    fn opt_text(&self, i: usize) -> Option<String> {
        self.as_slice().opt_text(i)
    }
    fn opt_int(&self, i: usize) -> Option<i64> {
        self.as_slice().opt_int(i)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn like_wildcards_are_literal() {
        assert_eq!(super::contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
        assert_eq!(super::contains_pattern("Ada"), "%Ada%");
    }
}
