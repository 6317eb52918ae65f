//! The part of sqld's "Hrana over HTTP" (v2 pipelines) the edge build
//! speaks: a pipeline of `execute`, `batch` and `close` requests on one
//! stream tied together by a baton, values in Hrana's JSON form. Written
//! here because libSQL's Rust clients reach the primary through tokio
//! sockets, which a `wasi:http` component does not have; the wire format is
//! small and specified (libsql's docs/HTTP_V2_SPEC.md, HRANA_2_SPEC.md).

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value as Json};
use switchboard_gateway::storage::Value;

pub fn value(v: &Value) -> Json {
    match v {
        Value::Null => json!({"type": "null"}),
        // Integers travel as decimal text (JSON numbers lose 64-bit precision).
        Value::Integer(i) => json!({"type": "integer", "value": i.to_string()}),
        Value::Real(f) => json!({"type": "float", "value": f}),
        Value::Text(s) => json!({"type": "text", "value": s}),
        Value::Blob(b) => json!({"type": "blob", "base64": STANDARD_NO_PAD.encode(b)}),
    }
}

fn from_json(j: &Json) -> Result<Value, String> {
    let kind = j.get("type").and_then(Json::as_str).unwrap_or("");
    Ok(match kind {
        "null" => Value::Null,
        "integer" => {
            let text = j.get("value").and_then(Json::as_str).ok_or("an integer without its value")?;
            Value::Integer(text.parse().map_err(|_| format!("an integer that is not one: {text}"))?)
        }
        "float" => Value::Real(j.get("value").and_then(Json::as_f64).ok_or("a float without its value")?),
        "text" => Value::Text(j.get("value").and_then(Json::as_str).ok_or("a text without its value")?.to_string()),
        "blob" => {
            let text = j.get("base64").and_then(Json::as_str).ok_or("a blob without its bytes")?;
            Value::Blob(STANDARD_NO_PAD.decode(text.trim_end_matches('=')).map_err(|_| "a blob that is not base64")?)
        }
        other => return Err(format!("a value of unknown type {other:?}")),
    })
}

/// A statement as Hrana sends it.
pub fn stmt(sql: &str, args: &[Value], want_rows: bool) -> Json {
    json!({"sql": sql, "args": args.iter().map(value).collect::<Vec<_>>(), "want_rows": want_rows})
}

/// What one statement returned.
#[derive(Debug, Default)]
pub struct StmtResult {
    pub rows: Vec<Vec<Value>>,
    pub affected: u64,
}

/// An error the primary reported for a statement.
#[derive(Debug)]
pub struct SqlError {
    pub code: String,
    pub message: String,
}

