//! `messaging.inbound`: one inbound chatapp message, enqueued durably by the
//! provider's inbound webhook (today `switchboard admin sandbox inbound`).
//!
//! Everything happens in the job's one fenced transaction, so a crash or a
//! stale fence leaves nothing half done and the retry starts over:
//!
//! 1. a provider message id already stored is a redelivery: done;
//! 2. the contact is resolved by mobile or created, concurrency-safe, with
//!    the business's "Inbound" category when new (`switchboard_guest::contact`,
//!    shared with outbound sends and participant links);
//! 3. the conversation (business, chatapp, phone number, contact) is found or
//!    created, the message stored (`inbound`, `text`, `received`) and a
//!    timeline entry appended;
//! 4. `chatapp.message.received` is fanned out with
//!    [`events::fan_out`] (one `webhooks.deliver` job per subscription that
//!    includes the event).
//!
//! 5. when no active (external-automation) subscription covers the number
//!    and its assigned agent auto-replies without a human handoff, a
//!    `messaging.autoreply` job is enqueued (autoreply.rs writes the reply).

use serde_json::json;
use switchboard_channel_connections::Channel;
use switchboard_guest::job::run_step;
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{contact, e164, events, now, Failure};

use crate::conversation;

pub const EVENT: &str = "chatapp.message.received";
/// The category every contact first seen through an inbound message gets.
pub const CATEGORY: &str = "Inbound";
const MAX_NAME_CHARS: usize = 200;

/// The payload, declared with the kind in `switchboard-job-kinds` (the host
/// writes it too: `crates/admin/src/lib.rs` `enqueue_inbound`).
pub use switchboard_guest::job_kinds::messaging::Inbound as Payload;

pub fn run(job: &Job, p: Payload) -> Outcome {
    let Some(mobile) = e164::normalize(&p.from) else {
        return Outcome::Dead("invalid payload: `from` is not an E.164 number".into());
    };
    if p.provider_message_id.is_empty() || p.phone_number_id.is_empty() {
        return Outcome::Dead("invalid payload: empty `providerMessageId` or `phoneNumberId`".into());
    }
    run_step("during inbound message", || process(&job.business_id, &p, &mobile));
    Outcome::Done
}

/// The provider's profile name (chatapp) or handle (photoapp): trimmed, at
/// most 200 characters; `None` when absent or blank.
pub fn profile_name(name: Option<&str>) -> Option<String> {
    name.map(str::trim).filter(|n| !n.is_empty()).map(|n| n.chars().take(MAX_NAME_CHARS).collect())
}

/// The contact name: the profile name, else the mobile.
pub fn contact_name(name: Option<&str>, mobile: &str) -> String {
    profile_name(name).unwrap_or_else(|| mobile.to_string())
}

/// The `chatapp.message.received` payload of the spec, without `retryNumber`.
#[allow(clippy::too_many_arguments)]
pub fn event_payload(biz: &str, phone_number_id: &str, conversation_id: &str, provider_message_id: &str, occurred_at: &str, mobile: &str, name: &str, text: &str) -> serde_json::Value {
    json!({
        "contractVersion": events::CONTRACT_VERSION,
        "eventId": provider_message_id,
        "eventType": EVENT,
        "occurredAt": occurred_at,
        "businessId": biz,
        "phoneNumberId": phone_number_id,
        "channel": "chatapp",
        "conversationId": conversation_id,
        "providerMessageId": provider_message_id,
        "customer": {
            "mobileE164": mobile,
            "chatappId": mobile.trim_start_matches('+'),
            "name": name,
        },
        "message": {"type": "text", "text": text},
    })
}

fn process(biz: &str, p: &Payload, mobile: &str) -> Result<(), Failure> {
    let pmid = p.provider_message_id.as_str();
    let pnid = p.phone_number_id.as_str();
    if conversation::already_stored(biz, pmid)? {
        return Ok(());
    }
    let now = now();

    // The contact, created at most once per (business, mobile), and the conversation.
    let name = contact_name(p.name.as_deref(), mobile);
    let c = contact::resolve(biz, mobile, &name, CATEGORY, &now)?;
    let (contact_id, stored_name) = (c.id, c.name);
    let conversation_id = conversation::conversation(biz, pnid, &contact_id, &now)?;

    // The message and its timeline entry.
    let Some(message_id) = conversation::store_inbound(&conversation::InboundText {
        business: biz,
        channel: Channel::Chatapp,
        conversation_id: &conversation_id,
        contact_id: Some(&contact_id),
        text: &p.text,
        provider_message_id: pmid,
        now: &now,
    })?
    else {
        return Ok(());
    };

    // The agent's reply, when the service answers this number (autoreply.rs).
    super::autoreply::maybe_enqueue(biz, Channel::Chatapp, pnid, &message_id)?;

    // Fan-out of `chatapp.message.received`, in the same transaction.
    let customer_name = profile_name(p.name.as_deref()).unwrap_or(stored_name);
    let event = event_payload(biz, pnid, &conversation_id, pmid, &now, mobile, &customer_name, &p.text);
    events::fan_out(biz, "chatapp", pnid, EVENT, pmid, &event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(contact_name(None, "+14155550123"), "+14155550123");
        assert_eq!(contact_name(Some("   "), "+14155550123"), "+14155550123");
        assert_eq!(contact_name(Some(" Ada "), "+14155550123"), "Ada");
        assert_eq!(contact_name(Some(&"x".repeat(300)), "+1").chars().count(), 200);
    }

    #[test]
    fn payload_shape() {
        let p = event_payload("b", "pn-1", "c", "wamid.1", "2026-01-01T00:00:00.000Z", "+14155550123", "Ada", "hi");
        assert_eq!(
            p,
            json!({
                "contractVersion": events::CONTRACT_VERSION, "eventId": "wamid.1", "eventType": "chatapp.message.received",
                "occurredAt": "2026-01-01T00:00:00.000Z", "businessId": "b", "phoneNumberId": "pn-1", "channel": "chatapp",
                "conversationId": "c", "providerMessageId": "wamid.1",
                "customer": {"mobileE164": "+14155550123", "chatappId": "14155550123", "name": "Ada"},
                "message": {"type": "text", "text": "hi"},
            })
        );
        assert!(p.get("retryNumber").is_none());
    }
}
