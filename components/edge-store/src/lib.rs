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
mod stream;

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
use stream::{unavailable, with_stream, Deferred, PLACEMENT};
use switchboard_gateway::storage::{self as shared, Value};

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

/// Runs a statement for the shared code in this crate (`jobs.enqueue`) on
/// the request's stream.
struct OnStream;

impl shared::Statements for OnStream {
    type Error = String;
    fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        with_stream(|s| s.run(hrana::stmt(sql, params, true), false)).map(|r| r.rows).map_err(|e| e.message)
    }
    fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, String> {
        with_stream(|s| s.run(hrana::stmt(sql, params, false), false)).map(|r| r.affected).map_err(|e| e.message)
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
        shared::enqueue_job(&OnStream, job, now_ms()).map_err(|message| StoreError { kind: "other".into(), message })?;
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
            s.deferred.push(Deferred { stmt: hrana::stmt(PLACEMENT, &switchboard_sql::params![business_id], true), prefetch: Some(handle), control: false });
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
