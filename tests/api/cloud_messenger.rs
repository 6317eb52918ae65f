//! The real adapter (issue 18 point 4): the cloud-messenger plugin
//! (components/cloud-messenger, written against kit/wit only) loaded from a
//! plugin folder, chosen by one business, talking to a local fake of its
//! WhatsApp-Cloud-style contract; statuses pushed by signed webhooks. The
//! delivery states, events, our webhooks and the timeline work as through
//! the sandbox.

use crate::harness::*;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

const CLOUD: &str = env!("SWITCHBOARD_CLOUD_MESSENGER_WASM");
const TOKEN: &str = "tok-business-a-0042";
const APP_SECRET: &str = "app-secret-a-0042";
const PNID: &str = "pn-cloud-a";

/// One request the fake API received.
#[derive(Clone, Debug)]
struct Got {
    method: String,
    path: String,
    authorization: String,
    content_type: String,
    body: Vec<u8>,
}

/// A local fake of the cloud chat API: sends and media uploads, a bearer
/// token, refusals for recipients ending 2222 (400) and 3333 (503); and of
/// its photoapp half: sends by user or comment (`recipient`), public replies.
struct Fake {
    port: u16,
    got: Arc<Mutex<Vec<Got>>>,
}

impl Fake {
    fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        std::thread::spawn(move || {
            let mut sent = 0u32;
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(req) = read_request(&stream) else { continue };
                let mut parts = req.request_line.split(' ');
                let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
                let header = |n: &str| req.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v.clone()).unwrap_or_default();
                let got = Got { method, path, authorization: header("authorization"), content_type: header("content-type"), body: req.body };
                g.lock().unwrap().push(got.clone());
                let (status, body) = if got.authorization != format!("Bearer {TOKEN}") {
                    (401, json!({"error": {"message": "Invalid OAuth access token.", "type": "OAuthException", "code": 190, "fbtrace_id": "trace-auth"}}))
                } else if got.path.ends_with("/media") {
                    (200, json!({"id": "media-77"}))
                } else if got.path.ends_with("/replies") {
                    (200, json!({"id": "reply-1"}))
                } else if let Some(recipient) = serde_json::from_slice::<Value>(&got.body).ok().filter(|b| b.get("recipient").is_some()) {
                    sent += 1;
                    (200, json!({"recipient_id": recipient["recipient"]["id"], "message_id": format!("mid.{sent}")}))
                } else {
                    let to = serde_json::from_slice::<Value>(&got.body).ok().and_then(|b| b["to"].as_str().map(String::from)).unwrap_or_default();
                    if to.ends_with("2222") {
                        (400, json!({"error": {"message": "Recipient phone number not in allowed list", "code": 131030, "fbtrace_id": "trace-2222"}}))
                    } else if to.ends_with("3333") {
                        (503, json!({"error": {"message": "Service temporarily unavailable", "code": 2}}))
                    } else {
                        sent += 1;
                        (200, json!({"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}], "messages": [{"id": format!("wamid.{sent}")}]}))
                    }
                };
                let body = body.to_string();
                let _ = write!(stream, "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
            }
        });
        Fake { port, got }
    }
    fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }
}

/// A status webhook body as the provider sends it.
fn statuses(items: &[(&str, &str)]) -> String {
    let statuses: Vec<Value> = items
        .iter()
        .map(|(id, status)| {
            let mut s = json!({"id": id, "status": status, "timestamp": "1732500000", "recipient_id": "15550001234"});
            if *status == "failed" {
                s["errors"] = json!([{"code": 131026, "title": "Message undeliverable"}]);
            }
            s
        })
        .collect();
    json!({"object": "whatsapp_business_account", "entry": [{"id": "waba-1", "changes": [{"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": {"phone_number_id": PNID}, "statuses": statuses}}]}]}).to_string()
}

