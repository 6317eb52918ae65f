//! What a messaging provider pushes to us: `POST
//! /providers/v1/{businessId}/messenger/events`, the address a business
//! gives its provider for status webhooks. No API key: the business's
//! messenger plugin checks the provider's signature with its own secret
//! settings and reads the delivery statuses out of the body
//! (`messenger-webhooks.receive`); the host stores them
//! (`pushed_statuses`, once per message and status) and wakes the message's
//! delivery job, whose next `track` answers from them
//! (`plugins::pushed::next_pushed`). So a pushed status moves a message through exactly
//! the path a polled one does (states, events, webhooks, the timeline). The
//! customers' messages it carries are queued as inbound messages
//! (`admin::enqueue_inbound`, the path of the sandbox routes), to numbers
//! and accounts connected to this business only.
//!
//! Answers: 200 `{received, taken, messages}` (statuses taken, messages
//! queued); 401 `signature_invalid`
//! when the plugin says the body is not signed by the provider; 404 when
//! the business has no messenger plugin (the sandbox pushes nothing); 400
//! for a body the plugin cannot read; 503 (retryable) when the plugin is
//! not loaded or failed, so the provider sends it again.

use crate::admin::{Inbound, InboundRefusal, Sender};
use crate::db::{self, SqlValue};
use crate::pipeline::{Answer, App};
use switchboard_gateway::errors::Failure;
use switchboard_job_kinds::messaging::{delivery_lane, MessageRef, MessagingJob};

