//! The turns of a call whose carrier hears the customer in turns (issue
//! 48): `POST /providers/v1/{businessId}/carrier/turn` (what the customer
//! said, or nothing before the listening timed out; turn 0 is the call's
//! answer) and `…/carrier/partial` (a partial result: the customer began
//! speaking). No API key: the business's carrier plugin checks the
//! carrier's signature (`carrier-webhooks.hear`) like a status callback's,
//! and names the call and the turn (it put both in the address).
//!
//! A turn's post is recorded once per (call, turn) in `carrier_turns` (a
//! repeated post changes nothing and runs no turn again) and makes the
//! call's pending `voice.call` step due now. The step reads the posts it
//! has not answered, runs the agent's turn and writes its answer beside the
//! post; this route holds the carrier's request until then and answers it
//! with the adapter's document (`carrier-webhooks.answer`, e.g. TwiML). The
//! job runner of the business's database is rung, so the step starts at
//! once rather than at its next round, and the held request reads the
//! answer every 2 ms at most. An
//! answer not ready within [`HOLD`] is a hold: the adapter asks the carrier
//! to post the same turn again shortly, which finds the turn recorded and
//! waits for the same answer. A call that has ended is answered with the
//! end (`end-call`, nothing to say).
//!
//! Answers: 200 with the document (turn) or `{received}` (partial); 401
//! `signature_invalid`; 404 `provider_events_not_accepted` (no carrier that
//! hears in turns) or `call_not_found`; 400 for a post the plugin cannot
//! read; 503 (retryable) when the plugin is not loaded or failed.

use crate::db::{self, params};
use crate::engine::providers::carrier::{Heard, TurnAnswer};
use crate::pipeline::{Answer, App};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use switchboard_gateway::errors::Failure;
use switchboard_job_kinds::voice;

/// How long a turn's post is held for the step's answer before the
/// carrier is asked to post it again.
pub const HOLD: Duration = Duration::from_secs(8);

/// The route of a turn (`partial` false) or of a partial result.
#[allow(clippy::too_many_arguments)]
pub fn receive(app: &App, business: &str, path: &str, query: Option<&str>, headers: Vec<(String, String)>, body: Vec<u8>, request_id: &str, partial: bool) -> Answer {
    let operation = if partial { "carrierPartialResult" } else { "carrierTurn" };
    match take(app, business, path, query, headers, body, partial) {
        Ok(Taken::Received) => Answer::of_route(Ok(json!({"received": 1})), 200, operation, request_id),
        Ok(Taken::Document(content_type, body)) => {
            let content_type = match content_type.as_str() {
                "application/xml" => "application/xml",
                "text/xml" => "text/xml",
                _ => "application/octet-stream",
            };
            Answer { status: 200, content_type, body, headers: Vec::new(), operation, download: None }
        }
        Err(f) => Answer::failure(&f, request_id),
    }
}

enum Taken {
    Received,
    Document(String, String),
}

fn take(app: &App, business: &str, path: &str, query: Option<&str>, headers: Vec<(String, String)>, body: Vec<u8>, partial: bool) -> Result<Taken, Failure> {
    let unavailable = crate::pipeline::unavailable;
    let db = app.db_for(business)?;
    let conn = db.conn().map_err(|_| unavailable())?;
    let (carrier, settings) = super::carrier_of(app, &conn, business)?;
    let heard = carrier.hear(&settings, &super::called_url(app, path, query), &headers, &body).map_err(super::refusal)?;
    let known = voice::call_exists(&crate::admin::areas::Tx(&conn), business, &heard.call_id).map_err(|_| unavailable())?;
    if !known {
        return Err(Failure::new(404, "not_found", "call_not_found", "no call of this business has this id"));
    }
    let now = crate::clock::now_ms();
    let (call, turn) = (&heard.call_id, heard.turn);
    let gate = db.write_gate(Duration::from_secs(10)).ok_or_else(unavailable)?;
    let recorded = db::in_transaction(&conn, || {
        if partial {
            db::execute(
                &conn,
                "INSERT INTO carrier_turns (business_id, call_id, turn, partial_at_ms) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (business_id, call_id, turn) DO UPDATE SET partial_at_ms = IFNULL(partial_at_ms, excluded.partial_at_ms)",
                params![business, call, turn, now],
            )?;
            return Ok(false);
        }
        let heard_json = json!({"speech": heard.speech, "confidence": heard.confidence}).to_string();
        let fresh = db::execute(
            &conn,
            "INSERT INTO carrier_turns (business_id, call_id, turn, heard_json, received_at_ms) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (business_id, call_id, turn) DO UPDATE SET heard_json = excluded.heard_json, received_at_ms = excluded.received_at_ms \
             WHERE carrier_turns.heard_json IS NULL",
            params![business, call, turn, heard_json, now],
        )?;
        if fresh == 1 {
            wake(&conn, business, &heard.call_id, now)?;
        }
        Ok(fresh == 1)
    });
    drop(gate);
    if recorded.map_err(|_| unavailable())? {
        app.bells.ring(&db);
    }
    if partial {
        return Ok(Taken::Received);
    }
    let answer = wait_for_answer(app, &db, business, &heard)?;
    let (content_type, document) = carrier.answer(&settings, &answer).map_err(|e| {
        tracing::warn!(code = %e.code, "the carrier adapter could not write a turn's answer");
        Failure::new(503, "capacity", "provider_events_unavailable", "the carrier adapter could not write the answer; send it again").retryable(true)
    })?;
    Ok(Taken::Document(content_type, document))
}

