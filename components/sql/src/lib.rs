//! The storage layer's shape: one SQL value, one statement trait, typed
//! rows and parameters, for every statement written once for several
//! callers. A table an area owns but the operator also sets (voice accounts
//! and credits, summary prices, channel connections) has its statements in
//! one binding-free crate of that area, written against [`Sql`]: the area
//! runs it over its `store` import (`switchboard_guest::db::Store`), the
//! admin commands over a storage connection (`crates/admin`), each inside
//! its own transaction. The request path's own statements
//! (`switchboard_gateway::storage`: keys, idempotency, enqueued jobs) run on
//! [`Statements`] over libsql at a node and over Hrana at the edge.
//!
//! Never: bindings, a database driver, I/O of its own. It is only the shape
//! every side fills in.
//!
//! Entry points: [`Statements`] (the one statement trait: the request
//! path's own statements run on it too) and [`Sql`] (a rule's transaction:
//! statements plus the clock and ids of its rows); rows read as Rust types
//! and parameters bound from them: [`FromRow`], [`params!`].

mod row;
pub use row::{decode_rows, Columns, FromRow, FromValue, Mismatch};

/// One SQL value, bound or read.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    /// Text, or an integer's digits; anything else is empty.
    pub fn text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Integer(i) => i.to_string(),
            _ => String::new(),
        }
    }
}

pub type Row = Vec<Value>;

/// The one way a statement written once for several callers runs: a
/// connection, a stream or the `store` import, inside the caller's
/// transaction. The host runs these over libsql (`crates/storage`), the
/// areas over their `store` import (`switchboard_guest::db::Store`), the
/// edge over the request's Hrana stream; each converts [`Value`] to its own
/// only there.
///
/// Object safe: the typed reads ([`query_as`](Statements::query_as),
/// [`query_one_as`](Statements::query_one_as)) are for sized callers, and a
/// reference to any implementation is one too, so a generic statement
/// (`fn find<S: Statements>(sql: &S, ..)`) runs on `&conn` and on a
/// `&dyn Statements<Error = E>` alike.
pub trait Statements {
    /// A store failure, as the caller reports it (the guest's failure
    /// envelope, the host's error, the request path's text).
    type Error;
    fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, Self::Error>;
    fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, Self::Error>;

    /// The first row of a query, if any.
    fn query_one(&self, sql: &str, params: &[Value]) -> Result<Option<Row>, Self::Error> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// Every row of a query read as `T` ([`FromRow`]: a tuple of the
    /// columns' types, or a row struct); a cell of another type is an error.
    fn query_as<T: FromRow>(&self, sql: &str, params: &[Value]) -> Result<Vec<T>, Self::Error>
    where
        Self: Sized,
        Self::Error: From<Mismatch>,
    {
        Ok(decode_rows(self.query(sql, params)?)?)
    }

    /// The first row of a query read as `T`, if any.
    fn query_one_as<T: FromRow>(&self, sql: &str, params: &[Value]) -> Result<Option<T>, Self::Error>
    where
        Self: Sized,
        Self::Error: From<Mismatch>,
    {
        match self.query(sql, params)?.into_iter().next() {
            Some(row) => Ok(Some(T::from_row(row)?)),
            None => Ok(None),
        }
    }
}

impl<S: Statements + ?Sized> Statements for &S {
    type Error = S::Error;
    fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, S::Error> {
        (**self).query(sql, params)
    }
    fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, S::Error> {
        (**self).execute(sql, params)
    }
}

/// A rule's transaction: its [`Statements`], and the clock and ids the rows
/// it writes take (the guest's from its `clock` and `ids` imports, so a
/// replayed step writes the same; the host's from its own clock and UUID
/// v7s). What the binding-free rule crates are written against.
pub trait Sql: Statements {
    /// Now, as RFC 3339 UTC with milliseconds.
    fn now(&self) -> String;
    /// A new UUID v7 (id order is creation order).
    fn new_id(&self) -> String;
}

/// A mismatch as its text, for a caller whose store failures are text (the
/// request path's own statements, `switchboard_gateway::storage`).
impl From<Mismatch> for String {
    fn from(m: Mismatch) -> Self {
        m.to_string()
    }
}

/// A value a rule does not take: the setting's name (the caller names it its
/// own way, e.g. the admin command's flag) and why, e.g. `lines`, `must be 0
/// to 1000`.
#[derive(Debug, PartialEq)]
pub struct Refused {
    pub field: &'static str,
    pub why: String,
}

impl Refused {
    pub fn new(field: &'static str, why: impl Into<String>) -> Self {
        Refused { field, why: why.into() }
    }
}

/// A write the rule refused for the stored state, or a store failure.
#[derive(Debug)]
pub enum Refusal<E> {
    Refused(Refused),
    Store(E),
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
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every query with the same rows.
    struct Fixed(Vec<Row>);

    impl Statements for Fixed {
        type Error = String;
        fn query(&self, _: &str, _: &[Value]) -> Result<Vec<Row>, String> {
            Ok(self.0.clone())
        }
        fn execute(&self, _: &str, _: &[Value]) -> Result<u64, String> {
            Ok(0)
        }
    }

    /// A statement written once, as the gateway's are.
    fn count<S: Statements>(sql: &S) -> Result<Option<i64>, S::Error>
    where
        S::Error: From<Mismatch>,
    {
        sql.query_one_as("SELECT COUNT(*) FROM t", &[])
    }

    #[test]
    fn a_statement_runs_on_an_implementation_a_reference_or_a_trait_object() {
        let fixed = Fixed(vec![vec![Value::Integer(3)]]);
        assert_eq!(count(&fixed), Ok(Some(3)));
        assert_eq!(count(&&fixed), Ok(Some(3)));
        let object: &dyn Statements<Error = String> = &fixed;
        assert_eq!(count(&object), Ok(Some(3)));
        assert_eq!(object.query_one("SELECT 1", &[]), Ok(Some(vec![Value::Integer(3)])));
        assert_eq!(count(&Fixed(vec![])), Ok(None));
        // A cell of another type is the caller's error, as text here.
        assert_eq!(count(&Fixed(vec![vec![Value::Text("3".into())]])), Err("column 0: wanted integer, found text".to_string()));
    }
}
