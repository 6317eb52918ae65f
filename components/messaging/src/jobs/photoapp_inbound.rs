//! `messaging.photoapp-inbound`: one inbound photoapp direct message,
//! enqueued durably by the provider's inbound webhook (today the sandbox:
//! `switchboard admin sandbox inbound --channel photoapp` or the sandbox
//! route). In the job's one fenced transaction:
//!
//! 1. a provider message id already stored is a redelivery: done;
//! 2. the conversation of (account, photoapp user) is found or created; a
//!    photoapp user has no mobile, so it starts as a *participant* without a
//!    contact (`contact_id` NULL) until operation 34 links it to a
//!    mobile-first contact; the user's handle is kept as `participant_name`;
//! 3. the message is stored (`inbound`, `text`, `received`) and, when the
//!    participant is linked, appended to the contact's timeline;
//! 4. `photoapp.message.received` is fanned out to the account's
//!    subscriptions that include it ([`event_payload`], our shape: the
//!    contract leaves photoapp payloads open).
//!
//! From then on the business may answer this user (`sendMessage`, photoapp
//! shape), and the account's assigned agent answers it when the service owns
//! the replies (autoreply.rs, as for chatapp).

use serde_json::json;
use switchboard_channel_connections::Channel;
use switchboard_guest::job::run_step;
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{events, now, Failure};

use crate::conversation;

pub const EVENT: &str = "photoapp.message.received";

/// The payload, declared with the kind in `switchboard-job-kinds` (the host
/// writes it too: `crates/admin/src/lib.rs` `enqueue_inbound`).
pub use switchboard_guest::job_kinds::messaging::PhotoappInbound as Payload;

pub fn run(job: &Job, p: Payload) -> Outcome {
    if p.provider_message_id.is_empty() || p.account_id.is_empty() || p.from.is_empty() {
        return Outcome::Dead("invalid payload: empty `providerMessageId`, `accountId` or `from`".into());
    }
    run_step("during inbound photoapp message", || process(&job.business_id, &p));
    Outcome::Done
}

/// The `photoapp.message.received` payload, without `retryNumber`.
#[allow(clippy::too_many_arguments)]
pub fn event_payload(
    biz: &str,
    account: &str,
    conversation_id: &str,
    contact_id: Option<&str>,
    provider_message_id: &str,
    occurred_at: &str,
    user: (&str, Option<&str>),
    text: &str,
) -> serde_json::Value {
    json!({
        "contractVersion": events::CONTRACT_VERSION,
        "eventId": provider_message_id,
        "eventType": EVENT,
        "occurredAt": occurred_at,
        "businessId": biz,
        "providerAccountId": account,
        "channel": "photoapp",
        "conversationId": conversation_id,
        "participantId": conversation_id,
        "providerMessageId": provider_message_id,
        "customer": {"photoappUserId": user.0, "username": user.1, "contactId": contact_id},
        "message": {"type": "text", "text": text},
    })
}

fn process(biz: &str, p: &Payload) -> Result<(), Failure> {
    let pmid = p.provider_message_id.as_str();
    if conversation::already_stored(biz, pmid)? {
        return Ok(());
    }
    let now = now();
    let name = super::inbound::profile_name(p.name.as_deref());

    let c = conversation::start_photoapp_participant(biz, &p.account_id, &p.from, name.as_deref(), &now)?;

    let Some(message_id) = conversation::store_inbound(&conversation::InboundText {
        business: biz,
        channel: Channel::Photoapp,
        conversation_id: &c.conversation_id,
        contact_id: c.contact_id.as_deref(),
        text: &p.text,
        provider_message_id: pmid,
        now: &now,
    })?
    else {
        return Ok(());
    };
    // The agent's reply, when the service answers this account (autoreply.rs).
    super::autoreply::maybe_enqueue(biz, Channel::Photoapp, &p.account_id, &message_id)?;
    let event = event_payload(biz, &p.account_id, &c.conversation_id, c.contact_id.as_deref(), pmid, &now, (&p.from, c.name.as_deref()), &p.text);
    events::fan_out(biz, "photoapp", &p.account_id, EVENT, pmid, &event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_shape() {
        let p = event_payload("b", "acct-1", "c", None, "pm.1", "2026-01-01T00:00:00.000Z", ("u-42", Some("ada.l")), "hi");
        assert_eq!(p["eventType"], EVENT);
        assert_eq!(p["participantId"], "c");
        assert_eq!(p["customer"], json!({"photoappUserId": "u-42", "username": "ada.l", "contactId": null}));
        assert!(p.get("retryNumber").is_none());
        assert!(p.get("phoneNumberId").is_none());
    }
}
