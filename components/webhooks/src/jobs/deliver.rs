//! `webhooks.deliver`: one signed POST of one event to one subscription.
//!
//! The job payload is the outbox row ([`Delivery`]), written by
//! `switchboard_guest::events::fan_out` in the same transaction as the
//! change that caused the event: `{subscriptionId, eventId, attempt, payload}`
//! where `payload` is the event without `retryNumber`. Each step reads the
//! subscription as it is now (current secret, URL, status), signs
//! `<timestamp>.<body>` with HMAC-SHA256 and POSTs. A 2xx finishes; anything
//! else is retried on the host's schedule with the same event id and a
//! rising `retryNumber`. Every POST is signed twice, with the same
//! timestamp: the contract's `X-Service-*` headers and the Standard
//! Webhooks ones (`webhook-id`, `webhook-timestamp`, `webhook-signature`;
//! see [`standard_signature`]). A paused subscription holds its events (checked
//! again every few seconds, no attempt counted) and gets them on resume; a
//! revoked one drops them. This kind runs in the runner's network mode: the
//! POST happens before the step's first write, so no lock is held across
//! it, and the attempt record commits with the job's fenced completion: one
//! write transaction per delivery. The runner may hand the step several
//! deliveries of one business at once ([`run_many`]): their POSTs go out
//! together, then their records are written, each as alone.

use hmac::{Hmac, Mac};
use serde_json::{json, Map, Value};
use sha2::Sha256;
use switchboard_guest::db;
use switchboard_guest::events::{Delivery, WebhooksJob, CONTRACT_VERSION};
use switchboard_guest::http_out;
use switchboard_guest::job::AreaJob;
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{clock, ids, log, params};

/// How often a paused subscription is checked for resumption.
const PAUSED_RECHECK_MS: u64 = 5_000;

pub fn run(job: &Job, outbox: Delivery) -> Outcome {
    run_many(vec![(job, outbox)]).pop().expect("one outcome per delivery")
}

/// Several deliveries (of one business, each of its own subscription) in
/// one step: each is read and signed as [`run`] does, then every POST goes
/// out at once (`http-out.post-many`), and only then is anything written:
/// the steps' writes still come after their calls. Each delivery's outcome,
/// attempt record, key and retry schedule are what [`run`] gives it alone.
pub fn run_many(deliveries: Vec<(&Job, Delivery)>) -> Vec<Outcome> {
    let prepared: Vec<(&Job, Prepared)> = deliveries.into_iter().map(|(job, outbox)| (job, prepare(job, outbox))).collect();
    let posts: Vec<http_out::OutboundPost> = prepared
        .iter()
        .filter_map(|(_, p)| match p {
            Prepared::Send(s) => Some(http_out::OutboundPost { url: s.url.clone(), headers: s.headers.clone(), body: s.body.clone() }),
            _ => None,
        })
        .collect();
    let mut sent = if posts.is_empty() { Vec::new() } else { http_out::post_many(&posts) }.into_iter();
    prepared
        .into_iter()
        .map(|(job, p)| {
            let result = match &p {
                Prepared::Send(_) => Some(sent.next().unwrap_or(http_out::PostOutcome { status: Err("network error".into()), elapsed_ms: 0 })),
                _ => None,
            };
            finish(job, p, result)
        })
        .collect()
}

/// A delivery read and judged, before its POST and before any write.
enum Prepared {
    /// Answered without an attempt (held while paused or unreadable,
    /// dropped when revoked or gone).
    Answered(Outcome),
    /// A second claim of the same payload: the attempt before was
    /// interrupted (see [`prepare`]); recorded as such, no POST.
    Interrupted(Delivery),
    /// The signed POST to send.
    Send(Signed),
}

