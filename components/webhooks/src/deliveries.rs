//! listWebhookDeliveries and redeliverWebhookEvent (operations of ours beyond
//! the contract's 54): a subscription's delivery log, newest first, and one
//! event sent again on demand.
//!
//! The log is `webhook_attempts`, written by the delivery job: one row per
//! attempt with the event's id and type, its `retryNumber`, the time, the
//! receiver's status code or the network error, and the latency. The first
//! attempt of a delivery also keeps the event (without `retryNumber`), which
//! is what a redelivery sends: the same `eventId` and body, signed with the
//! subscription's current secret, `retryNumber` one past the event's last
//! attempt, on a fresh retry schedule, after the subscription's earlier
//! deliveries (its delivery lane keeps their order). The host purges the
//! log after its retention (`serve --webhook-log-retention-days`, 30 by
//! default): an event whose first attempt went is then `404
//! event_not_found`, like one never sent.

use serde::Deserialize;
use serde_json::{json, Value as J};
use switchboard_guest::db;
use switchboard_guest::events::{Delivery, WebhooksJob};
use switchboard_guest::{fail, job, page, params, req, success, HResult, Request, Success};

use crate::subscriptions::{load, path_id, revoked};

fn outcome(status: Option<i64>, error: Option<&str>) -> &'static str {
    match (status, error) {
        (Some(s), _) if (200..300).contains(&s) => "delivered",
        (Some(_), _) => "rejected",
        (None, Some(e)) if e.starts_with("interrupted") => "interrupted",
        _ => "failed",
    }
}

/// One page of the subscription's attempts, newest first; `eventId`
/// narrows it to one event.
pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let id = path_id(req)?;
    load(biz, id)?;
    let mut sql = String::from(
        "SELECT id, event_id, IFNULL(event_type, ''), retry_number, attempted_at, status_code, error, latency_ms \
         FROM webhook_attempts WHERE business_id = ?1 AND subscription_id = ?2",
    );
    let mut params = params![biz, id];
    if let Some(event) = req::query_nonempty(req, "eventId") {
        sql += " AND event_id = ?3";
        params.push(event.into());
    }
    type Attempt = (String, String, String, i64, String, Option<i64>, Option<String>, Option<i64>);
    let (rows, next) = page::by_id_newest_first::<Attempt>(req, &sql, params, "id")?;
    let attempts: Vec<J> = rows
        .into_iter()
        .map(|(id, event_id, event_type, retry_number, attempted_at, status, error, latency_ms)| {
            json!({
                "id": id,
                "eventId": event_id,
                "eventType": event_type,
                "retryNumber": retry_number,
                "attemptedAt": attempted_at,
                "outcome": outcome(status, error.as_deref()),
                "statusCode": status,
                "error": error,
                "latencyMs": latency_ms,
            })
        })
        .collect();
    success(200, &json!({"attempts": attempts, "nextCursor": next}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RedeliverBody {
    event_id: String,
}

/// Queues the event again for this subscription: 202 with the
/// `retryNumber` its first new attempt will carry.
pub fn redeliver(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let id = path_id(req)?;
    let sub = load(biz, id)?;
    if sub.status == "revoked" {
        return Err(revoked(id));
    }
    let body: RedeliverBody = req::body(req)?;
    let Some((payload, last_retry)) = db::query_one_as::<(String, i64)>(
        "SELECT payload_json, (SELECT MAX(retry_number) FROM webhook_attempts \
                               WHERE business_id = ?1 AND subscription_id = ?2 AND event_id = ?3) \
         FROM webhook_attempts WHERE business_id = ?1 AND subscription_id = ?2 AND event_id = ?3 AND payload_json IS NOT NULL \
         ORDER BY id LIMIT 1",
        &params![biz, id, &body.event_id],
    )?
    else {
        // Never sent to this subscription, or its log was purged (the
        // host's retention, `serve --webhook-log-retention-days`).
        return Err(fail::not_found(
            "event_not_found",
            format!(
                "no delivery of event `{}` to this subscription is in its log: it was never sent to it, or its log was purged after the server's retention (30 days unless the operator set another)",
                body.event_id.chars().take(80).collect::<String>()
            ),
        ));
    };
    let payload: J = serde_json::from_str(&payload).map_err(|_| fail::internal("logged_event_unreadable", "a logged event could not be read"))?;
    let next = last_retry as u64 + 1;
    let delivery = Delivery { subscription_id: id.to_string(), event_id: body.event_id.clone(), attempt: next, payload, first_attempt: next };
    job::enqueue(biz, &WebhooksJob::Deliver(delivery))?;
    success(202, &json!({"subscriptionId": id, "eventId": body.event_id, "retryNumber": next, "status": sub.status}))
}
