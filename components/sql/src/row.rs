//! Typed rows and parameters: a statement's row read as a tuple of Rust
//! types (or a struct built from one, [`FromRow`]), each cell checked
//! against the type it is read as, and parameters bound from Rust values
//! ([`params!`](crate::params)).
//!
//! ```
//! use switchboard_sql::{params, FromRow, Value};
//! let row = vec![Value::Text("c1".into()), Value::Null, Value::Integer(3)];
//! let (id, name, turns): (String, Option<String>, i64) = FromRow::from_row(row).unwrap();
//! assert_eq!((id.as_str(), name, turns), ("c1", None, 3));
//! assert_eq!(params!["c1", 3i64, None::<String>], vec![Value::Text("c1".into()), Value::Integer(3), Value::Null]);
//! ```
//!
//! Decoding moves each cell out of the row: no text is copied.

use crate::{Row, Value};

/// A cell that is not of the type it is read as, or a row of another width.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// The column (from 0).
    pub column: usize,
    /// What the reader asked for (`text`, `integer`, …; `N columns` for a
    /// row's width).
    pub wanted: &'static str,
    /// What the cell held (`null`, `text`, …; the row's width).
    pub found: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {}: wanted {}, found {}", self.column, self.wanted, self.found)
    }
}

impl std::error::Error for Mismatch {}

impl Value {
    /// The cell's type as SQLite names it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Integer(_) => "integer",
            Value::Real(_) => "real",
            Value::Text(_) => "text",
            Value::Blob(_) => "blob",
        }
    }
}

/// A Rust type one cell reads as.
pub trait FromValue: Sized {
    /// What the type reads (for [`Mismatch::wanted`]).
    const WANTED: &'static str;
    /// The cell as this type; `None` when it is of another type.
    fn from_value(v: Value) -> Option<Self>;

    /// The cell of column `column`, or the mismatch.
    fn decode(v: Value, column: usize) -> Result<Self, Mismatch> {
        let found = v.type_name();
        Self::from_value(v).ok_or_else(|| Mismatch { column, wanted: Self::WANTED, found: found.to_string() })
    }
}

impl FromValue for Value {
    const WANTED: &'static str = "any value";
    fn from_value(v: Value) -> Option<Self> {
        Some(v)
    }
}

/// Text; an integer reads as its digits (as [`Value::text`] does), so a
/// column whose affinity stored an id as a number still reads.
impl FromValue for String {
    const WANTED: &'static str = "text";
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s),
            Value::Integer(n) => Some(n.to_string()),
            _ => None,
        }
    }
}

impl FromValue for i64 {
    const WANTED: &'static str = "integer";
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Integer(n) => Some(n),
            _ => None,
        }
    }
}

/// An integer, true when it is not 0 (SQLite's booleans).
impl FromValue for bool {
    const WANTED: &'static str = "integer (boolean)";
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Integer(n) => Some(n != 0),
            _ => None,
        }
    }
}

/// A real, or an integer as a real.
impl FromValue for f64 {
    const WANTED: &'static str = "real";
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Real(f) => Some(f),
            Value::Integer(n) => Some(n as f64),
            _ => None,
        }
    }
}

impl FromValue for Vec<u8> {
    const WANTED: &'static str = "blob";
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Blob(b) => Some(b),
            _ => None,
        }
    }
}

/// NULL as `None`; anything else as `T`.
impl<T: FromValue> FromValue for Option<T> {
    const WANTED: &'static str = T::WANTED;
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// A whole row read as a Rust type: a tuple of [`FromValue`] types, one
/// per column in order, or a struct whose impl reads such a tuple.
pub trait FromRow: Sized {
    fn from_row(row: Row) -> Result<Self, Mismatch>;
}

/// A row of one column: just its value.
impl<T: FromValue> FromRow for T {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let [v]: [Value; 1] = row.try_into().map_err(|r: Row| width(1, r.len()))?;
        T::decode(v, 0)
    }
}

fn width(wanted: usize, found: usize) -> Mismatch {
    const WIDTHS: [&str; 13] =
        ["0 columns", "1 column", "2 columns", "3 columns", "4 columns", "5 columns", "6 columns", "7 columns", "8 columns", "9 columns", "10 columns", "11 columns", "12 columns"];
    Mismatch { column: found.min(wanted), wanted: WIDTHS.get(wanted).copied().unwrap_or("more columns"), found: WIDTHS.get(found).map_or_else(|| format!("{found} columns"), |w| w.to_string()) }
}

