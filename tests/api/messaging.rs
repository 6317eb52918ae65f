//! Messaging (issue 4 points 1-4 and 9): media upload, message send, the
//! sandbox messenger's delivery states, the delivery events, and the
//! integration-owned reply flow end to end against a real receiver that
//! verifies every signature.

use crate::harness::*;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

const PNID: &str = "pn-messaging-1";
const SUBS: &str = "/api/v1/webhook-subscriptions";
const ALL_EVENTS: [&str; 5] = ["chatapp.message.received", "chatapp.message.sent", "chatapp.message.delivered", "chatapp.message.read", "chatapp.message.failed"];

/// The smallest valid PNG: one transparent pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

struct Ctx {
    s: Server,
    t: Tenant,
    dir: DataDir,
}

fn setup() -> Ctx {
    setup_with(&[])
}

fn setup_with(extra: &[&str]) -> Ctx {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, extra);
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", PNID]);
    Ctx { s, t, dir }
}

impl Ctx {
    fn k(&self) -> Req<'_> {
        self.s.as_key(&self.t.key)
    }
    fn upload(&self, mime: &str, content: &str) -> Resp {
        self.k().fresh().post(
            "/api/v1/media",
            &json!({"businessId": self.t.business, "phoneNumberId": PNID, "mediaType": "image", "mimeType": mime, "fileName": "reply.png",
                    "contentBase64": content}),
        )
    }
    fn send_text(&self, to: &str, text: &str) -> Resp {
        self.k().fresh().post("/api/v1/messages", &json!({"businessId": self.t.business, "phoneNumberId": PNID, "to": to, "type": "text", "text": text}))
    }
    fn message(&self, id: &str) -> Resp {
        self.k().get(&format!("/api/v1/messages/{id}?businessId={}", self.t.business))
    }
    /// Polls the delivery state until `status` (bounded).
    fn wait_status(&self, id: &str, status: &str) -> Value {
        let started = Instant::now();
        loop {
            let d = self.message(id).assert_ok(200).clone();
            if d["status"] == status && d["taskStatus"] == "done" {
                return d;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "message {id} never reached {status}: {d}");
            std::thread::sleep(Duration::from_millis(30));
        }
    }
}