/// Makes the call's pending step due now.
fn wake(conn: &db::Connection, business: &str, call: &str, now: i64) -> anyhow::Result<u64> {
    match voice::call_job(&crate::admin::areas::Tx(conn), business, call)? {
        Some(job) => switchboard_jobs::wake_job(conn, &job, now),
        None => Ok(0),
    }
}

/// A turn's answer, whether its call has ended (voice's terminal statuses)
/// and whether the call's step waits, due later than `?4`.
static ANSWER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT t.answer_json, c.status IN ({}), j.state = 'pending' AND j.due_at_ms > ?4 \
         FROM carrier_turns t JOIN calls c ON c.business_id = t.business_id AND c.id = t.call_id LEFT JOIN jobs j ON j.id = c.job_id \
         WHERE t.business_id = ?1 AND t.call_id = ?2 AND t.turn = ?3",
        voice::terminal_sql_list()
    )
});

/// The step's answer to the turn, once written; the end when the call has
/// ended; a hold after [`HOLD`]. While it waits, a step that was running
/// when the post came (and so did not see it) is made due again as soon
/// as it is pending.
fn wait_for_answer(app: &App, db: &std::sync::Arc<crate::db::Db>, business: &str, heard: &Heard) -> Result<TurnAnswer, Failure> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(500);
    let base = TurnAnswer { call_id: heard.call_id.clone(), turn: heard.turn, text: None, end_call: false, barge_in: false, listen_seconds: 0, hold: false };
    let mut last_wake = Instant::now();
    loop {
        let conn = db.conn().map_err(|_| crate::pipeline::unavailable())?;
        let row = db::query_one_as::<(Option<String>, Option<bool>, Option<bool>)>(&conn, &ANSWER, params![business, &heard.call_id, heard.turn, crate::clock::now_ms()])
            .map_err(|_| crate::pipeline::unavailable())?;
        let (answer, ended, waits) = row.unwrap_or_default();
        if let Some(answer) = answer {
            let a: Value = serde_json::from_str(&answer).unwrap_or(Value::Null);
            return Ok(TurnAnswer {
                text: a["text"].as_str().map(String::from),
                end_call: a["endCall"].as_bool().unwrap_or(false),
                barge_in: a["bargeIn"].as_bool().unwrap_or(false),
                listen_seconds: a["listenSeconds"].as_u64().unwrap_or(5).min(3600) as u32,
                ..base
            });
        }
        if ended == Some(true) {
            return Ok(TurnAnswer { end_call: true, ..base });
        }
        if started.elapsed() >= HOLD {
            return Ok(TurnAnswer { hold: true, ..base });
        }
        // The step was running when the post came: it is pending again,
        // due later; bring it forward (at most every 20 ms).
        if waits == Some(true) && last_wake.elapsed() >= Duration::from_millis(20) {
            last_wake = Instant::now();
            if let Some(gate) = db.write_gate(Duration::from_secs(1)) {
                let now = crate::clock::now_ms();
                let woken = db::in_transaction(&conn, || wake(&conn, business, &heard.call_id, now));
                drop(gate);
                if woken.is_ok_and(|n| n > 0) {
                    app.bells.ring(db);
                }
            }
        }
        drop(conn);
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}