macro_rules! tuple_from_row {
    ($n:expr; $($t:ident $i:tt),+) => {
        impl<$($t: FromValue),+> FromRow for ($($t,)+) {
            #[allow(non_snake_case)]
            fn from_row(row: Row) -> Result<Self, Mismatch> {
                let cells: [Value; $n] = row.try_into().map_err(|r: Row| width($n, r.len()))?;
                let [$($t),+] = cells;
                Ok(($(<$t as FromValue>::decode($t, $i)?,)+))
            }
        }
    };
}

tuple_from_row!(2; A 0, B 1);
tuple_from_row!(3; A 0, B 1, C 2);
tuple_from_row!(4; A 0, B 1, C 2, D 3);
tuple_from_row!(5; A 0, B 1, C 2, D 3, E 4);
tuple_from_row!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple_from_row!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_from_row!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_from_row!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_from_row!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_from_row!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_from_row!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// A row read column by column in the statement's order, each cell checked
/// against the type it is read as: how a row struct wider than a tuple
/// reads itself.
///
/// ```
/// use switchboard_sql::{Columns, FromRow, Mismatch, Row, Value};
/// struct Contact { id: String, name: Option<String>, blocked: bool }
/// impl FromRow for Contact {
///     fn from_row(row: Row) -> Result<Self, Mismatch> {
///         let mut c = Columns::new(row);
///         Ok(Contact { id: c.read()?, name: c.read()?, blocked: c.read()? })
///     }
/// }
/// let c = Contact::from_row(vec![Value::Text("c1".into()), Value::Null, Value::Integer(1)]).unwrap();
/// assert_eq!((c.id.as_str(), c.name, c.blocked), ("c1", None, true));
/// ```
pub struct Columns {
    cells: std::vec::IntoIter<Value>,
    at: usize,
}

impl Columns {
    pub fn new(row: Row) -> Self {
        Columns { cells: row.into_iter(), at: 0 }
    }

    /// The next column as `T`; past the row's end it is a mismatch naming
    /// the width the reader wanted.
    pub fn read<T: FromValue>(&mut self) -> Result<T, Mismatch> {
        let column = self.at;
        self.at += 1;
        match self.cells.next() {
            Some(v) => T::decode(v, column),
            None => Err(Mismatch { column, wanted: T::WANTED, found: format!("a row of {column} columns") }),
        }
    }

    /// Skips the next column (one the statement selects for its order or
    /// another reader).
    pub fn skip(&mut self) {
        self.at += 1;
        self.cells.next();
    }
}

