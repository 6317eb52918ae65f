//! SQL access through the host `store` interface, with failures already
//! mapped for the handler: statements bind [`Value`]s
//! ([`params!`](crate::params)) and read rows as Rust types
//! ([`query_as`], [`FromRow`](crate::FromRow): a tuple of the columns'
//! types, or a struct that reads one).
//!
//! ```ignore
//! let rows: Vec<(String, Option<String>)> = db::query_as("SELECT id, name FROM t WHERE business_id = ?1", &params![biz])?;
//! ```
//!
//! This module is the one place the area's value ([`switchboard_sql::Value`])
//! and the `store` import's (the WIT `value`) meet.

/// The `store` import's (WIT) value.
pub use crate::bindings::switchboard::platform::types::Value as StoreValue;
use crate::{fail, log, store, Failure, StoreError, Value};
use switchboard_sql::{decode_rows, FromRow};

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
    let rows = store::query(sql, &to_store(params)).map_err(store_failure)?;
    Ok(rows.into_iter().map(|r| r.into_iter().map(Value::from).collect()).collect())
}

/// Every row of a query read as `T` (a tuple of the columns' types, or a
/// row struct); a cell of another type is an internal failure naming the
/// column in the host log.
pub fn query_as<T: FromRow>(sql: &str, params: &[Value]) -> Result<Vec<T>, Failure> {
    Ok(decode_rows(query(sql, params)?)?)
}

/// The first row of a query read as `T`, if any.
pub fn query_one_as<T: FromRow>(sql: &str, params: &[Value]) -> Result<Option<T>, Failure> {
    match query(sql, params)?.into_iter().next() {
        Some(row) => Ok(Some(T::from_row(row)?)),
        None => Ok(None),
    }
}

pub fn execute(sql: &str, params: &[Value]) -> Result<u64, Failure> {
    store::execute(sql, &to_store(params)).map_err(store_failure)
}

pub fn execute_many(sql: &str, rows: &[Vec<Value>]) -> Result<u64, Failure> {
    if rows.is_empty() {
        return Ok(0);
    }
    let rows: Vec<Vec<StoreValue>> = rows.iter().map(|r| to_store(r)).collect();
    store::execute_many(sql, &rows).map_err(store_failure)
}

/// Inserts rows into `target` (`table (columns)`, the shared columns
/// first) with multi-row `VALUES` of `per_statement` rows, and what is
/// left below that in powers of two (few statement shapes): the values
/// every row shares (`fixed`) are bound once as `?1…?k`, then each row's
/// `width` values (`cells`, row after row) as the parameters after them. Nothing is written into the statement's text,
/// and no row passes through JSON. One statement per many rows costs
/// less than `execute_many`'s statement per row (a data source's rows, a
/// contacts import).
pub fn insert_values(target: &str, fixed: &[StoreValue], width: usize, per_statement: usize, cells: Vec<StoreValue>) -> Result<(), Failure> {
    let mut rows = cells.len() / width;
    let mut cells = cells.into_iter();
    while rows > 0 {
        let n = if rows >= per_statement { per_statement } else { 1 << rows.ilog2() };
        let mut params = Vec::with_capacity(fixed.len() + n * width);
        params.extend_from_slice(fixed);
        params.extend(cells.by_ref().take(n * width));
        store::execute(&values_sql(target, fixed.len(), width, n), &params).map_err(store_failure)?;
        rows -= n;
    }
    Ok(())
}

/// `INSERT INTO {target} VALUES (?1,…,?k,?k+1,…),(?1,…,?k,…),…` for `rows`
/// rows of `fixed` shared and `width` own parameters.
fn values_sql(target: &str, fixed: usize, width: usize, rows: usize) -> String {
    use std::fmt::Write;
    let mut sql = String::with_capacity(target.len() + 20 + rows * (fixed + width) * 6);
    let _ = write!(sql, "INSERT INTO {target} VALUES ");
    let mut next = fixed;
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ",(" });
        for i in 1..=fixed {
            let _ = write!(sql, "?{i},");
        }
        for j in 0..width {
            next += 1;
            let _ = write!(sql, "{}?{next}", if j == 0 { "" } else { "," });
        }
        sql.push(')');
    }
    sql
}

/// Runs a statement; a `constraint` error (UNIQUE/CHECK) becomes the failure
/// made by `on_constraint`, e.g. a domain `409`.
pub fn execute_or(sql: &str, params: &[Value], on_constraint: impl FnOnce() -> Failure) -> Result<u64, Failure> {
    store::execute(sql, &to_store(params)).map_err(|e| if e.kind == "constraint" { on_constraint() } else { store_failure(e) })
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

/// The area's `store` import (inside the request's or the job step's
/// transaction), its clock and its ids as a [`switchboard_sql::Sql`]: what
/// the binding-free rule crates an area shares with the admin commands run
/// on (voice accounts and credits, summary prices, channel connections).
pub struct Store;

impl switchboard_sql::Statements for Store {
    type Error = Failure;
    fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, Failure> {
        query(sql, params)
    }
    fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, Failure> {
        execute(sql, params)
    }
}

impl switchboard_sql::Sql for Store {
    fn now(&self) -> String {
        crate::now()
    }
    fn new_id(&self) -> String {
        crate::new_id()
    }
}

/// The one conversion between the area's value and the `store` import's
/// (WIT) value, each way.
impl From<StoreValue> for Value {
    fn from(v: StoreValue) -> Self {
        match v {
            StoreValue::Null => Value::Null,
            StoreValue::Integer(n) => Value::Integer(n),
            StoreValue::Real(f) => Value::Real(f),
            StoreValue::Text(s) => Value::Text(s),
            StoreValue::Blob(b) => Value::Blob(b),
        }
    }
}

/// Parameters as the `store` import (or the edge's prefetch) takes them.
pub fn to_store(params: &[Value]) -> Vec<StoreValue> {
    params
        .iter()
        .map(|v| match v {
            Value::Null => StoreValue::Null,
            Value::Integer(n) => StoreValue::Integer(*n),
            Value::Real(f) => StoreValue::Real(*f),
            Value::Text(s) => StoreValue::Text(s.clone()),
            Value::Blob(b) => StoreValue::Blob(b.clone()),
        })
        .collect()
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

#[cfg(test)]
mod tests {
    #[test]
    fn values_bind_the_shared_parameters_once_and_each_row_after_them() {
        assert_eq!(super::values_sql("t (a, b, c)", 1, 2, 1), "INSERT INTO t (a, b, c) VALUES (?1,?2,?3)");
        assert_eq!(super::values_sql("t (a, b, c, d, e)", 2, 3, 3), "INSERT INTO t (a, b, c, d, e) VALUES (?1,?2,?3,?4,?5),(?1,?2,?6,?7,?8),(?1,?2,?9,?10,?11)");
    }

    #[test]
    fn like_wildcards_are_literal() {
        assert_eq!(super::contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
        assert_eq!(super::contains_pattern("Ada"), "%Ada%");
    }
}
