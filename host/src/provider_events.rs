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
//! and accounts connected to this business only, and so are its photoapp
//! comments, reactions and referrals (`admin::enqueue_photoapp_signal`,
//! the path of the sandbox routes).
//!
//! `GET` on the same address is the provider's check that the address is
//! the business's (WhatsApp Cloud's and Instagram's `hub.mode`,
//! `hub.verify_token`, `hub.challenge`): the plugin answers it from its
//! settings (`messenger-webhooks.verify`), and the route sends its answer
//! back as `text/plain`; 403 `verification_refused` when the token is not
//! the business's, 404 when the business's adapter verifies no address.
//! The query is never logged (the token is a secret).
//!
//! Answers: 200 `{received, taken, messages, signals}` (statuses taken,
//! messages and photoapp signals queued); 401 `signature_invalid`
//! when the plugin says the body is not signed by the provider; 404 when
//! the business has no messenger plugin (the sandbox pushes nothing); 400
//! for a body the plugin cannot read; 503 (retryable) when the plugin is
//! not loaded or failed, so the provider sends it again.

use crate::admin::{Inbound, InboundRefusal, PhotoappSignal, Sender};
use crate::db;
use crate::pipeline::{Answer, App};
use switchboard_gateway::errors::Failure;
use switchboard_job_kinds::messaging::{self, delivery_lane, MessageRef, MessagingJob};

const PREFIX: &str = "/providers/v1/";
const SUFFIX: &str = "/messenger/events";
/// The path as the access log shows it.
pub const TEMPLATE: &str = "/providers/v1/{businessId}/messenger/events";
/// A provider's webhook body is small; 1 MiB is plenty.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The business of a provider webhook path, if `path` is one.
pub fn business_of(path: &str) -> Option<&str> {
    business_in(path, SUFFIX)
}

/// The business id of a `/providers/v1/{businessId}{suffix}` path: the
/// messenger's and the carrier's event routes both take this shape.
pub(crate) fn business_in<'a>(path: &'a str, suffix: &str) -> Option<&'a str> {
    let id = path.strip_prefix(PREFIX)?.strip_suffix(suffix)?;
    (!id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')).then_some(id)
}

/// The route. Runs on a blocking thread.
#[allow(clippy::too_many_arguments)]
pub fn receive(app: &App, path: &str, method: &str, query: Option<&str>, headers: Vec<(String, String)>, body: Vec<u8>, request_id: &str) -> Answer {
    let answer = match (method, business_of(path)) {
        ("POST", Some(business)) => take(app, &business.to_ascii_lowercase(), headers, body),
        ("GET", Some(business)) => match verify(app, &business.to_ascii_lowercase(), query.unwrap_or("")) {
            Ok(challenge) => {
                return Answer { status: 200, content_type: "text/plain; charset=utf-8", body: challenge, headers: Vec::new(), operation: "providerEventsVerify", download: None };
            }
            Err(f) => Err(f),
        },
        ("POST" | "GET", None) => Err(Failure::new(404, "not_found", "route_not_found", "no such route")),
        _ => Err(Failure::new(405, "validation", "method_not_allowed", "use POST (webhooks) or GET (the address check)").with_header("Allow", "GET, POST".into())),
    };
    Answer::of_route(answer, 200, "providerEvents", request_id)
}

fn no_plugin() -> Failure {
    Failure::new(404, "not_found", "provider_events_not_accepted", "this business's messaging adapter takes no webhooks")
}

/// The business's messenger plugin and its settings; the embedded sandbox
/// pushes nothing and verifies nothing.
fn plugin_of(app: &App, conn: &crate::db::Connection, business: &str) -> Result<(std::sync::Arc<crate::engine::providers::messenger::Messenger>, crate::engine::providers::Settings), Failure> {
    let (plugin, settings) = match app.components.providers().messenger_for(conn, business) {
        Ok(p) => p,
        Err(crate::engine::providers::Unavailable::NotConfigured) => return Err(no_plugin()),
        Err(u) => {
            let (code, message, _) = u.describe("messenger");
            return Err(Failure::new(503, "capacity", &code, message).retryable(true));
        }
    };
    if !plugin.is_plugin() {
        return Err(no_plugin());
    }
    Ok((plugin, settings))
}

/// The provider's check of the address: the plugin's answer (the challenge).
fn verify(app: &App, business: &str, query: &str) -> Result<String, Failure> {
    let db = app.db_for(business)?;
    let conn = db.conn().map_err(|_| crate::pipeline::unavailable())?;
    let (plugin, settings) = plugin_of(app, &conn, business)?;
    let query: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes()).into_owned().take(32).collect();
    plugin.verify(settings, query).map_err(|e| match e.code.as_str() {
        "verification_refused" => Failure::authorization("verification_refused", "the verify token is not this business's"),
        "not_supported" => Failure::new(404, "not_found", "provider_verification_not_supported", "this business's messaging adapter verifies no webhook address (is its verify token set?)"),
        _ if e.retryable => Failure::new(503, "capacity", "provider_events_unavailable", "the messaging adapter could not answer the check; try again").retryable(true),
        _ => Failure::validation("provider_events_invalid", format!("the messaging adapter could not answer the check: {}", e.code)),
    })
}