/// A row struct whose fields are a statement's columns in order: the
/// struct and its [`FromRow`] (each field read as its type, in the order
/// written) from one list of fields.
///
/// ```
/// switchboard_sql::row_struct! {
///     /// A contact as the list reads it.
///     pub struct Contact { pub id: String, pub name: Option<String>, pub blocked: bool }
/// }
/// use switchboard_sql::{FromRow, Value};
/// let c = Contact::from_row(vec![Value::Text("c1".into()), Value::Null, Value::Integer(0)]).unwrap();
/// assert_eq!((c.id.as_str(), c.name, c.blocked), ("c1", None, false));
/// ```
#[macro_export]
macro_rules! row_struct {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$fmeta:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        $vis struct $name {
            $($(#[$fmeta])* $fvis $field: $ty,)*
        }

        impl $crate::FromRow for $name {
            fn from_row(row: $crate::Row) -> ::core::result::Result<Self, $crate::Mismatch> {
                let mut columns = $crate::Columns::new(row);
                Ok($name { $($field: columns.read()?,)* })
            }
        }
    };
}

/// Every row of a query read as `T`.
pub fn decode_rows<T: FromRow>(rows: Vec<Row>) -> Result<Vec<T>, Mismatch> {
    rows.into_iter().map(T::from_row).collect()
}

/// A statement's parameters from Rust values, each through
/// `From<…> for Value` (text, integers, reals, booleans, blobs, options as
/// NULL): `params![business, id, now_ms]`.
#[macro_export]
macro_rules! params {
    () => { ::std::vec::Vec::<$crate::Value>::new() };
    ($($v:expr),+ $(,)?) => { ::std::vec![$($crate::Value::from($v)),+] };
}

impl From<i32> for Value {
    fn from(n: i32) -> Self {
        Value::Integer(n.into())
    }
}
impl From<u32> for Value {
    fn from(n: u32) -> Self {
        Value::Integer(n.into())
    }
}
impl From<u16> for Value {
    fn from(n: u16) -> Self {
        Value::Integer(n.into())
    }
}
impl From<u8> for Value {
    fn from(n: u8) -> Self {
        Value::Integer(n.into())
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Integer(b.into())
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Real(f)
    }
}
impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Self {
        Value::Blob(b)
    }
}
impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Self {
        Value::Blob(b.to_vec())
    }
}
impl From<&Value> for Value {
    fn from(v: &Value) -> Self {
        v.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_as_tuples_and_single_values() {
        let row = vec![Value::Text("a".into()), Value::Integer(7), Value::Null, Value::Real(1.5), Value::Blob(vec![1]), Value::Integer(0)];
        let t: (String, i64, Option<String>, f64, Vec<u8>, bool) = FromRow::from_row(row).unwrap();
        assert_eq!(t, ("a".into(), 7, None, 1.5, vec![1], false));
        assert_eq!(String::from_row(vec![Value::Integer(42)]).unwrap(), "42");
        assert_eq!(<Option<i64>>::from_row(vec![Value::Integer(4)]).unwrap(), Some(4));
        assert_eq!(f64::from_row(vec![Value::Integer(2)]).unwrap(), 2.0);
        assert_eq!(decode_rows::<(String, i64)>(vec![vec!["x".into(), 1i64.into()], vec!["y".into(), 2i64.into()]]).unwrap(), vec![("x".into(), 1), ("y".into(), 2)]);
    }

    #[test]
    fn a_cell_of_another_type_or_a_row_of_another_width_is_a_mismatch() {
        let e = <(String, i64)>::from_row(vec![Value::Text("a".into()), Value::Text("7".into())]).unwrap_err();
        assert_eq!(e, Mismatch { column: 1, wanted: "integer", found: "text".into() });
        assert_eq!(e.to_string(), "column 1: wanted integer, found text");
        assert_eq!(String::from_row(vec![Value::Null]).unwrap_err().found, "null");
        assert_eq!(i64::from_row(vec![Value::Real(1.0)]).unwrap_err().wanted, "integer");
        assert_eq!(<Option<i64>>::from_row(vec![Value::Text("x".into())]).unwrap_err().column, 0);
        let w = <(String, String)>::from_row(vec![Value::Null]).unwrap_err();
        assert_eq!((w.wanted, w.found.as_str()), ("2 columns", "1 column"));
        assert_eq!(String::from_row(vec![]).unwrap_err().wanted, "1 column");
    }

    #[test]
    fn columns_read_in_order_and_name_the_column_that_does_not_read() {
        let mut c = Columns::new(vec![Value::Text("a".into()), Value::Integer(2), Value::Null]);
        assert_eq!(c.read::<String>().unwrap(), "a");
        c.skip();
        assert_eq!(c.read::<Option<i64>>().unwrap(), None);
        let e = c.read::<String>().unwrap_err();
        assert_eq!((e.column, e.wanted, e.found.as_str()), (3, "text", "a row of 3 columns"));
        let e = Columns::new(vec![Value::Null]).read::<i64>().unwrap_err();
        assert_eq!((e.column, e.found.as_str()), (0, "null"));
    }

    #[test]
    fn params_bind_rust_values() {
        let name: Option<&str> = None;
        let id = String::from("c1");
        assert_eq!(
            params![&id, "x", 3i64, 4u32, true, 0.5, name, Some(2i64), vec![9u8]],
            vec![Value::Text("c1".into()), Value::Text("x".into()), Value::Integer(3), Value::Integer(4), Value::Integer(1), Value::Real(0.5), Value::Null, Value::Integer(2), Value::Blob(vec![9])]
        );
        assert!(params![].is_empty());
    }
}