/// One attempt's signed request.
struct Signed {
    outbox: Delivery,
    url: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// Reads the subscription as it is now and signs the attempt; reads only.
fn prepare(job: &Job, outbox: Delivery) -> Prepared {
    let attempt = outbox.attempt;
    let sub_id = outbox.subscription_id.clone();
    let event_id = outbox.event_id.clone();
    // The secret is NULL only once revoked.
    let row = match db::query_one_as::<(String, String, Option<String>)>(
        "SELECT status, callback_url, signing_secret FROM webhook_subscriptions WHERE business_id = ?1 AND id = ?2",
        &params![&job.business_id, &sub_id],
    ) {
        Ok(r) => r,
        Err(_) => return Prepared::Answered(hold(outbox, PAUSED_RECHECK_MS)),
    };
    let Some((status, url, secret)) = row else { return Prepared::Answered(Outcome::Done) };
    match status.as_str() {
        "active" => {}
        "paused" => return Prepared::Answered(hold(outbox, PAUSED_RECHECK_MS)),
        // Revoked: dropped for good.
        _ => return Prepared::Answered(Outcome::Done),
    }
    let secret = secret.unwrap_or_default();
    // Never two requests under one key, so `retryNumber` keeps rising: the
    // claim that started this step committed before it ran and counted
    // itself (`job.attempt`), and every run of this kind that ends moves
    // the payload on (done, dropped, or held with the count reset). A
    // second claim of the same payload therefore means the first ended
    // mid-way (a crash, a lost lease, a trap, its deadline), perhaps after
    // its POST went out: that attempt counts as interrupted and the next
    // one gets a new key. (This takes the place of an effect record
    // committed before every POST: it was half of a delivery's write
    // transactions. A stale node's late completion is refused by its fence.)
    if job.attempt > 1 {
        return Prepared::Interrupted(outbox);
    }
    let key = delivery_key(job, attempt);
    let body = with_retry_number(&outbox.payload, attempt);
    let timestamp = (clock::now_ms() / 1000).to_string();
    let mut headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        ("User-Agent".to_string(), "Switchboard-Webhooks/1".to_string()),
        ("X-Service-Timestamp".to_string(), timestamp.clone()),
        ("X-Service-Signature".to_string(), sign(&secret, &timestamp, &body)),
        ("X-Service-Event-Id".to_string(), event_id.clone()),
        ("X-Service-Contract-Version".to_string(), CONTRACT_VERSION.to_string()),
        ("Idempotency-Key".to_string(), key),
    ];
    // Our secrets always read as a Standard Webhooks key; one that did not
    // (none is stored so) goes out with the contract's signature alone.
    if let Some(signature) = standard_signature(&secret, &event_id, &timestamp, &body) {
        headers.push(("webhook-id".to_string(), event_id.clone()));
        headers.push(("webhook-timestamp".to_string(), timestamp.clone()));
        headers.push(("webhook-signature".to_string(), signature));
    }
    Prepared::Send(Signed { outbox, url, headers, body })
}

/// What a prepared delivery comes to, with its POST's outcome when it sent
/// one: the attempt's record (the step's writes) and the job's outcome.
fn finish(job: &Job, prepared: Prepared, sent: Option<http_out::PostOutcome>) -> Outcome {
    match prepared {
        Prepared::Answered(outcome) => outcome,
        Prepared::Interrupted(outbox) => {
            let outcome = Attempted { status: None, error: Some("interrupted: the outcome of this attempt is unknown"), latency_ms: None };
            record_attempt(job, &outbox, outcome);
            let attempt = outbox.attempt;
            next_attempt(outbox, attempt)
        }
        Prepared::Send(Signed { outbox, .. }) => {
            let http_out::PostOutcome { status: result, elapsed_ms } = sent.unwrap_or(http_out::PostOutcome { status: Err("network error".into()), elapsed_ms: 0 });
            let latency_ms = Some(elapsed_ms as i64);
            let outcome = match &result {
                Ok(code) => Attempted { status: Some(*code as i64), error: None, latency_ms },
                Err(e) => Attempted { status: None, error: Some(e.as_str()), latency_ms },
            };
            record_attempt(job, &outbox, outcome);
            if matches!(result, Ok(code) if (200..300).contains(&code)) {
                return Outcome::Done;
            }
            let attempt = outbox.attempt;
            next_attempt(outbox, attempt)
        }
    }
}

/// The idempotency key of one attempt (sent as `Idempotency-Key`): the
/// delivery job and the attempt's number, so every attempt has its own and
/// no two requests ever carry the same one.
fn delivery_key(job: &Job, attempt: u64) -> String {
    format!("{}.{attempt}", job.id)
}

/// After a failed (or interrupted) attempt: the next one after the host's
/// delay, or dead when the schedule has run out.
fn next_attempt(mut outbox: Delivery, attempt: u64) -> Outcome {
    let delays = http_out::policy().retry_delays_ms;
    match delays.get(attempt.saturating_sub(outbox.first_attempt) as usize) {
        Some(delay) => {
            outbox.attempt = attempt + 1;
            hold(outbox, jitter(*delay))
        }
        None => Outcome::Dead(format!("no 2xx after {} attempts", attempt + 1)),
    }
}

/// Runs the job again later with `outbox` as its payload.
fn hold(outbox: Delivery, delay_ms: u64) -> Outcome {
    WebhooksJob::Deliver(outbox).continue_after(delay_ms)
}