fn stmt_result(j: &Json) -> Result<StmtResult, String> {
    let rows = match j.get("rows").and_then(Json::as_array) {
        Some(rows) => rows.iter().map(|r| r.as_array().ok_or_else(|| "a row that is not a list".to_string())?.iter().map(from_json).collect::<Result<Vec<_>, _>>()).collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    Ok(StmtResult { rows, affected: j.get("affected_row_count").and_then(Json::as_u64).unwrap_or(0) })
}

fn sql_error(j: &Json) -> SqlError {
    SqlError { code: j.get("code").and_then(Json::as_str).unwrap_or("").to_string(), message: j.get("message").and_then(Json::as_str).unwrap_or("the primary refused the statement").to_string() }
}

/// The request that runs `steps` in order (a `batch` with `ok`
/// conditions, or a plain `execute` for one statement), some of which are
/// prefetched queries (`true`): every step runs only if the nearest
/// ordinary step before it succeeded, so a prefetched query that fails
/// stops nothing.
pub fn chained_with(steps: Vec<(Json, bool)>) -> Json {
    if steps.len() == 1 {
        return json!({"type": "execute", "stmt": steps.into_iter().next().expect("one statement").0});
    }
    let mut last_ordinary: Option<usize> = None;
    let steps: Vec<Json> = steps
        .into_iter()
        .enumerate()
        .map(|(i, (stmt, prefetched))| {
            let step = match last_ordinary {
                Some(j) => json!({"stmt": stmt, "condition": {"type": "ok", "step": j}}),
                None => json!({"stmt": stmt}),
            };
            if !prefetched {
                last_ordinary = Some(i);
            }
            step
        })
        .collect();
    json!({"type": "batch", "batch": {"steps": steps}})
}

/// What one step of a batch came to: its result, its error, or `None`
/// when it did not run (a step before it failed).
pub type Step = Option<Result<StmtResult, SqlError>>;

/// Every step's outcome of a [`chained_with`] request (one for a plain
/// `execute`), or the error of the whole request.
pub fn steps(result: &Json) -> Result<Result<Vec<Step>, SqlError>, String> {
    match result.get("type").and_then(Json::as_str) {
        Some("error") => return Ok(Err(sql_error(result.get("error").unwrap_or(&Json::Null)))),
        Some("ok") => {}
        _ => return Err("a result that is neither ok nor error".into()),
    }
    let response = result.get("response").ok_or("an ok result without its response")?;
    let inner = response.get("result").ok_or("a response without its result")?;
    match response.get("type").and_then(Json::as_str) {
        Some("execute") => Ok(Ok(vec![Some(Ok(stmt_result(inner)?))])),
        Some("batch") => {
            let results = inner.get("step_results").and_then(Json::as_array).cloned().unwrap_or_default();
            let errors = inner.get("step_errors").and_then(Json::as_array).cloned().unwrap_or_default();
            let mut out = Vec::with_capacity(results.len());
            for (i, r) in results.iter().enumerate() {
                let e = errors.get(i).filter(|e| !e.is_null());
                out.push(match (r.is_null(), e) {
                    (_, Some(e)) => Some(Err(sql_error(e))),
                    (false, None) => Some(Ok(stmt_result(r)?)),
                    (true, None) => None,
                });
            }
            Ok(Ok(out))
        }
        other => Err(format!("an unexpected response {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_their_json_form() {
        for v in [Value::Null, Value::Integer(i64::MIN), Value::Integer(9_007_199_254_740_993), Value::Real(1.5), Value::Text("é\"x".into()), Value::Blob(vec![0, 255, 7])] {
            assert_eq!(from_json(&value(&v)).unwrap(), v);
        }
        assert!(from_json(&json!({"type": "integer", "value": "1.5"})).is_err());
    }

    #[test]
    fn a_chain_reports_each_step() {
        let chain = chained_with(vec![(stmt("BEGIN", &[], false), false), (stmt("SELECT 1", &[], true), false)]);
        assert_eq!(chain["batch"]["steps"][1]["condition"], json!({"type": "ok", "step": 0}));
        let ok = json!({"type": "ok", "response": {"type": "batch", "result": {
            "step_results": [{"cols": [], "rows": [], "affected_row_count": 0}, {"cols": [], "rows": [[{"type": "integer", "value": "1"}]], "affected_row_count": 0}],
            "step_errors": [null, null]}}});
        assert_eq!(steps(&ok).unwrap().unwrap()[1].as_ref().unwrap().as_ref().unwrap().rows, vec![vec![Value::Integer(1)]]);
        let failed = json!({"type": "ok", "response": {"type": "batch", "result": {
            "step_results": [null, null], "step_errors": [{"message": "database is locked", "code": "SQLITE_BUSY"}, null]}}});
        let got = steps(&failed).unwrap().unwrap();
        assert!(matches!(&got[0], Some(Err(e)) if e.code == "SQLITE_BUSY"));
        assert!(got[1].is_none());
    }

    #[test]
    fn a_prefetched_step_gates_nothing_after_it() {
        let chain = chained_with(vec![(stmt("UPDATE x", &[], false), true), (stmt("BEGIN", &[], false), false), (stmt("SELECT key", &[], true), true), (stmt("SELECT 1", &[], true), false)]);
        let sent = chain["batch"]["steps"].as_array().unwrap();
        assert!(sent[0].get("condition").is_none() && sent[1].get("condition").is_none());
        assert_eq!(sent[2]["condition"], json!({"type": "ok", "step": 1}));
        assert_eq!(sent[3]["condition"], json!({"type": "ok", "step": 1}));
        let answer = json!({"type": "ok", "response": {"type": "batch", "result": {
            "step_results": [null, {"cols": [], "rows": [], "affected_row_count": 0}, {"cols": [], "rows": [[{"type": "text", "value": "k"}]], "affected_row_count": 0}, null],
            "step_errors": [{"message": "no such table: x", "code": "SQLITE_ERROR"}, null, null, null]}}});
        let got = steps(&answer).unwrap().unwrap();
        assert!(matches!(&got[0], Some(Err(e)) if e.message.contains("no such table")));
        assert_eq!(got[2].as_ref().unwrap().as_ref().unwrap().rows, vec![vec![Value::Text("k".into())]]);
        assert!(got[3].is_none());
    }
}
