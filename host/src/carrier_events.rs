//! What a voice carrier pushes to us: `POST
//! /providers/v1/{businessId}/carrier/events`, the address a business's
//! carrier plugin gives its carrier for status callbacks. No API key: the
//! business's carrier plugin checks the carrier's signature with its own
//! secret settings and names the calls the callback is about
//! (`carrier-webhooks.receive`, given the address as the carrier called it:
//! `serve --public-url`, the path and the query). The host makes those
//! calls' pending `voice.call` steps due now, and their `poll` reads what
//! happened, so a callback moves a call through exactly the path a poll does
//! and a lost or repeated callback changes nothing.
//!
//! Answers: 200 `{received, woken}`; 401 `signature_invalid`; 404
//! `provider_events_not_accepted` when the business's carrier takes no
//! callbacks (the embedded sandbox, a plugin without the export); 400 for a
//! callback the plugin cannot read; 503 (retryable) when the plugin is not
//! loaded or failed, so the carrier sends it again.
//!
//! Beside it, `…/carrier/turn` and `…/carrier/partial` (`turns.rs`): the
//! posts of a carrier that hears the customer in turns.

use crate::db;
use crate::engine::providers::carrier::{Carrier, CarrierError};
use crate::engine::providers::Settings;
use crate::pipeline::{Answer, App};
use std::sync::Arc;
use switchboard_gateway::errors::Failure;
use switchboard_job_kinds::voice;

mod turns;

/// The carrier's routes: (suffix, the path as the access log shows it).
const ROUTES: [(&str, &str); 3] = [
    ("/carrier/events", "/providers/v1/{businessId}/carrier/events"),
    ("/carrier/turn", "/providers/v1/{businessId}/carrier/turn"),
    ("/carrier/partial", "/providers/v1/{businessId}/carrier/partial"),
];

/// The business of a carrier route's path, if `path` is one.
pub fn business_of(path: &str) -> Option<&str> {
    ROUTES.iter().find_map(|(suffix, _)| crate::provider_events::business_in(path, suffix))
}

/// The path of a carrier route as the access log shows it.
pub fn template(path: &str) -> &'static str {
    ROUTES.iter().find(|(suffix, _)| crate::provider_events::business_in(path, suffix).is_some()).map_or(ROUTES[0].1, |(_, t)| t)
}

/// The routes. Run on a blocking thread.
pub fn receive(app: &App, path: &str, method: &str, query: Option<&str>, headers: Vec<(String, String)>, body: Vec<u8>, request_id: &str) -> Answer {
    let business = business_of(path).map(str::to_ascii_lowercase);
    let answer = match (method, business) {
        ("POST", Some(business)) if path.ends_with("/carrier/turn") => return turns::receive(app, &business, path, query, headers, body, request_id, false),
        ("POST", Some(business)) if path.ends_with("/carrier/partial") => return turns::receive(app, &business, path, query, headers, body, request_id, true),
        ("POST", Some(business)) => take(app, &business, path, query, headers, body),
        ("POST", None) => Err(Failure::new(404, "not_found", "route_not_found", "no such route")),
        _ => Err(Failure::new(405, "validation", "method_not_allowed", "use POST").with_header("Allow", "POST".into())),
    };
    Answer::of_route(answer, 200, "carrierEvents", request_id)
}

/// The business's carrier plugin, when it takes callbacks.
fn carrier_of(app: &App, conn: &db::Connection, business: &str) -> Result<(Arc<Carrier>, Settings), Failure> {
    let (carrier, settings) = match app.components.providers().plugin_for::<Carrier>(conn, business) {
        Ok(Some(p)) => p,
        Ok(None) | Err(crate::engine::providers::Unavailable::NotConfigured) => return Err(no_callbacks()),
        Err(u) => {
            let (code, message, _) = u.describe("carrier");
            return Err(Failure::new(503, "capacity", &code, message).retryable(true));
        }
    };
    if !carrier.takes_callbacks() {
        return Err(no_callbacks());
    }
    Ok((carrier, settings))
}

fn no_callbacks() -> Failure {
    Failure::new(404, "not_found", "provider_events_not_accepted", "this business's voice carrier takes no callbacks")
}

/// The address the carrier called: the server's public URL, the path and
/// the query.
fn called_url(app: &App, path: &str, query: Option<&str>) -> String {
    let base = app.components.recording_links().map_or("", |l| l.public_url());
    match query {
        Some(q) => format!("{base}{path}?{q}"),
        None => format!("{base}{path}"),
    }
}

/// The answer to a post the adapter refused.
fn refusal(e: CarrierError) -> Failure {
    match e.code.as_str() {
        "signature_invalid" => Failure::new(401, "authentication", "signature_invalid", "the callback is not signed by the carrier"),
        "not_supported" => no_callbacks(),
        _ if e.retryable => Failure::new(503, "capacity", "provider_events_unavailable", "the carrier adapter could not read the callback; send it again").retryable(true),
        _ => Failure::validation("provider_events_invalid", format!("the carrier adapter could not read the callback: {}", e.code)),
    }
}

fn take(app: &App, business: &str, path: &str, query: Option<&str>, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<serde_json::Value, Failure> {
    let unavailable = crate::pipeline::unavailable;
    let db = app.db_for(business)?;
    let conn = db.conn().map_err(|_| unavailable())?;
    let (carrier, settings) = carrier_of(app, &conn, business)?;
    let calls = carrier.receive(&settings, &called_url(app, path, query), &headers, &body).map_err(refusal)?;
    let gate = db.write_gate(std::time::Duration::from_secs(10)).ok_or_else(unavailable)?;
    let now = crate::clock::now_ms();
    let woken = crate::db::in_transaction(&conn, || {
        let mut woken = 0u64;
        // Only this business's calls, and only a step that waits.
        for call in calls.iter().take(100) {
            if let Some(job) = voice::call_job(&crate::admin::areas::Tx(&conn), business, call)? {
                woken += switchboard_jobs::wake_job(&conn, &job, now)?;
            }
        }
        Ok(woken)
    });
    drop(gate);
    let woken = woken.map_err(|_| unavailable())?;
    Ok(serde_json::json!({"received": calls.len(), "woken": woken}))
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths() {
        assert_eq!(super::business_of("/providers/v1/0190-ab/carrier/events"), Some("0190-ab"));
        assert_eq!(super::business_of("/providers/v1/0190-ab/messenger/events"), None);
        assert_eq!(super::business_of("/providers/v1/0190-ab/carrier/turn"), Some("0190-ab"));
        assert_eq!(super::template("/providers/v1/0190-ab/carrier/partial"), "/providers/v1/{businessId}/carrier/partial");
        assert_eq!(super::template("/providers/v1/0190-ab/carrier/events"), "/providers/v1/{businessId}/carrier/events");
        assert_eq!(super::business_of("/providers/v1//carrier/events"), None);
    }
}