/// The event with `retryNumber` placed after `eventId`, as the contract lists it.
pub fn with_retry_number(payload: &Value, retry: u64) -> String {
    let mut out = Map::new();
    if let Some(fields) = payload.as_object() {
        for (k, v) in fields {
            out.insert(k.clone(), v.clone());
            if k == "eventId" {
                out.insert("retryNumber".into(), json!(retry));
            }
        }
    }
    out.entry("retryNumber").or_insert(json!(retry));
    Value::Object(out).to_string()
}

/// Lowercase hex HMAC-SHA256 of `<timestamp>.<body>` keyed with the secret.
pub fn sign(secret: &str, timestamp: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The `webhook-signature` of the Standard Webhooks specification:
/// `v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<timestamp>.<body>`,
/// keyed with the secret as that specification reads a `whsec_` secret:
/// the base64 decoding of what follows the prefix. Ours are `whsec_` and 64
/// hex digits, which decode as base64 to a 48-byte key (the contract's
/// `X-Service-Signature` keys with the whole secret's bytes instead). The
/// id is the event's id, the same in every retry and redelivery, as the
/// specification asks. `None` for a secret that does not decode.
pub fn standard_signature(secret: &str, id: &str, timestamp: &str, body: &str) -> Option<String> {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    let key = STANDARD.decode(secret.strip_prefix("whsec_").unwrap_or(secret)).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("HMAC takes any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body.as_bytes());
    Some(format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes())))
}

/// ±10% so retries of many deliveries to one receiver spread out.
fn jitter(delay: u64) -> u64 {
    let b = ids::random_bytes(2);
    let r = u16::from_le_bytes([b[0], b[1]]) as i64; // 0..65535
    let spread = delay as i64 / 10;
    (delay as i64 + spread * (r - 32768) / 32768).max(0) as u64
}

/// What one attempt came to.
struct Attempted<'a> {
    /// The receiver's status code; none when there was no response.
    status: Option<i64>,
    /// Why there was no response (refused, connection, timeout, interrupted).
    error: Option<&'a str>,
    /// From sending to the answer or the error; none when interrupted.
    latency_ms: Option<i64>,
}

/// The delivery log's row of one attempt. The delivery's first attempt also
/// keeps the event, so it can be redelivered on demand.
fn record_attempt(job: &Job, outbox: &Delivery, a: Attempted) {
    let event_type = outbox.payload.get("eventType").and_then(Value::as_str).unwrap_or_default();
    let payload = (outbox.attempt == outbox.first_attempt).then(|| outbox.payload.to_string());
    let r = db::execute(
        "INSERT INTO webhook_attempts (id, business_id, subscription_id, event_id, retry_number, status_code, error, attempted_at, \
         event_type, latency_ms, payload_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        &params![ids::uuid_v7(), &job.business_id, &outbox.subscription_id, &outbox.event_id, outbox.attempt as i64, a.status, a.error, clock::now_rfc3339(), event_type, a.latency_ms, payload],
    );
    if r.is_err() {
        log::log(log::Level::Warn, "could not record a webhook attempt");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_number_follows_event_id() {
        let p = json!({"contractVersion": "1.1", "eventId": "e1", "eventType": "x"});
        assert_eq!(with_retry_number(&p, 2), r#"{"contractVersion":"1.1","eventId":"e1","retryNumber":2,"eventType":"x"}"#);
    }

    #[test]
    fn signature_is_hex_hmac_of_timestamp_dot_body() {
        // RFC 4231 test case 2 shape: key "Jefe", message "what do ya want for nothing?"
        let sig = sign("Jefe", "what do ya want ", "for nothing?");
        // "what do ya want " + "." + "for nothing?" is not the RFC text, so
        // check against a direct computation instead.
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want .for nothing?");
        assert_eq!(sig, hex::encode(mac.finalize().into_bytes()));
        assert_eq!(sig.len(), 64);
    }

    #[test]
    fn standard_signature_matches_the_specifications_example() {
        // The example of the Standard Webhooks reference libraries' tests.
        let sig = standard_signature("whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", "1649367553", r#"{"email":"test@example.com","username":"test_user"}"#);
        assert_eq!(sig.as_deref(), Some("v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="));
        // Ours: whsec_ and 64 hex digits, read as base64 (48 bytes).
        let ours = crate::rules::secret_from(&[7u8; 32]);
        assert!(standard_signature(&ours, "e1", "1", "{}").is_some_and(|s| s.starts_with("v1,") && s.len() == 3 + 44));
        assert_eq!(standard_signature("whsec_not base64!", "e1", "1", "{}"), None);
    }
}