const PREFIX: &str = "/providers/v1/";
const SUFFIX: &str = "/messenger/events";
/// The path as the access log shows it.
pub const TEMPLATE: &str = "/providers/v1/{businessId}/messenger/events";
/// A provider's webhook body is small; 1 MiB is plenty.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The business of a provider webhook path, if `path` is one.
pub fn business_of(path: &str) -> Option<&str> {
    let id = path.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    (!id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')).then_some(id)
}

/// The route. Runs on a blocking thread.
pub fn receive(app: &App, path: &str, method: &str, headers: Vec<(String, String)>, body: Vec<u8>, request_id: &str) -> Answer {
    let answer = match (method, business_of(path)) {
        ("POST", Some(business)) => take(app, &business.to_ascii_lowercase(), headers, body),
        ("POST", None) => Err(Failure::new(404, "not_found", "route_not_found", "no such route")),
        _ => Err(Failure::new(405, "validation", "method_not_allowed", "use POST").with_header("Allow", "POST".into())),
    };
    Answer::of_route(answer, 200, "providerEvents", request_id)
}

fn take(app: &App, business: &str, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<serde_json::Value, Failure> {
    let unavailable = crate::pipeline::unavailable;
    let no_plugin = || Failure::new(404, "not_found", "provider_events_not_accepted", "this business's messaging adapter takes no webhooks");
    let conn = app.db.conn().map_err(|_| unavailable())?;
    let providers = app.components.providers();
    let (plugin, settings) = match providers.messenger_for(&conn, business) {
        Ok(p) => p,
        Err(crate::engine::providers::Unavailable::NotConfigured) => return Err(no_plugin()),
        Err(u) => {
            let (code, message, _) = u.describe("messenger");
            return Err(Failure::new(503, "capacity", &code, message).retryable(true));
        }
    };
    // The embedded sandbox pushes nothing.
    if !plugin.is_plugin() {
        return Err(no_plugin());
    }
    let pushed = plugin.receive(settings, headers, body).map_err(|e| match e.code.as_str() {
        "signature_invalid" => Failure::new(401, "authentication", "signature_invalid", "the body is not signed by the provider"),
        "not_supported" => no_plugin(),
        _ if e.retryable => Failure::new(503, "capacity", "provider_events_unavailable", "the messaging adapter could not read the webhook; send it again").retryable(true),
        _ => Failure::validation("provider_events_invalid", format!("the messaging adapter could not read the webhook: {}", e.code)),
    })?;
    let gate = app.db.write_gate(std::time::Duration::from_secs(10)).ok_or_else(unavailable)?;
    let stored = crate::db::in_transaction(&conn, || {
        let mut taken = 0u32;
        for p in &pushed.statuses {
            let r = &p.report;
            if crate::plugins::pushed::rank(&r.status).is_none() {
                continue;
            }
            let failure = r.failure.as_ref();
            let inserted = db::execute(
                &conn,
                "INSERT OR IGNORE INTO pushed_statuses (business_id, provider_message_id, status, provider_status, failure_code, failure_message, received_at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                vec![
                    SqlValue::Text(business.into()),
                    SqlValue::Text(p.provider_message_id.clone()),
                    SqlValue::Text(r.status.clone()),
                    SqlValue::Text(r.provider_status.chars().take(64).collect()),
                    failure.map_or(SqlValue::Null, |f| SqlValue::Text(f.code.chars().take(64).collect())),
                    failure.map_or(SqlValue::Null, |f| SqlValue::Text(f.message.chars().take(500).collect())),
                    SqlValue::Integer(crate::clock::now_ms()),
                ],
            )?;
            if inserted == 1 {
                taken += 1;
                wake_delivery(&conn, business, &p.provider_message_id)?;
            }
        }
        Ok(taken)
    });
    drop(gate);
    let taken = stored.map_err(|_| unavailable())?;
    // Customers' messages enter as any inbound message does (the
    // messaging area's inbound job: conversation, contact, agent reply,
    // events); one the provider pushes twice is taken once, by its id.
    let mut messages = 0u32;
    for m in &pushed.messages {
        let to = match m.channel.as_str() {
            "chatapp" => Sender::Chatapp(&m.recipient_id),
            "photoapp" => Sender::Photoapp(&m.recipient_id),
            _ => return Err(Failure::validation("provider_events_invalid", "the messaging adapter read a message of an unknown channel")),
        };
        let inbound = Inbound { to, from: &m.sender, text: &m.text, name: m.name.as_deref(), provider_message_id: Some(&m.provider_message_id) };
        match crate::admin::enqueue_inbound(&app.db, Some(business), &inbound) {
            Ok(_) => messages += 1,
            Err(InboundRefusal::Invalid(why)) | Err(InboundRefusal::NotConnected(why)) => {
                // One bad message does not make the provider resend the rest.
                crate::logging::line("warn", &format!("provider webhook of business {business}: a message was not taken: {why}"));
            }
            Err(InboundRefusal::Storage(_)) => return Err(unavailable()),
        }
    }
    Ok(serde_json::json!({"received": pushed.statuses.len() + pushed.messages.len(), "taken": taken, "messages": messages}))
}

/// Makes the message's delivery job run now: its pending job is brought
/// forward, or (it finished, or is running) a new one is queued in the
/// message's lane, so two steps never move one message at once.
fn wake_delivery(conn: &db::Connection, business: &str, provider_message_id: &str) -> anyhow::Result<()> {
    let ids = db::query_strings(
        conn,
        "SELECT id FROM messages WHERE business_id = ?1 AND provider_message_id = ?2 AND direction = 'outbound'",
        vec![SqlValue::Text(business.into()), SqlValue::Text(provider_message_id.into())],
    )?;
    let Some(message_id) = ids.into_iter().next() else { return Ok(()) };
    let lane = delivery_lane(&message_id);
    let now = crate::clock::now_ms();
    let woken = db::execute(conn, "UPDATE jobs SET due_at_ms = MIN(due_at_ms, ?2) WHERE lane = ?1 AND state = 'pending'", vec![SqlValue::Text(lane), SqlValue::Integer(now)])?;
    if woken == 0 {
        // The messaging area's own kind: its options put it in that lane.
        switchboard_storage::jobs::enqueue(conn, business, &MessagingJob::Deliver(MessageRef { message_id }))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths() {
        assert_eq!(super::business_of("/providers/v1/0190-ab/messenger/events"), Some("0190-ab"));
        assert_eq!(super::business_of("/providers/v1//messenger/events"), None);
        assert_eq!(super::business_of("/providers/v1/a/b/messenger/events"), None);
        assert_eq!(super::business_of("/providers/v1/x/carrier/events"), None);
    }
}
