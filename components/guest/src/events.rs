//! Webhook events as every area emits them: the contract version, the event
//! outbox (job kind `webhooks.deliver`) and the one fan-out of an event to
//! the subscriptions that want it.
//!
//! The outbox kind ([`WebhooksJob`], with its payload [`Delivery`]) is
//! declared with every kind in `switchboard-job-kinds`; it is enqueued here,
//! in the shared library, rather than in the webhooks area: every area that
//! emits events enqueues it (messaging today, voice and campaigns next), and
//! no area imports another. The webhooks area runs it
//! (`components/webhooks/src/jobs/deliver.rs`) and owns the subscriptions it
//! reads.

use serde_json::Value;
pub use switchboard_job_kinds::webhooks::{Delivery, WebhooksJob};

use crate::db;
use crate::job;
use crate::{params, Failure};

/// `contractVersion` of every event payload and the
/// `X-Service-Contract-Version` header of every delivery.
pub const CONTRACT_VERSION: &str = "1.1";

/// True when a subscription's `events_json` includes `event_type`.
pub fn wants(events_json: &str, event_type: &str) -> bool {
    serde_json::from_str::<Vec<String>>(events_json).is_ok_and(|e| e.iter().any(|e| e == event_type))
}

/// The fan-out of one event, called inside the transaction of the change
/// that caused it: one `webhooks.deliver` job (the outbox row) per
/// subscription of that `channel` and sender (chatapp phone number or
/// photoapp account) that includes `event_type` and is active or paused (a
/// paused subscription holds its events; the delivery job decides).
/// `payload` has no `retryNumber`: each attempt adds it.
pub fn fan_out(biz: &str, channel: &str, sender_id: &str, event_type: &str, event_id: &str, payload: &Value) -> Result<(), Failure> {
    // A subscription names exactly one of the two (a CHECK of the table).
    let subscriptions: Vec<(String, String)> = db::query_as(
        "SELECT id, events_json FROM webhook_subscriptions \
         WHERE business_id = ?1 AND channel = ?2 AND IFNULL(phone_number_id, provider_account_id) = ?3 \
           AND status IN ('active', 'paused') ORDER BY id",
        &params![biz, channel, sender_id],
    )?;
    for (subscription_id, _) in subscriptions.into_iter().filter(|(_, events)| wants(events, event_type)) {
        let delivery = Delivery { subscription_id, event_id: event_id.to_string(), attempt: 0, payload: payload.clone(), first_attempt: 0 };
        job::enqueue(biz, &WebhooksJob::Deliver(delivery))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobKind;
    use serde_json::json;

    #[test]
    fn event_filter() {
        let e = "chatapp.message.received";
        assert!(wants(r#"["chatapp.message.sent","chatapp.message.received"]"#, e));
        assert!(!wants(r#"["chatapp.message.sent"]"#, e));
        assert!(!wants(r#"["chatapp.message.received.x"]"#, e));
        assert!(!wants("not json", e));
    }

    #[test]
    fn the_outbox_row_keeps_its_shape() {
        let d = Delivery { subscription_id: "s1".into(), event_id: "e1".into(), attempt: 0, payload: json!({"eventId": "e1", "a": 1}), first_attempt: 0 };
        let job = WebhooksJob::Deliver(d);
        let (kind, payload) = job.to_row();
        assert_eq!(kind, "webhooks.deliver");
        assert_eq!(payload, r#"{"subscriptionId":"s1","eventId":"e1","attempt":0,"payload":{"eventId":"e1","a":1}}"#);
        // A redelivery says where its schedule starts; rows without it start at 0.
        let again = Delivery { attempt: 3, first_attempt: 3, ..Delivery::default() };
        let row = serde_json::to_string(&again).unwrap();
        assert!(row.contains(r#""firstAttempt":3"#), "{row}");
        let old: Delivery = serde_json::from_str(r#"{"subscriptionId":"s1","eventId":"e1","attempt":2,"payload":{}}"#).unwrap();
        assert_eq!(old.first_attempt, 0);
        let o = job.options();
        assert!(o.calls_out);
        assert_eq!(o.lane.as_deref(), Some("webhooks:s1"));
    }
}