#[test]
fn integration_owned_reply_flow_end_to_end() {
    let c = setup();
    let biz = c.t.business.clone();
    let rx = Receiver::start();
    let sub = c.k().post(SUBS, &json!({"businessId": biz, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": rx.url(), "events": ALL_EVENTS, "externalAutomation": true}));
    let secret = sub.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();

    // The customer writes; the integration receives the event.
    let customer = "+15550004242";
    admin(&c.dir.0, &["sandbox", "inbound", "--phone-number-id", PNID, "--from", customer, "--text", "do you have a photo?", "--name", "Ada"]);
    let got = rx.wait_for(1);
    assert!(verify(&got[0], &secret));
    let received = got[0].json();
    assert_eq!(received["eventType"], "chatapp.message.received");
    let conversation = received["conversationId"].as_str().unwrap().to_string();

    // Upload media (canonical base64 of a tiny valid PNG).
    let up = c.upload("image/png", &b64(PNG));
    let m = up.assert_ok(201).clone();
    let media_id = m["mediaId"].as_str().unwrap().to_string();
    assert_eq!(m["mediaType"], "image");
    assert_eq!(m["mimeType"], "image/png");
    assert_eq!(m["providerStatus"], "uploaded");
    let sha = m["contentSha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    assert_eq!(m["providerMediaId"], json!(format!("sbxm.{}", &sha[..16])));
    assert_eq!(m["correlationId"].as_str().unwrap().len(), 36);
    assert!(m["expiresAt"].as_str().unwrap() > m["uploadedAt"].as_str().unwrap());
    // The same bytes again reuse the cached provider media id.
    let again = c.upload("image/png", &b64(PNG));
    let again = again.assert_ok(201);
    assert_ne!(again["mediaId"], m["mediaId"]);
    assert_eq!(again["providerMediaId"], m["providerMediaId"]);
    assert_eq!(again["expiresAt"], m["expiresAt"]);

    // Send the image reply with an Idempotency-Key; a retry is the same message.
    let body = json!({"businessId": biz, "phoneNumberId": PNID, "to": customer, "type": "image", "mediaId": media_id, "caption": "here it is"});
    let first = c.k().idem("reply-1").post("/api/v1/messages", &body);
    let q = first.assert_ok(202).clone();
    assert_eq!(q["queued"], true);
    assert_eq!(q["providerMessageRef"], Value::Null);
    assert_eq!(q["taskRef"].as_str().unwrap().len(), 36);
    assert_eq!(q["correlationId"].as_str().unwrap().len(), 36);
    let message_id = q["messageId"].as_str().unwrap().to_string();
    let retry = c.k().idem("reply-1").post("/api/v1/messages", &body);
    assert_eq!(retry.assert_ok(202)["messageId"], json!(message_id));

    // sent, delivered, read, in order, each verified, deduplicated by event id.
    let started = Instant::now();
    let events = loop {
        let mut seen = HashSet::new();
        let evs: Vec<Value> = rx
            .got()
            .iter()
            .filter(|d| d.json()["messageId"] == json!(message_id))
            .filter(|d| seen.insert(d.header("X-Service-Event-Id").to_string()))
            .map(|d| {
                assert!(verify(d, &secret), "signature verifies");
                d.json()
            })
            .collect();
        if evs.len() >= 3 {
            break evs;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "delivery events: {evs:?}");
        std::thread::sleep(Duration::from_millis(30));
    };
    let types: Vec<&str> = events.iter().map(|e| e["eventType"].as_str().unwrap()).collect();
    assert_eq!(types, ["chatapp.message.sent", "chatapp.message.delivered", "chatapp.message.read"]);
    for e in &events {
        let status = e["eventType"].as_str().unwrap().rsplit('.').next().unwrap();
        assert_eq!(e["eventId"], json!(format!("{message_id}.{status}")));
        assert_eq!(e["contractVersion"], "1.1");
        assert_eq!(e["retryNumber"], 0);
        assert_eq!(e["businessId"], json!(biz));
        assert_eq!(e["phoneNumberId"], PNID);
        assert_eq!(e["channel"], "chatapp");
        assert_eq!(e["conversationId"], json!(conversation));
        assert_eq!(e["recipient"], json!({"mobileE164": customer}));
        assert!(e["providerMessageId"].as_str().unwrap().starts_with("sbx."));
        assert_eq!(e["delivery"]["status"], json!(status));
        assert_eq!(e["delivery"]["failure"], Value::Null);
        let keys: Vec<&String> = e["delivery"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["status", "providerStatus", "sentAt", "deliveredAt", "readAt", "failedAt", "failure"]);
    }

    // The polled state ends read, consistent with the events.
    let d = c.wait_status(&message_id, "read");
    let last = &events[2]["delivery"];
    assert_eq!(d["messageId"], json!(message_id));
    assert_eq!(d["businessId"], json!(biz));
    assert_eq!(d["conversationId"], json!(conversation));
    assert_eq!(d["phoneNumberId"], PNID);
    assert_eq!(d["recipient"], customer);
    assert_eq!(d["type"], "image");
    assert_eq!(d["providerStatus"], "read");
    assert_eq!(d["providerMessageId"], events[0]["providerMessageId"]);
    assert_eq!(d["failedAt"], Value::Null);
    assert_eq!(d["failure"], Value::Null);
    for k in ["sentAt", "deliveredAt", "readAt"] {
        assert_eq!(d[k], last[k], "{k}");
    }
    assert!(d["queuedAt"].as_str().unwrap() <= d["sentAt"].as_str().unwrap());
    assert!(d["sentAt"].as_str().unwrap() <= d["deliveredAt"].as_str().unwrap());
    assert!(d["deliveredAt"].as_str().unwrap() <= d["readAt"].as_str().unwrap());
    assert_eq!(events[0]["delivery"]["sentAt"], d["sentAt"]);
    assert_eq!(events[0]["occurredAt"], d["sentAt"]);
    assert_eq!(events[1]["occurredAt"], d["deliveredAt"]);
    assert_eq!(events[2]["occurredAt"], d["readAt"]);
    // The reply joined the contact's timeline (inbound, then outbound).
    let tl = sql(&c.dir.0, &format!("SELECT direction FROM timeline_entries WHERE business_id = '{biz}' ORDER BY occurred_at, id"));
    assert_eq!(tl.trim(), "inbound\noutbound");
    // Nothing else arrives for this message (no failed event).
    std::thread::sleep(Duration::from_millis(300));
    assert!(!rx.got().iter().any(|d| d.json()["eventType"] == "chatapp.message.failed"));
}

#[test]
fn recipient_rules_fail_and_stop_at_delivered() {
    let c = setup();
    let rx = Receiver::start();
    let sub = c.k().post(
        SUBS,
        &json!({"businessId": c.t.business, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": rx.url(),
                "events": ["chatapp.message.failed", "chatapp.message.delivered"], "externalAutomation": true}),
    );
    let secret = sub.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();

    let failed = c.send_text("+15550000000", "hello").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let d = c.wait_status(&failed, "failed");
    assert_eq!(d["failure"]["code"], "recipient_unreachable");
    assert!(d["failure"]["message"].as_str().is_some());
    assert!(d["failedAt"].is_string());
    assert_eq!(d["sentAt"], Value::Null);

    let unread = c.send_text("+15550001111", "hello").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let d = c.wait_status(&unread, "delivered");
    assert_eq!(d["readAt"], Value::Null);
    assert!(d["sentAt"].is_string());

    // Refused by the provider at submit: failed with its code; the
    // provider's reference of the refused attempt is its providerMessageId.
    let refused = c.send_text("+15550002222", "hello").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let d = c.wait_status(&refused, "failed");
    assert_eq!(d["failure"]["code"], "invalid_recipient");
    let reference = d["providerMessageId"].as_str().expect("a refused message has the provider's reference").to_string();
    assert!(reference.starts_with("sbx.refused."), "{reference}");
    assert_eq!(d["sentAt"], Value::Null);

    // Only the listed events were delivered: failed for two, delivered for one.
    rx.wait_for(3);
    std::thread::sleep(Duration::from_millis(300));
    let got: Vec<Value> = rx.got().iter().inspect(|d| assert!(verify(d, &secret))).map(|d| d.json()).collect();
    assert_eq!(got.len(), 3, "{got:?}");
    let r = got.iter().find(|e| e["messageId"] == json!(refused)).unwrap();
    assert_eq!((r["eventType"].as_str(), r["delivery"]["failure"]["code"].as_str()), (Some("chatapp.message.failed"), Some("invalid_recipient")));
    assert_eq!(r["providerMessageId"], json!(reference), "the delivery payload's providerMessageId is a string");
    let f = got.iter().find(|e| e["messageId"] == json!(failed)).unwrap();
    assert_eq!(f["eventType"], "chatapp.message.failed");
    assert_eq!(f["delivery"]["failure"]["code"], "recipient_unreachable");
    assert_eq!(f["delivery"]["failedAt"], d_failed_at(&c, &failed));
    let u = got.iter().find(|e| e["messageId"] == json!(unread)).unwrap();
    assert_eq!(u["eventType"], "chatapp.message.delivered");
}

/// A provider outage (the sandbox's `3333` rule: every submit fails,
/// retryably) keeps the message `queued` with its delivery job pending and
/// retried with backoff; no status, no provider id, no event.
#[test]
fn a_provider_outage_is_retried_and_the_message_waits() {
    let c = setup();
    let id = c.send_text("+15550003333", "hello").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let job = poll("a retried submit", || {
        let row = sql(&c.dir.0, &format!("SELECT j.id, j.attempts, j.state, j.last_error FROM jobs j JOIN messages m ON m.task_ref = j.id WHERE m.id = '{id}'"));
        let f: Vec<String> = row.trim().split('|').map(str::to_string).collect();
        (f.len() == 4 && f[1].parse::<i64>().unwrap_or(0) >= 1 && f[2] == "pending").then_some(f)
    });
    assert!(job[3].contains("provider_down"), "{job:?}");
    let d = c.message(&id).assert_ok(200).clone();
    assert_eq!((d["status"].as_str(), d["taskStatus"].as_str()), (Some("queued"), Some("pending")));
    assert_eq!(d["providerMessageId"], Value::Null);
    assert_eq!(sql(&c.dir.0, &format!("SELECT DISTINCT outcome FROM job_runs WHERE job_id = '{}'", job[0])).trim(), "retry");
}

/// `--messenger-setting step-delay-ms=N` reaches the sandbox messenger: with
/// a minute between reports a message rests at `accepted`, and its delivery
/// job is due a minute later (read from the jobs table, not timed).
#[test]
fn the_provider_step_delay_is_a_setting() {
    let c = setup_with(&["--messenger-setting", "step-delay-ms=60000"]);
    let id = c.send_text("+15550001234", "hello").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let started = Instant::now();
    let d = loop {
        let d = c.message(&id).assert_ok(200).clone();
        if d["status"] == "accepted" {
            break d;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "never accepted: {d}");
        std::thread::sleep(Duration::from_millis(30));
    };
    assert_eq!(d["taskStatus"], "pending");
    let job = d["messageId"].as_str().unwrap();
    let wait_ms: i64 =
        sql(&c.dir.0, &format!("SELECT j.due_at_ms - CAST(strftime('%s','now') AS INTEGER) * 1000 FROM jobs j JOIN messages m ON m.task_ref = j.id WHERE m.id = '{job}'")).trim().parse().unwrap();
    assert!(wait_ms > 30_000, "the next report is due in {wait_ms} ms");
}

fn d_failed_at(c: &Ctx, id: &str) -> Value {
    c.message(id).assert_ok(200)["failedAt"].clone()
}

#[test]
fn bad_inputs_are_refused() {
    let c = setup();
    let biz = c.t.business.clone();
    let png = b64(PNG);

    // Non-canonical base64: whitespace or a newline (the schema pattern), and
    // non-zero pad bits (decodes, but re-encodes differently).
    let with_newline = format!("{}\n{}", &png[..8], &png[8..]);
    c.upload("image/png", &with_newline).assert_failure(400, "validation");
    c.upload("image/png", &format!(" {png}")).assert_failure(400, "validation");
    let mut bits = png.clone().into_bytes();
    let pos = bits.iter().position(|b| *b == b'=').expect("the PNG's base64 is padded") - 1;
    bits[pos] = if bits[pos] == b'B' { b'C' } else { b'B' };
    let r = c.upload("image/png", std::str::from_utf8(&bits).unwrap());
    assert_eq!(r.assert_failure(400, "validation").code(), "invalid_request", "the document's pattern states canonical base64");
    assert_eq!(r.body["error"]["details"][0]["field"], "contentBase64");
    // Magic bytes that disagree with mimeType.
    assert_eq!(c.upload("image/jpeg", &png).assert_failure(400, "validation").code(), "mime_mismatch");
    assert_eq!(c.upload("image/webp", &png).assert_failure(400, "validation").code(), "mime_mismatch");
    // An unconnected phone number.
    let r = c.k().fresh().post("/api/v1/media", &json!({"businessId": biz, "phoneNumberId": "pn-other", "mediaType": "image", "mimeType": "image/png", "fileName": "a.png", "contentBase64": png}));
    assert_eq!(r.assert_failure(404, "not_found").code(), "phone_number_not_connected");

    // Photoapp image, and photoapp with phoneNumberId: the schema rejects both.
    let r = c.k().fresh().post("/api/v1/messages", &json!({"businessId": biz, "channel": "photoapp", "photoappAccountId": "acct-1", "to": "u1", "type": "image", "mediaId": "x"}));
    r.assert_failure(400, "validation");
    let r = c.k().fresh().post("/api/v1/messages", &json!({"businessId": biz, "channel": "photoapp", "photoappAccountId": "acct-1", "phoneNumberId": PNID, "to": "u1", "type": "text", "text": "hi"}));
    r.assert_failure(400, "validation");
    // A valid photoapp send: no user has started a conversation yet.
    admin(&c.dir.0, &["channel", "connect", "--business", &biz, "--channel", "photoapp", "--account-id", "acct-1", "--username", "shop"]);
    let r = c.k().fresh().post("/api/v1/messages", &json!({"businessId": biz, "channel": "photoapp", "photoappAccountId": "acct-1", "to": "u1", "type": "text", "text": "hi"}));
    assert_eq!(r.assert_failure(409, "conflict").code(), "photoapp_conversation_required");

    // A blocked contact.
    let cat = c.k().fresh().post("/api/v1/contacts/categories", &json!({"businessId": biz, "name": "VIP"}));
    let cat = cat.data()["category"]["id"].as_str().unwrap().to_string();
    c.k().fresh().post("/api/v1/contacts", &json!({"businessId": biz, "name": "Blocked", "mobile": "+15550007777", "categoryIds": [cat], "communicationBlocked": true})).assert_ok(201);
    assert_eq!(c.send_text("+15550007777", "hi").assert_failure(409, "conflict").code(), "contact_blocked");

    // An unknown mediaId, and a text without text.
    let r = c.k().fresh().post("/api/v1/messages", &json!({"businessId": biz, "phoneNumberId": PNID, "to": "+15550008888", "type": "image", "mediaId": "0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"}));
    assert_eq!(r.assert_failure(404, "not_found").code(), "media_not_found");
    // An unknown or foreign message id.
    let r = c.message("0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b");
    assert_eq!(r.assert_failure(404, "not_found").code(), "message_not_found");

    // An image without chatapp:media (text is fine with the same key).
    let media_id = c.upload("image/png", &png).assert_ok(201)["mediaId"].as_str().unwrap().to_string();
    let k = admin(&c.dir.0, &["key", "create", "--business", &biz, "--scopes", "communications:write,communications:read"]);
    let key = k["apiKey"].as_str().unwrap();
    let r = c.s.as_key(key).fresh().post("/api/v1/messages", &json!({"businessId": biz, "phoneNumberId": PNID, "to": "+15550008888", "type": "image", "mediaId": media_id}));
    r.assert_failure(403, "authorization");
    let r = c.s.as_key(key).fresh().post("/api/v1/messages", &json!({"businessId": biz, "phoneNumberId": PNID, "to": "+15550008888", "type": "text", "text": "hi"}));
    r.assert_ok(202);
    // A message of another business is not found.
    let other = tenant(&c.dir.0, "all");
    let id = r.data()["messageId"].as_str().unwrap();
    let r = c.s.as_key(&other.key).get(&format!("/api/v1/messages/{id}?businessId={}", other.business));
    assert_eq!(r.assert_failure(404, "not_found").code(), "message_not_found");
}

/// A photoapp comment's private reply (ours, operation 75), on either build:
/// sent once, as a photoapp message to the commenter, and only for a comment
/// of the account.
#[test]
fn a_photoapp_comment_is_answered_privately_once() {
    let c = setup();
    let biz = c.t.business.clone();
    admin(&c.dir.0, &["channel", "connect", "--business", &biz, "--channel", "photoapp", "--account-id", "acct-pr", "--username", "shop"]);
    let job = admin(&c.dir.0, &["sandbox", "comment", "--account-id", "acct-pr", "--from", "u-5", "--text", "Price?", "--comment-id", "c-pr-1"]);
    wait_done(&c.dir.0, job["jobId"].as_str().unwrap());
    let reply = |comment: &str| c.k().fresh().post("/api/v1/photoapp/private-replies", &json!({"businessId": biz, "photoappAccountId": "acct-pr", "commentId": comment, "text": "It is 40 EUR."}));
    let id = reply("c-pr-1").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let d = c.wait_status(&id, "read");
    assert_eq!((d["recipient"].as_str(), d["phoneNumberId"].clone()), (Some("u-5"), Value::Null));
    assert_eq!(reply("c-pr-1").assert_failure(409, "conflict").code(), "private_reply_already_sent");
    assert_eq!(reply("c-pr-2").assert_failure(404, "not_found").code(), "comment_not_found");
}