/// POSTs a provider webhook to our route, signed with `secret`.
fn push(s: &Server, business: &str, body: &str, secret: &str) -> (u16, Value) {
    let sig = format!("sha256={}", hmac_sha256_hex(secret.as_bytes(), body.as_bytes()));
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/providers/v1/{business}/messenger/events", s.base))
        .header("content-type", "application/json")
        .header("x-hub-signature-256", sig)
        .body(body.to_string())
        .send()
        .unwrap();
    (r.status().as_u16(), r.json().unwrap())
}

/// A server whose plugin folder holds the cloud-messenger plugin, its
/// manifest naming the fake's host; (server, plugin folder, log file).
fn serve_the_plugin(data: &DataDir, fake: &Fake) -> (Server, String, std::path::PathBuf) {
    serve_adapter_plugin(data, "cloud-messenger", CLOUD, "api.example.com", fake.port)
}

/// The business chooses the plugin, with the fake's address, its token and
/// app secret, and `extra` settings.
fn choose_the_plugin(data: &DataDir, biz: &str, plugins: &str, fake: &Fake, extra: &[&str]) {
    let (base, token, secret) = (format!("base-url=http://localhost:{}/v21.0", fake.port), format!("access-token={TOKEN}"), format!("app-secret={APP_SECRET}"));
    let mut args = vec!["provider", "use", "--business", biz, "--interface", "messenger", "--plugin", "cloud-messenger", "--plugin-dir", plugins];
    for setting in [base.as_str(), token.as_str(), secret.as_str()].into_iter().chain(extra.iter().copied()) {
        args.extend(["--setting", setting]);
    }
    admin(&data.0, &args);
}

