//! Column type inference and cell interpretation.
//!
//! Every cell is classified into a [`Kind`]; a column's counts per kind
//! ([`ColumnStats`], accumulated across ingestion steps) decide its type.
//! Unambiguous columns get a type directly. Ambiguous ones are flagged for
//! review with the candidate types and a suggestion:
//!
//! | observed                                  | candidates        | suggested |
//! |-------------------------------------------|-------------------|-----------|
//! | slash dates (`03/04/2024`)                | date, text        | date      |
//! | numbers with leading zeros (`00123`)      | integer, text     | text      |
//! | digit strings of 9-15 digits (`4155550123`, `0412345678`) | phone, integer | phone |
//! | any other mix of kinds (`12`, `abc`)      | the kinds' types  | text      |
//!
//! Interpretation turns one original cell into a typed JSON value for a
//! column type; the original text is always kept beside it by the caller.
//!
//! Spreadsheet dates ([`SheetDate`]) are read as crate::sheet_dates says.

use crate::sheet_dates::{serial_date, serial_time};
pub use crate::sheet_dates::{SheetDate, SheetDateKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use switchboard_formats::time;

/// The field types of the API (`DataSourceFieldType`).
pub const TYPES: &[&str] = &["text", "number", "integer", "boolean", "date", "datetime", "phone", "email"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Empty,
    Text,
    Integer,
    LeadingZero,
    DigitString,
    Number,
    Boolean,
    IsoDate,
    SlashDate,
    DateTime,
    Phone,
    Email,
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn is_number(s: &str) -> bool {
    let t = s.strip_prefix('-').unwrap_or(s);
    if t.is_empty() || !t.bytes().next().is_some_and(|b| b.is_ascii_digit() || b == b'.') {
        return false;
    }
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let ok_mantissa = match mantissa.split_once('.') {
        Some((a, b)) => (a.is_empty() || all_digits(a)) && (b.is_empty() || all_digits(b)) && !(a.is_empty() && b.is_empty()),
        None => all_digits(mantissa),
    };
    let ok_exp = exp.is_none_or(|e| all_digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    ok_mantissa && ok_exp && t.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Digits of the given lengths naming a real date, as `YYYY-MM-DD`.
fn ymd(y: &str, m: &str, d: &str) -> Option<String> {
    if y.len() != 4 || !all_digits(y) || !(1..=2).contains(&m.len()) || !all_digits(m) || !(1..=2).contains(&d.len()) || !all_digits(d) {
        return None;
    }
    time::ymd(y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
}

/// `YYYY-MM-DD`.
pub fn iso_date(s: &str) -> Option<String> {
    let mut p = s.split('-');
    let (y, m, d) = (p.next()?, p.next()?, p.next()?);
    if p.next().is_some() || m.len() != 2 || d.len() != 2 {
        return None;
    }
    ymd(y, m, d)
}

/// `D/M/YYYY` read day-first, or month-first when only that reading is a
/// valid date; normalised to `YYYY-MM-DD`.
pub fn slash_date(s: &str) -> Option<String> {
    let mut p = s.split('/');
    let (a, b, y) = (p.next()?, p.next()?, p.next()?);
    if p.next().is_some() {
        return None;
    }
    ymd(y, b, a).or_else(|| ymd(y, a, b))
}

/// `YYYY-MM-DD[T ]HH:MM[:SS[.fff]][Z|±HH:MM]`.
pub fn is_datetime(s: &str) -> bool {
    if s.len() < 16 || !s.is_char_boundary(10) {
        return false;
    }
    let (date, rest) = s.split_at(10);
    if iso_date(date).is_none() || !matches!(rest.as_bytes()[0], b'T' | b' ') {
        return false;
    }
    let mut time = &rest[1..];
    if let Some(t) = time.strip_suffix('Z').or_else(|| time.strip_suffix('z')) {
        time = t;
    } else if time.len() > 6 && matches!(time.as_bytes()[time.len() - 6], b'+' | b'-') && time.as_bytes()[time.len() - 3] == b':' {
        time = &time[..time.len() - 6];
    }
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let parts: Vec<&str> = hms.split(':').collect();
    all_digits(frac) && (2..=3).contains(&parts.len()) && parts.iter().all(|p| p.len() == 2 && all_digits(p)) && parts[0] < "24" && parts[1] < "60" && parts.get(2).is_none_or(|s| *s < "61")
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else { return false };
    !local.is_empty() && !domain.contains('@') && domain.contains('.') && !domain.starts_with('.') && !domain.ends_with('.') && !s.contains(char::is_whitespace)
}

/// Separators people type inside phone numbers.
fn strip_phone(s: &str) -> String {
    s.chars().filter(|c| !(c.is_whitespace() || matches!(c, '-' | '.' | '(' | ')'))).collect()
}

/// A phone number written with a `+` or with separators, 8 to 15 digits.
fn phone_value(s: &str) -> Option<String> {
    let t = strip_phone(s);
    let digits = t.strip_prefix('+').unwrap_or(&t);
    (all_digits(digits) && (8..=15).contains(&digits.len())).then_some(t)
}

pub fn classify(cell: &str) -> Kind {
    let s = cell.trim();
    if s.is_empty() {
        return Kind::Empty;
    }
    if all_digits(s) {
        if (9..=15).contains(&s.len()) {
            return Kind::DigitString;
        }
        if s.len() > 1 && s.starts_with('0') {
            return Kind::LeadingZero;
        }
        return if s.parse::<i64>().is_ok() { Kind::Integer } else { Kind::Number };
    }
    if let Some(d) = s.strip_prefix('-') {
        if all_digits(d) && !(d.len() > 1 && d.starts_with('0')) && s.parse::<i64>().is_ok() {
            return Kind::Integer;
        }
    }
    if is_number(s) {
        return Kind::Number;
    }
    if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") {
        return Kind::Boolean;
    }
    if iso_date(s).is_some() {
        return Kind::IsoDate;
    }
    if slash_date(s).is_some() {
        return Kind::SlashDate;
    }
    if is_datetime(s) {
        return Kind::DateTime;
    }
    // With a `+`, or separators and at least 9 digits (so `2024-01-0` style
    // text and short codes stay text).
    let digits = s.bytes().filter(u8::is_ascii_digit).count();
    if (s.starts_with('+') || (digits >= 9 && s.contains(['(', ' ', '-', '.']))) && phone_value(s).is_some() {
        return Kind::Phone;
    }
    if is_email(s) {
        return Kind::Email;
    }
    Kind::Text
}

/// Counts per kind and a few distinct samples, accumulated across steps.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ColumnStats {
    #[serde(default)]
    pub empty: u64,
    #[serde(default)]
    pub text: u64,
    #[serde(default)]
    pub integer: u64,
    #[serde(default)]
    pub leading_zero: u64,
    #[serde(default)]
    pub digit_string: u64,
    #[serde(default)]
    pub number: u64,
    #[serde(default)]
    pub boolean: u64,
    #[serde(default)]
    pub iso_date: u64,
    #[serde(default)]
    pub slash_date: u64,
    #[serde(default)]
    pub datetime: u64,
    #[serde(default)]
    pub phone: u64,
    #[serde(default)]
    pub email: u64,
    #[serde(default)]
    pub samples: Vec<String>,
    /// Set for a spreadsheet column of date/time serials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet_date: Option<SheetDate>,
}

pub const MAX_SAMPLES: usize = 5;

impl ColumnStats {
    pub fn add(&mut self, cell: &str) {
        let k = classify(cell);
        *match k {
            Kind::Empty => &mut self.empty,
            Kind::Text => &mut self.text,
            Kind::Integer => &mut self.integer,
            Kind::LeadingZero => &mut self.leading_zero,
            Kind::DigitString => &mut self.digit_string,
            Kind::Number => &mut self.number,
            Kind::Boolean => &mut self.boolean,
            Kind::IsoDate => &mut self.iso_date,
            Kind::SlashDate => &mut self.slash_date,
            Kind::DateTime => &mut self.datetime,
            Kind::Phone => &mut self.phone,
            Kind::Email => &mut self.email,
        } += 1;
        if k != Kind::Empty && self.samples.len() < MAX_SAMPLES {
            let s: String = cell.chars().take(100).collect();
            if !self.samples.contains(&s) {
                self.samples.push(s);
            }
        }
    }
}

/// A column's decided type, or the candidates when a person must choose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub suggested: &'static str,
    /// Empty when the type is certain; otherwise the candidate types.
    pub review: Vec<&'static str>,
}

pub fn decide(s: &ColumnStats) -> Decision {
    // Numbers in a spreadsheet date column are dates (or times, kept as text).
    let adjusted;
    let s = match s.sheet_date {
        Some(sd) => {
            let mut a = s.clone();
            let numbers = std::mem::take(&mut a.integer) + std::mem::take(&mut a.number) + std::mem::take(&mut a.digit_string) + std::mem::take(&mut a.leading_zero);
            *match sd.kind {
                SheetDateKind::Date => &mut a.iso_date,
                SheetDateKind::DateTime => &mut a.datetime,
                SheetDateKind::Time => &mut a.text,
            } += numbers;
            adjusted = a;
            &adjusted
        }
        None => s,
    };
    let certain = |t: &'static str| Decision { suggested: t, review: Vec::new() };
    let review = |t: &'static str, c: Vec<&'static str>| Decision { suggested: t, review: c };
    let present: Vec<(&'static str, u64)> = [
        ("text", s.text),
        ("integer", s.integer),
        ("leading_zero", s.leading_zero),
        ("digit_string", s.digit_string),
        ("number", s.number),
        ("boolean", s.boolean),
        ("iso_date", s.iso_date),
        ("slash_date", s.slash_date),
        ("datetime", s.datetime),
        ("phone", s.phone),
        ("email", s.email),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .collect();
    let names: Vec<&str> = present.iter().map(|(k, _)| *k).collect();
    let only = |allowed: &[&str]| names.iter().all(|n| allowed.contains(n));
    match names.as_slice() {
        [] => certain("text"),
        ["text"] => certain("text"),
        ["integer"] => certain("integer"),
        ["boolean"] => certain("boolean"),
        ["iso_date"] => certain("date"),
        ["phone"] => certain("phone"),
        ["email"] => certain("email"),
        _ if only(&["integer", "number"]) => certain("number"),
        _ if only(&["iso_date", "datetime"]) => certain("datetime"),
        _ if only(&["slash_date", "iso_date"]) => review("date", vec!["date", "text"]),
        _ if only(&["leading_zero", "integer"]) => review("text", vec!["integer", "text"]),
        _ if only(&["digit_string", "phone", "leading_zero"]) => review("phone", vec!["phone", "integer"]),
        _ => {
            let mut types: Vec<&'static str> = Vec::new();
            for n in &names {
                let t = match *n {
                    "integer" | "digit_string" => "integer",
                    "leading_zero" | "text" => "text",
                    "number" => "number",
                    "boolean" => "boolean",
                    "iso_date" | "slash_date" => "date",
                    "datetime" => "datetime",
                    "phone" => "phone",
                    _ => "email",
                };
                if !types.contains(&t) {
                    types.push(t);
                }
            }
            if !types.contains(&"text") {
                types.push("text");
            }
            if types.len() == 1 {
                certain(types[0])
            } else {
                review("text", types)
            }
        }
    }
}

/// Interprets one original cell for a column of type `ty`. Empty cells are
/// `null`. `Err` is the problem, phrased for a validation issue.
pub fn interpret(ty: &str, cell: &str) -> Result<Value, String> {
    let s = cell.trim();
    if s.is_empty() {
        return Ok(Value::Null);
    }
    // The cell as an issue shows it, made only for an issue (not once a cell).
    let shown = || s.chars().take(40).collect::<String>();
    match ty {
        "text" => Ok(Value::String(cell.to_string())),
        "integer" => s.parse::<i64>().map(Value::from).map_err(|_| format!("`{}` is not an integer", shown())),
        "number" => {
            if let Ok(i) = s.parse::<i64>() {
                return Ok(Value::from(i));
            }
            s.parse::<f64>().ok().filter(|f| f.is_finite() && is_number(s)).and_then(serde_json::Number::from_f64).map(Value::Number).ok_or_else(|| format!("`{}` is not a number", shown()))
        }
        "boolean" => match s.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Ok(Value::Bool(true)),
            "false" | "no" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("`{}` is not a boolean (true/false, yes/no, 1/0)", shown())),
        },
        "date" => iso_date(s).or_else(|| slash_date(s)).map(Value::String).ok_or_else(|| format!("`{}` is not a date (YYYY-MM-DD or D/M/YYYY)", shown())),
        "datetime" => {
            if is_datetime(s) {
                Ok(Value::String(s.to_string()))
            } else if let Some(d) = iso_date(s) {
                Ok(Value::String(format!("{d}T00:00:00Z")))
            } else {
                Err(format!("`{}` is not a date-time (YYYY-MM-DDTHH:MM[:SS][Z|±HH:MM])", shown()))
            }
        }
        "phone" => phone_value(s).map(Value::String).ok_or_else(|| format!("`{}` is not a phone number (8 to 15 digits, optional leading +)", shown())),
        "email" => {
            if is_email(s) {
                Ok(Value::String(s.to_string()))
            } else {
                Err(format!("`{}` is not an email address", shown()))
            }
        }
        other => Err(format!("unknown type `{other}`")),
    }
}

/// Interprets a cell of a column: `interpret`, except that a number in a
/// spreadsheet date column becomes the ISO-8601 date, date-time or time its
/// serial stands for (when the column's type is `date` or `datetime`, or
/// `text` for a time-only column). Other types keep the number.
pub fn interpret_cell(ty: &str, cell: &str, sheet: Option<&SheetDate>) -> Result<Value, String> {
    let s = cell.trim();
    let Some(sd) = sheet.filter(|_| is_number(s)) else { return interpret(ty, cell) };
    let shown: String = s.chars().take(40).collect();
    let serial: f64 = s.parse().map_err(|_| format!("`{shown}` is not a number"))?;
    let converted = match (ty, sd.kind) {
        ("date", _) => serial_date(serial, sd.base1904).map(|(d, _)| d),
        ("datetime", _) => serial_date(serial, sd.base1904).map(|(d, t)| format!("{d}T{t}")),
        ("text", SheetDateKind::Time) => serial_time(serial),
        _ => return interpret(ty, cell),
    };
    converted.map(Value::String).ok_or_else(|| format!("`{shown}` is not a date the spreadsheet can show"))
}

/// A field key derived from a column header: letters, digits and `_`,
/// starting with a letter, at most 64 characters (`^[a-zA-Z][a-zA-Z0-9_]{0,63}$`).
pub fn field_key(header: &str, position: usize) -> String {
    let mut k = String::new();
    for c in header.trim().chars() {
        if c.is_ascii_alphanumeric() {
            k.push(c);
        } else if !k.ends_with('_') && !k.is_empty() {
            k.push('_');
        }
    }
    let k = k.trim_end_matches('_');
    let mut k = if k.is_empty() {
        format!("column_{}", position + 1)
    } else if !k.as_bytes()[0].is_ascii_alphabetic() {
        format!("c_{k}")
    } else {
        k.to_string()
    };
    k.truncate(64);
    k
}

#[cfg(test)]
mod tests;
