//! `messaging.deliver`: the sandbox messenger, the embedded default provider
//! for outbound chatapp messages queued by `sendMessage`.
//!
//! Each run is one step in the job's fenced transaction and moves the message
//! one status on, `queued → submitted → accepted → sent → delivered → read`,
//! setting the status's timestamp (`submitted` names the provider message
//! `sbx.<uuid>`), then continues after `stepDelayMs` (payload, default 20 ms;
//! 0 allowed). On `sent`, `delivered`, `read` and `failed` it fans the
//! matching `chatapp.message.*` delivery event out to the webhook
//! subscriptions of the phone number that list it, in the same transaction.
//!
//! Documented rules on the recipient number:
//! * ending in `0000`: `failed` after `accepted`, failure code
//!   `recipient_unreachable`;
//! * ending in `1111`: stops at `delivered` (never read);
//! * otherwise: ends `read`.
//!
//! A step that finds the message already terminal (`read`, `failed`, or
//! `delivered` for a 1111 number) is done; a retried step starts from the
//! stored status, so no status and no event is produced twice.

use serde_json::{json, Value};
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{new_id, now, Failure};

use crate::bindings::exports::switchboard::platform::job_handler::{Continuation, Job, Outcome};
use crate::webhook_delivery;

pub const KIND: &str = "messaging.deliver";
pub const DEFAULT_STEP_DELAY_MS: u64 = 20;
pub const UNREACHABLE_SUFFIX: &str = "0000";
pub const NO_READ_SUFFIX: &str = "1111";

/// The status after `status` for `recipient`, with the event it emits; `None` when terminal.
pub fn next(status: &str, recipient: &str) -> Option<(&'static str, bool)> {
    match status {
        "queued" => Some(("submitted", false)),
        "submitted" => Some(("accepted", false)),
        "accepted" if recipient.ends_with(UNREACHABLE_SUFFIX) => Some(("failed", true)),
        "accepted" => Some(("sent", true)),
        "sent" => Some(("delivered", true)),
        "delivered" if recipient.ends_with(NO_READ_SUFFIX) => None,
        "delivered" => Some(("read", true)),
        _ => None,
    }
}

pub fn run(job: &Job) -> Outcome {
    let Ok(payload) = serde_json::from_str::<Value>(&job.payload_json) else {
        return Outcome::Dead("invalid payload".into());
    };
    let Some(message_id) = payload["messageId"].as_str() else {
        return Outcome::Dead("invalid payload: no `messageId`".into());
    };
    let delay = payload["stepDelayMs"].as_u64().unwrap_or(DEFAULT_STEP_DELAY_MS);
    match step(&job.business_id, message_id) {
        Ok(true) => Outcome::Continue(Continuation { delay_ms: delay, payload_json: job.payload_json.clone() }),
        Ok(false) => Outcome::Done,
        // A trap rolls the step back; the runner retries it with backoff.
        Err(f) => panic!("store error during message delivery: {} {}", f.code, f.message),
    }
}

/// One status move; `Ok(true)` when there is more to do.
fn step(biz: &str, message_id: &str) -> Result<bool, Failure> {
    let Some(m) = db::query_one(
        "SELECT status, recipient, phone_number_id, conversation_id, provider_message_id FROM messages \
         WHERE business_id = ?1 AND id = ?2 AND direction = 'outbound'",
        &[biz.into(), message_id.into()],
    )?
    else {
        return Ok(false);
    };
    let (status, recipient) = (m.text(0), m.text(1));
    let Some((to, emits)) = next(&status, &recipient) else { return Ok(false) };
    let now = now();
    let column = match to {
        "submitted" => "submitted_at",
        "accepted" => "accepted_at",
        "sent" => "sent_at",
        "delivered" => "delivered_at",
        "read" => "read_at",
        _ => "failed_at",
    };
    let provider_id = m.opt_text(4).unwrap_or_else(|| format!("sbx.{}", new_id()));
    let (code, text) = if to == "failed" {
        (Some("recipient_unreachable"), Some("the recipient's number is not reachable on chatapp"))
    } else {
        (None, None)
    };
    db::execute(
        &format!(
            "UPDATE messages SET status = ?3, provider_status = ?3, {column} = ?4, provider_message_id = ?5, \
             failure_code = IFNULL(?6, failure_code), failure_message = IFNULL(?7, failure_message) \
             WHERE business_id = ?1 AND id = ?2"
        ),
        &[biz.into(), message_id.into(), to.into(), now.as_str().into(), provider_id.as_str().into(), code.into(), text.into()],
    )?;
    if emits {
        let r = db::query_one(
            "SELECT sent_at, delivered_at, read_at, failed_at, failure_code, failure_message FROM messages WHERE business_id = ?1 AND id = ?2",
            &[biz.into(), message_id.into()],
        )?
        .expect("message exists");
        let failure = if to == "failed" { json!({"code": r.opt_text(4), "message": r.opt_text(5)}) } else { Value::Null };
        let pnid = m.opt_text(2).unwrap_or_default();
        let event_type = format!("chatapp.message.{to}");
        let event_id = format!("{message_id}.{to}");
        let event = json!({
            "contractVersion": webhook_delivery::CONTRACT_VERSION,
            "eventId": event_id,
            "eventType": event_type,
            "occurredAt": now,
            "businessId": biz,
            "phoneNumberId": pnid,
            "channel": "chatapp",
            "conversationId": m.opt_text(3),
            "messageId": message_id,
            "providerMessageId": provider_id,
            "recipient": {"mobileE164": recipient},
            "delivery": {
                "status": to,
                "providerStatus": to,
                "sentAt": r.opt_text(0),
                "deliveredAt": r.opt_text(1),
                "readAt": r.opt_text(2),
                "failedAt": r.opt_text(3),
                "failure": failure,
            },
        });
        webhook_delivery::fan_out(biz, &pnid, &event_type, &event_id, &event)?;
    }
    Ok(next(to, &recipient).is_some())
}

#[cfg(test)]
mod tests {
    use super::next;

    fn life(recipient: &str) -> Vec<&'static str> {
        let mut s = "queued";
        let mut out = vec![];
        while let Some((n, _)) = next(s, recipient) {
            out.push(n);
            s = n;
        }
        out
    }

    #[test]
    fn recipient_rules() {
        assert_eq!(life("+15550001234"), ["submitted", "accepted", "sent", "delivered", "read"]);
        assert_eq!(life("+15550000000"), ["submitted", "accepted", "failed"]);
        assert_eq!(life("+15550001111"), ["submitted", "accepted", "sent", "delivered"]);
        assert_eq!(next("read", "+15550001234"), None);
        assert_eq!(next("failed", "+15550001234"), None);
    }
}