#[test]
fn the_cloud_messenger_plugin_sends_through_the_provider_and_takes_its_signed_statuses() {
    let fake = Fake::start();
    let data = DataDir::new();
    let (s, plugins, log) = serve_the_plugin(&data, &fake);
    let t = tenant(&data.0, "all");
    let biz = t.business.clone();
    admin(&data.0, &["channel", "connect", "--business", &biz, "--channel", "chatapp", "--phone-number-id", PNID]);
    choose_the_plugin(&data, &biz, &plugins, &fake, &[]);
    let k = || s.as_key(&t.key);
    let rx = Receiver::start();
    let events = ["chatapp.message.received", "chatapp.message.sent", "chatapp.message.delivered", "chatapp.message.read", "chatapp.message.failed"];
    let sub =
        k().post("/api/v1/webhook-subscriptions", &json!({"businessId": biz, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": rx.url(), "events": events, "externalAutomation": true}));
    let signing = sub.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();
    let send = |body: Value| k().fresh().post("/api/v1/messages", &body).assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let message = |id: &str| k().get(&format!("/api/v1/messages/{id}?businessId={biz}")).assert_ok(200).clone();
    let settled = |id: &str, status: &str| poll(&format!("{id} {status}"), || Some(message(id)).filter(|d| d["status"] == status && d["taskStatus"] == "done"));

    // A text goes to the provider as its contract says, with the business's token.
    let text = send(json!({"businessId": biz, "phoneNumberId": PNID, "to": "+15550001234", "type": "text", "text": "Your order shipped"}));
    let d = settled(&text, "submitted");
    assert_eq!(d["providerMessageId"], "wamid.1");
    let sent = fake.got().into_iter().find(|g| g.path.ends_with("/messages")).unwrap();
    assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", format!("/v21.0/{PNID}/messages").as_str()));
    assert_eq!(sent.authorization, format!("Bearer {TOKEN}"));
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(
        body,
        json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": "15550001234", "biz_opaque_callback_data": text, "text": {"body": "Your order shipped"}, "type": "text"})
    );

    // The provider pushes sent, delivered and read in one signed webhook.
    let (status, answer) = push(&s, &biz, &statuses(&[("wamid.1", "sent"), ("wamid.1", "delivered"), ("wamid.1", "read")]), APP_SECRET);
    assert_eq!((status, answer["data"]["taken"].clone()), (200, json!(3)), "{answer}");
    let d = settled(&text, "read");
    for at in ["sentAt", "deliveredAt", "readAt"] {
        assert!(d[at].is_string(), "{at}: {d}");
    }
    // Our subscription got the three delivery events, signed, once each.
    let got = poll("three delivery events", || {
        let mut seen = HashSet::new();
        let evs: Vec<Value> = rx
            .got()
            .iter()
            .filter(|d| d.json()["eventType"] != "chatapp.message.received")
            .filter(|d| seen.insert(d.header("X-Service-Event-Id").to_string()))
            .map(|d| {
                assert!(verify(d, &signing));
                d.json()
            })
            .collect();
        (evs.len() >= 3).then_some(evs)
    });
    let types: Vec<&str> = got.iter().map(|e| e["eventType"].as_str().unwrap()).collect();
    assert_eq!(types, ["chatapp.message.sent", "chatapp.message.delivered", "chatapp.message.read"]);
    assert!(got.iter().all(|e| e["providerMessageId"] == "wamid.1"));
    // The same webhook again changes nothing; an unsigned or wrongly signed one is refused.
    let again = push(&s, &biz, &statuses(&[("wamid.1", "read")]), APP_SECRET);
    assert_eq!((again.0, again.1["data"]["taken"].clone()), (200, json!(0)));
    let forged = push(&s, &biz, &statuses(&[("wamid.1", "failed")]), "not-the-secret");
    assert_eq!((forged.0, forged.1["error"]["code"].clone()), (401, json!("signature_invalid")), "{}", forged.1);
    assert_eq!(message(&text)["status"], "read");

    // An image: the media is uploaded as multipart form data, then sent by id.
    let png = b64(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3, 4]);
    let media = k().fresh().post("/api/v1/media", &json!({"businessId": biz, "phoneNumberId": PNID, "mediaType": "image", "mimeType": "image/png", "fileName": "label.png", "contentBase64": png}));
    let media_id = media.assert_ok(201)["mediaId"].as_str().unwrap().to_string();
    let upload = fake.got().into_iter().find(|g| g.path.ends_with("/media")).expect("the upload reached the provider");
    assert!(upload.content_type.starts_with("multipart/form-data; boundary="), "{}", upload.content_type);
    let form = String::from_utf8_lossy(&upload.body);
    assert!(form.contains("name=\"messaging_product\"") && form.contains("filename=\"label.png\"") && form.contains("image/png"), "{form}");
    let image = send(json!({"businessId": biz, "phoneNumberId": PNID, "to": "+15550004321", "type": "image", "mediaId": media_id, "caption": "your label"}));
    settled(&image, "submitted");
    let sent = fake.got().into_iter().rfind(|g| g.path.ends_with("/messages")).unwrap();
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!((body["type"].clone(), body["image"].clone()), (json!("image"), json!({"id": "media-77", "caption": "your label"})));
    // A failure the provider pushes fails the message with its reason.
    let (status, _) = push(&s, &biz, &statuses(&[("wamid.2", "failed")]), APP_SECRET);
    assert_eq!(status, 200);
    let d = settled(&image, "failed");
    assert_eq!(d["failure"]["code"], "recipient_unreachable");
    assert_eq!(d["failure"]["message"], "Message undeliverable");

    // A refusal at send time fails the message with the provider's reference.
    let refused = send(json!({"businessId": biz, "phoneNumberId": PNID, "to": "+15550002222", "type": "text", "text": "hi"}));
    let d = settled(&refused, "failed");
    assert_eq!((d["failure"]["code"].clone(), d["providerMessageId"].clone()), (json!("recipient_unreachable"), json!("trace-2222")));
    let failed = poll("the failed events", || {
        let evs: Vec<Value> = rx.got().iter().map(|d| d.json()).filter(|e| e["eventType"] == "chatapp.message.failed").collect();
        (evs.len() >= 2).then_some(evs)
    });
    assert!(failed.iter().any(|e| e["messageId"] == json!(image)) && failed.iter().any(|e| e["messageId"] == json!(refused)));

    // A customer's message comes in the provider's webhook too: taken once,
    // received like any inbound message (event, conversation, timeline).
    let inbound = json!({"object": "whatsapp_business_account", "entry": [{"id": "waba-1", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"phone_number_id": PNID},
        "contacts": [{"wa_id": "15550009876", "profile": {"name": "Ada"}}],
        "messages": [{"id": "wamid.in-1", "from": "15550009876", "timestamp": "1732500001", "type": "text", "text": {"body": "Is my order on its way?"}}]}}]}]})
    .to_string();
    let (status, answer) = push(&s, &biz, &inbound, APP_SECRET);
    assert_eq!((status, answer["data"]["messages"].clone()), (200, json!(1)), "{answer}");
    push(&s, &biz, &inbound, APP_SECRET);
    let received = poll("the received event", || rx.got().iter().map(|d| d.json()).find(|e| e["eventType"] == "chatapp.message.received"));
    assert_eq!(received["providerMessageId"], "wamid.in-1");
    assert_eq!(received["message"]["text"], "Is my order on its way?", "{received}");
    poll("the inbound message stored once", || {
        (sql(&data.0, &format!("SELECT COUNT(*) FROM messages WHERE business_id = '{biz}' AND direction = 'inbound' AND provider_message_id = 'wamid.in-1'")).trim() == "1").then_some(())
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(rx.got().iter().filter(|d| d.json()["eventType"] == "chatapp.message.received").count(), 1, "the repeated webhook is taken once");
    // A message to a number the business has not connected is not taken.
    let stray = inbound.replace(PNID, "pn-not-ours").replace("wamid.in-1", "wamid.in-2");
    let (status, answer) = push(&s, &biz, &stray, APP_SECRET);
    assert_eq!((status, answer["data"]["messages"].clone()), (200, json!(0)));

    // The timeline of the contact shows the messages as through the sandbox.
    let tl = sql(&data.0, &format!("SELECT COUNT(*) FROM timeline_entries WHERE business_id = '{biz}' AND direction = 'outbound'"));
    assert_eq!(tl.trim(), "3");
    // A business on the sandbox takes no provider webhooks.
    let other = tenant(&data.0, "all");
    let (status, answer) = push(&s, &other.business, &statuses(&[("wamid.1", "read")]), APP_SECRET);
    assert_eq!((status, answer["error"]["code"].clone()), (404, json!("provider_events_not_accepted")));
    // No secret reached the log.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(TOKEN) && !text.contains(APP_SECRET));
}

const VERIFY_TOKEN: &str = "vt-business-a-0042";
const IG: &str = "ig-acct-1";

/// The provider's check of the webhook address: (status, content type, body).
fn check(s: &Server, business: &str, query: &str) -> (u16, String, String) {
    let r = reqwest::blocking::get(format!("{}/providers/v1/{business}/messenger/events?{query}", s.base)).unwrap();
    let content_type = r.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    (r.status().as_u16(), content_type, r.text().unwrap())
}

#[test]
fn the_cloud_messenger_plugin_answers_the_address_check_and_brings_photoapp_signals() {
    let fake = Fake::start();
    let data = DataDir::new();
    let (s, plugins, log) = serve_the_plugin(&data, &fake);
    let t = tenant(&data.0, "all");
    let biz = t.business.clone();
    admin(&data.0, &["channel", "connect", "--business", &biz, "--channel", "photoapp", "--account-id", IG, "--username", "shop"]);
    choose_the_plugin(&data, &biz, &plugins, &fake, &[&format!("verify-token={VERIFY_TOKEN}")]);

    // The address check, as WhatsApp Cloud and Instagram send it: the challenge back, as text.
    let (status, content_type, body) = check(&s, &biz, &format!("hub.mode=subscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1158201444"));
    assert_eq!((status, body.as_str()), (200, "1158201444"));
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    // A wrong token, or no subscription check: 403 in the failure envelope.
    for query in ["hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1".to_string(), format!("hub.mode=unsubscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1"), String::new()] {
        let (status, _, body) = check(&s, &biz, &query);
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!((status, body["error"]["code"].clone()), (403, json!("verification_refused")), "{query}: {body}");
    }
    // A business whose plugin has no verify token, and one on the sandbox, verify nothing.
    let unset = tenant(&data.0, "all");
    choose_the_plugin(&data, &unset.business, &plugins, &fake, &[]);
    let (status, _, body) = check(&s, &unset.business, "hub.mode=subscribe&hub.verify_token=&hub.challenge=1");
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()["error"]["code"].clone()), (404, json!("provider_verification_not_supported")), "{body}");
    let sandbox = tenant(&data.0, "all");
    let (status, _, body) = check(&s, &sandbox.business, "hub.mode=subscribe&hub.verify_token=x&hub.challenge=1");
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()["error"]["code"].clone()), (404, json!("provider_events_not_accepted")));

    let rx = Receiver::start();
    let events = ["photoapp.message.received", "photoapp.message.reaction", "photoapp.message.referral", "photoapp.comment.received"];
    let k = || s.as_key(&t.key);
    k().fresh()
        .post("/api/v1/webhook-subscriptions", &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": IG, "callbackUrl": rx.url(), "events": events, "externalAutomation": true}))
        .assert_ok(201);
    let of_type = |t: &str| rx.got().into_iter().map(|d| d.json()).filter(|e| e["eventType"] == t).collect::<Vec<_>>();

    // One signed webhook with two comments (one of a minute ago, one of
    // 2020), a direct message and a referral from an ad.
    let a_minute_ago = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() - 60;
    let webhook = json!({"object": "instagram", "entry": [
        {"id": IG, "time": a_minute_ago, "changes": [{"field": "comments", "value": {"id": "c-17", "text": "Do you ship to Oslo?", "from": {"id": "u-9", "username": "ola.n"}, "media": {"id": "p-3"}}}]},
        {"id": IG, "time": 1_577_872_800, "changes": [{"field": "comments", "value": {"id": "c-18", "text": "Old post, nice", "from": {"id": "u-8"}}}]},
        {"id": IG, "time": 1_764_000_001, "messaging": [
            {"sender": {"id": "u-7"}, "recipient": {"id": IG}, "timestamp": 1_764_000_001_000_i64, "message": {"mid": "mid.in-1", "text": "Saw your ad"}},
            {"sender": {"id": "u-7"}, "recipient": {"id": IG}, "timestamp": 1_764_000_001_001_i64, "referral": {"source": "ADS", "type": "OPEN_THREAD", "ad_id": "ad-5"}}]}]})
    .to_string();
    let (status, answer) = push(&s, &biz, &webhook, APP_SECRET);
    assert_eq!((status, answer["data"].clone()), (200, json!({"received": 4, "taken": 0, "messages": 1, "signals": 3})), "{answer}");
    let comment = poll("the comment event", || of_type("photoapp.comment.received").into_iter().find(|e| e["comment"]["commentId"] == "c-17"));
    assert_eq!(comment["comment"], json!({"commentId": "c-17", "postId": "p-3", "text": "Do you ship to Oslo?"}));
    assert_eq!(comment["customer"]["username"], "ola.n");
    let referral = poll("the referral event", || of_type("photoapp.message.referral").pop());
    assert_eq!((referral["customer"]["photoappUserId"].clone(), referral["referral"].clone()), (json!("u-7"), json!({"source": "ad", "adId": "ad-5", "postId": null})));
    let received = poll("the message event", || of_type("photoapp.message.received").pop());
    assert_eq!((received["providerMessageId"].clone(), received["message"]["text"].clone()), (json!("mid.in-1"), json!("Saw your ad")));
    // A comment's time is the provider's: it starts the private reply's 7 days.
    poll("the old comment", || of_type("photoapp.comment.received").into_iter().find(|e| e["comment"]["commentId"] == "c-18"));
    let late = k().fresh().post("/api/v1/photoapp/private-replies", &json!({"businessId": biz, "photoappAccountId": IG, "commentId": "c-18", "text": "Thanks!"}));
    assert_eq!(late.assert_failure(409, "conflict").code(), "private_reply_window_closed");
    assert!(late.message().contains("2020-01-01T10:00:00.000Z"), "{}", late.message());

    // The private reply goes to the provider by the comment, not by the user.
    let reply = k().fresh().post("/api/v1/photoapp/private-replies", &json!({"businessId": biz, "photoappAccountId": IG, "commentId": "c-17", "text": "Yes, in 2 days"}));
    let message = reply.assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let d = poll("the private reply submitted", || Some(k().get(&format!("/api/v1/messages/{message}?businessId={biz}")).assert_ok(200).clone()).filter(|d| d["status"] == "submitted"));
    assert_eq!(d["providerMessageId"], "mid.1");
    let sent = fake.got().into_iter().find(|g| g.path.ends_with("/messages")).unwrap();
    assert_eq!((sent.path.as_str(), sent.authorization.as_str()), (format!("/v21.0/{IG}/messages").as_str(), format!("Bearer {TOKEN}").as_str()));
    assert_eq!(serde_json::from_slice::<Value>(&sent.body).unwrap(), json!({"recipient": {"comment_id": "c-17"}, "message": {"text": "Yes, in 2 days"}}));

    // The commenter reacts to it, then takes it back: reactions by the provider's message id, in event time.
    let reaction = |action: &str, at: i64| {
        json!({"object": "instagram", "entry": [{"id": IG, "time": 1, "messaging": [
            {"sender": {"id": "u-9"}, "recipient": {"id": IG}, "timestamp": at, "reaction": {"mid": "mid.1", "action": action, "reaction": "love", "emoji": "❤️"}}]}]})
        .to_string()
    };
    let (status, answer) = push(&s, &biz, &reaction("react", 1_764_000_100_000), APP_SECRET);
    assert_eq!((status, answer["data"]["signals"].clone()), (200, json!(1)));
    let r = poll("the reaction event", || of_type("photoapp.message.reaction").pop());
    assert_eq!((r["messageId"].clone(), r["reaction"].clone()), (json!(message), json!({"emoji": "❤️", "action": "added"})));
    // The provider sends that webhook again: once every job it made has run
    // (the reaction's, and any event delivery), still one reaction event.
    push(&s, &biz, &reaction("react", 1_764_000_100_000), APP_SECRET);
    poll("the business's jobs to finish", || (sql(&data.0, &format!("SELECT COUNT(*) FROM jobs WHERE business_id = '{biz}' AND state NOT IN ('done', 'dead')")).trim() == "0").then_some(()));
    assert_eq!(of_type("photoapp.message.reaction").len(), 1, "a reaction pushed twice is told once");
    push(&s, &biz, &reaction("unreact", 1_764_000_200_000), APP_SECRET);
    let r = poll("the removal", || of_type("photoapp.message.reaction").into_iter().find(|e| e["reaction"]["action"] == "removed"));
    assert_eq!(r["occurredAt"], "2025-11-24T16:03:20.000Z");
    // An unsigned webhook brings nothing.
    let (status, answer) = push(&s, &biz, &reaction("react", 1_764_000_300_000), "not-the-secret");
    assert_eq!((status, answer["error"]["code"].clone()), (401, json!("signature_invalid")));

    // No secret reached the log, the verify token included.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(TOKEN) && !text.contains(APP_SECRET) && !text.contains(VERIFY_TOKEN));
}