fn take(app: &App, business: &str, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<serde_json::Value, Failure> {
    let unavailable = crate::pipeline::unavailable;
    let db = app.db_for(business)?;
    let conn = db.conn().map_err(|_| unavailable())?;
    let (plugin, settings) = plugin_of(app, &conn, business)?;
    let pushed = plugin.receive(settings, headers, body).map_err(|e| match e.code.as_str() {
        "signature_invalid" => Failure::new(401, "authentication", "signature_invalid", "the body is not signed by the provider"),
        "not_supported" => no_plugin(),
        _ if e.retryable => Failure::new(503, "capacity", "provider_events_unavailable", "the messaging adapter could not read the webhook; send it again").retryable(true),
        _ => Failure::validation("provider_events_invalid", format!("the messaging adapter could not read the webhook: {}", e.code)),
    })?;
    let gate = db.write_gate(std::time::Duration::from_secs(10)).ok_or_else(unavailable)?;
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
                db::params![
                    business,
                    &p.provider_message_id,
                    &r.status,
                    r.provider_status.chars().take(64).collect::<String>(),
                    failure.map(|f| f.code.chars().take(64).collect::<String>()),
                    failure.map(|f| f.message.chars().take(500).collect::<String>()),
                    crate::clock::now_ms(),
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
        match crate::admin::enqueue_inbound(&db, Some(business), &inbound) {
            Ok(_) => messages += 1,
            Err(InboundRefusal::Invalid(why)) | Err(InboundRefusal::NotConnected(why)) => {
                // One bad message does not make the provider resend the rest.
                tracing::warn!(businessId = %business, why = %why, "provider webhook: a message was not taken");
            }
            Err(InboundRefusal::Storage(_)) => return Err(unavailable()),
        }
    }
    let signals = take_signals(&db, business, &pushed)?;
    let received = pushed.statuses.len() + pushed.messages.len() + pushed.comments.len() + pushed.reactions.len() + pushed.referrals.len();
    Ok(serde_json::json!({"received": received, "taken": taken, "messages": messages, "signals": signals}))
}

/// Photoapp comments, reactions and referrals enter as the sandbox's do
/// (a durable job each, to accounts connected to this business only); a
/// comment pushed twice is stored once by its id. Returns how many were
/// queued.
fn take_signals(db: &crate::db::Db, business: &str, pushed: &crate::engine::providers::messenger::Pushed) -> Result<u32, Failure> {
    // The provider's times (ms) as the signals' RFC 3339 ones.
    let time = |ms: Option<i64>| ms.and_then(crate::admin::signal_time_of_ms);
    let comment_times: Vec<Option<String>> = pushed.comments.iter().map(|c| time(c.occurred_at_ms)).collect();
    let reaction_times: Vec<Option<String>> = pushed.reactions.iter().map(|r| time(r.occurred_at_ms)).collect();
    let comments = pushed.comments.iter().zip(&comment_times).map(|(c, at)| {
        let s = PhotoappSignal::Comment { text: &c.text, name: c.name.as_deref(), post_id: c.post_id.as_deref(), comment_id: Some(&c.comment_id), occurred_at: at.as_deref() };
        (c.recipient_id.as_str(), c.sender.as_str(), s)
    });
    let reactions = pushed.reactions.iter().zip(&reaction_times).map(|(r, at)| {
        let s = PhotoappSignal::Reaction { reaction: &r.reaction, message_id: r.message_id.as_deref(), removed: r.removed, occurred_at: at.as_deref() };
        (r.recipient_id.as_str(), r.sender.as_str(), s)
    });
    let referrals = pushed.referrals.iter().map(|r| {
        let s = PhotoappSignal::Referral { source: &r.source, ad_id: r.ad_id.as_deref(), post_id: r.post_id.as_deref() };
        (r.recipient_id.as_str(), r.sender.as_str(), s)
    });
    let mut queued = 0u32;
    for (account, from, signal) in comments.chain(reactions).chain(referrals) {
        match crate::admin::enqueue_photoapp_signal(db, Some(business), account, from, &signal) {
            Ok(_) => queued += 1,
            Err(InboundRefusal::Invalid(why)) | Err(InboundRefusal::NotConnected(why)) => {
                tracing::warn!(businessId = %business, why = %why, "provider webhook: a photoapp signal was not taken");
            }
            Err(InboundRefusal::Storage(_)) => return Err(crate::pipeline::unavailable()),
        }
    }
    Ok(queued)
}

/// Makes the message's delivery job run now: its pending job is brought
/// forward, or (it finished, or is running) a new one is queued in the
/// message's lane, so two steps never move one message at once.
fn wake_delivery(conn: &db::Connection, business: &str, provider_message_id: &str) -> anyhow::Result<()> {
    let Some(message_id) = messaging::outbound_by_provider_id(&crate::admin::areas::Tx(conn), business, provider_message_id)? else { return Ok(()) };
    if switchboard_jobs::wake_lane(conn, &delivery_lane(&message_id), crate::clock::now_ms())? == 0 {
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
