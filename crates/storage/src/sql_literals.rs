//! One statement written out once per row of parameters, with each value
//! as an SQL literal: how a replica sends `execute_many` to its primary.
//!
//! Why: libsql's write delegation takes parameters for one statement per
//! round trip, so a job step writing 5,000 rows inside a transaction made
//! 5,000 round trips to the primary (15,000 for an ingestion step with its
//! passages and lookup keys), seconds under load, past the primary's own
//! limit on how long a transaction may stay open. Its `execute_batch` sends
//! many statements in one round trip, but without parameters. libsql has no
//! batch with parameters on this path, so the values are written into the
//! text here. The placeholders are found by SQLite's own tokenizer (the
//! libsql fork of `sqlite3-parser`, which libsql itself uses), so quotes,
//! identifiers and comments are never mistaken for parameters.
//!
//! Only values whose literal reads back as exactly the same value are
//! written out: NULL, integers, text without NUL, blobs. A real (decimal
//! text may not round-trip through the primary's parser to the same bits)
//! or text holding a NUL makes `render` refuse that row, and the caller
//! sends it with parameters as before. Named parameters (`:name`, `$name`)
//! make `Template::parse` refuse the statement.

use crate::db::SqlValue as Value;
use libsql_sqlite3_parser::dialect::TokenType;
use libsql_sqlite3_parser::lexer::sql::Tokenizer;
use libsql_sqlite3_parser::lexer::Scanner;

/// A statement cut at its placeholders: `text[0] ?a text[1] ?b ... text[n]`.
#[derive(Debug)]
pub struct Template {
    texts: Vec<String>,
    /// The 1-based parameter index of each placeholder.
    params: Vec<usize>,
}

impl Template {
    /// Cuts `sql` at its numbered (`?3`) and anonymous (`?`, numbered as
    /// SQLite does: one past the largest so far) placeholders. `None` for a
    /// statement the tokenizer refuses or that has named parameters.
    pub fn parse(sql: &str) -> Option<Template> {
        let input = sql.as_bytes();
        let mut scanner = Scanner::new(Tokenizer::new());
        let (mut texts, mut params) = (Vec::new(), Vec::new());
        let (mut copied, mut largest) = (0, 0);
        loop {
            let (start, token, end) = scanner.scan(input).ok()?;
            let Some((name, kind)) = token else { break };
            if kind != TokenType::TK_VARIABLE {
                continue;
            }
            let index = if name.is_empty() {
                largest + 1
            } else if name.iter().all(u8::is_ascii_digit) {
                std::str::from_utf8(name).ok()?.parse::<usize>().ok().filter(|&i| i > 0)?
            } else {
                return None;
            };
            largest = largest.max(index);
            texts.push(sql[copied..start].to_string());
            params.push(index);
            copied = end;
        }
        texts.push(sql[copied..].to_string());
        Some(Template { texts, params })
    }

    /// Appends the statement with `row`'s values written in, and `;`.
    /// `false` (nothing appended) when a value cannot be written exactly or
    /// a placeholder has no value.
    pub fn render(&self, row: &[Value], out: &mut String) -> bool {
        let mark = out.len();
        out.push_str(&self.texts[0]);
        for (param, text) in self.params.iter().zip(&self.texts[1..]) {
            if !row.get(param - 1).is_some_and(|v| literal(v, out)) {
                out.truncate(mark);
                return false;
            }
            out.push_str(text);
        }
        out.push(';');
        true
    }
}

/// Writes `value` as a literal SQLite reads back as the same value.
fn literal(value: &Value, out: &mut String) -> bool {
    use std::fmt::Write;
    match value {
        Value::Null => out.push_str("NULL"),
        // i64::MIN's digits alone read as a real; the expression stays integer.
        Value::Integer(i64::MIN) => out.push_str("(-9223372036854775807-1)"),
        Value::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Text(s) if s.contains('\0') => return false,
        Value::Text(s) => {
            out.push('\'');
            for piece in s.split_inclusive('\'') {
                out.push_str(piece);
                if piece.ends_with('\'') {
                    out.push('\'');
                }
            }
            out.push('\'');
        }
        Value::Blob(b) => {
            out.push_str("X'");
            for byte in b {
                let _ = write!(out, "{byte:02X}");
            }
            out.push('\'');
        }
        Value::Real(_) => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(sql: &str, row: Vec<Value>) -> Option<String> {
        let mut out = String::new();
        Template::parse(sql)?.render(&row, &mut out).then_some(out)
    }

    #[test]
    fn placeholders_are_found_by_the_tokenizer_not_by_looking_for_question_marks() {
        let sql = "INSERT INTO t (a, \"b?1\", c) VALUES (?2, '?1 it''s', ?1) -- ?3\n /* ?4 */";
        assert_eq!(rendered(sql, vec![Value::Text("x'y".into()), Value::Integer(7)]).unwrap(), "INSERT INTO t (a, \"b?1\", c) VALUES (7, '?1 it''s', 'x''y') -- ?3\n /* ?4 */;");
        // Anonymous placeholders count on from the largest number so far.
        assert_eq!(rendered("SELECT ?, ?3, ?", vec![Value::Integer(1), Value::Null, Value::Integer(3), Value::Integer(4)]).unwrap(), "SELECT 1, 3, 4;");
    }

    #[test]
    fn values_are_written_so_that_they_read_back_the_same() {
        let sql = "SELECT ?1, ?2, ?3, ?4, ?5, ?6";
        let row = vec![Value::Null, Value::Integer(-5), Value::Integer(i64::MIN), Value::Text("a''b'".into()), Value::Blob(vec![0, 0xAB, 0xFF]), Value::Text(String::new())];
        let text = rendered(sql, row.clone()).unwrap();
        let db = crate::db::block(libsql::Builder::new_local(":memory:").build()).unwrap();
        let conn = db.connect().unwrap();
        let back = crate::db::block(async {
            let mut rows = conn.query(text.trim_end_matches(';'), ()).await.unwrap();
            let row = rows.next().await.unwrap().unwrap();
            (0..6).map(|i| crate::db::from_libsql(row.get_value(i).unwrap())).collect::<Vec<_>>()
        });
        assert_eq!(back, row);
    }

    #[test]
    fn what_cannot_be_written_exactly_is_refused() {
        assert!(rendered("SELECT ?1", vec![Value::Real(0.1)]).is_none());
        assert!(rendered("SELECT ?1", vec![Value::Text("a\0b".into())]).is_none());
        assert!(rendered("SELECT ?2", vec![Value::Integer(1)]).is_none(), "a placeholder without a value");
        assert!(Template::parse("SELECT :name").is_none());
        assert!(Template::parse("SELECT $a").is_none());
    }
}
