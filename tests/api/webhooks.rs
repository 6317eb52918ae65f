//! The webhooks component (operations 2-6) over HTTP: webhook subscriptions
//! for connected chatapp phone numbers and photoapp accounts, copy-once
//! signing secrets, pause/resume, rotation and permanent revocation.
//! Connections come from `switchboard admin channel connect`.

use crate::harness::*;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::path::Path;
use switchboard_gateway::validate::Validator;

const SUBS: &str = "/api/v1/webhook-subscriptions";
const CHATAPP_ALL: [&str; 5] = ["chatapp.message.received", "chatapp.message.sent", "chatapp.message.delivered", "chatapp.message.read", "chatapp.message.failed"];

struct Ctx {
    s: Server,
    a: Tenant,
    b: Tenant,
    dir: DataDir,
    /// Every response body seen, with the secret-bearing ones (create and
    /// rotate) marked, to prove no other response contains a secret.
    seen: RefCell<Vec<(bool, String)>>,
    /// The OpenAPI document's schemas: every success `data` must conform.
    schemas: Validator,
}

fn setup() -> Ctx {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let a = tenant(&dir.0, "all");
    let b = tenant(&dir.0, "all");
    let schemas = document_schemas();
    Ctx { s, a, b, dir, seen: RefCell::new(Vec::new()), schemas }
}

fn with_business(t: &Tenant, mut body: Value) -> Value {
    if body.get("businessId").is_none() {
        body["businessId"] = json!(t.business);
    }
    body
}

impl Ctx {
    fn path(&self) -> &Path {
        &self.dir.0
    }
    /// Records the body and checks a success `data` against the operation's
    /// documented response schema.
    fn keep(&self, method: &str, path: &str, r: Resp) -> Resp {
        let secret_bearing = r.status < 300 && r.data().get("signingSecret").is_some();
        self.seen.borrow_mut().push((secret_bearing, r.text.clone()));
        if r.status < 300 {
            assert_documented(&self.schemas, method, path, &r);
        }
        r
    }
    fn list(&self, t: &Tenant, extra: &str) -> Resp {
        self.keep("GET", SUBS, self.s.as_key(&t.key).get(&format!("{SUBS}?businessId={}{extra}", t.business)))
    }
    fn listed(&self, t: &Tenant) -> Vec<Value> {
        self.list(t, "&limit=200").assert_ok(200)["subscriptions"].as_array().unwrap().clone()
    }
    fn create(&self, t: &Tenant, body: Value) -> Resp {
        self.keep("POST", SUBS, self.s.as_key(&t.key).post(SUBS, &with_business(t, body)))
    }
    fn update(&self, t: &Tenant, id: &str, body: Value) -> Resp {
        let p = format!("{SUBS}/{id}");
        self.keep("PATCH", &p, self.s.as_key(&t.key).patch(&p, &with_business(t, body)))
    }
    fn revoke(&self, t: &Tenant, id: &str) -> Resp {
        let p = format!("{SUBS}/{id}");
        self.keep("DELETE", &p, self.s.as_key(&t.key).send("DELETE", &format!("{p}?businessId={}", t.business), None))
    }
    fn rotate(&self, t: &Tenant, id: &str) -> Resp {
        let p = format!("{SUBS}/{id}/rotate-secret");
        self.keep("POST", &p, self.s.as_key(&t.key).post(&p, &json!({"businessId": t.business})))
    }
    fn connect_chatapp(&self, t: &Tenant, pnid: &str) {
        self.s.admin(&["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", pnid, "--label", "Support"]);
    }
    fn connect_photoapp(&self, t: &Tenant, acct: &str) {
        self.s.admin(&["channel", "connect", "--business", &t.business, "--channel", "photoapp", "--account-id", acct, "--username", "shop"]);
    }
    fn chatapp_body(&self, pnid: &str, url: &str, events: &[&str]) -> Value {
        json!({"channel": "chatapp", "phoneNumberId": pnid, "callbackUrl": url, "events": events, "externalAutomation": true})
    }
    /// Creates a chatapp subscription; returns (subscription, secret).
    fn chatapp_sub(&self, t: &Tenant, pnid: &str, url: &str) -> (Value, String) {
        let d = self.create(t, self.chatapp_body(pnid, url, &["chatapp.message.received"])).assert_ok(201).clone();
        (d["subscription"].clone(), d["signingSecret"].as_str().unwrap().to_string())
    }
    /// Asserts that `secret` appears in no response except the ones that
    /// returned a secret (create, rotate), and in none at all if `anywhere`.
    fn assert_never_echoed(&self, secret: &str, anywhere: bool) {
        for (bearing, text) in self.seen.borrow().iter() {
            if anywhere || !bearing {
                assert!(!text.contains(secret), "a response contains the secret: {text}");
            }
        }
    }
    fn stored_secret(&self, id: &str) -> String {
        sql(self.path(), &format!("SELECT coalesce(signing_secret, 'NULL') FROM webhook_subscriptions WHERE id = '{id}'")).trim().to_string()
    }
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[test]
fn create_list_update_rotate_revoke() {
    let c = setup();
    c.connect_chatapp(&c.a, "pn-a-1");
    c.connect_photoapp(&c.a, "ig-a-1");
    assert!(c.listed(&c.a).is_empty());

    // chatapp: 201, active, metadata, a copy-once secret.
    let r = c.create(&c.a, c.chatapp_body("pn-a-1", "https://hooks.example.com/chat", &CHATAPP_ALL));
    let d = r.assert_ok(201).clone();
    let chat = d["subscription"].clone();
    let chat_secret = d["signingSecret"].as_str().unwrap().to_string();
    assert!(chat_secret.starts_with("whsec_") && chat_secret.len() == 70, "{chat_secret}");
    assert_eq!(chat["status"], "active");
    assert_eq!(chat["channel"], "chatapp");
    assert_eq!(chat["businessId"], json!(c.a.business));
    assert_eq!(chat["phoneNumberId"], "pn-a-1");
    assert_eq!(chat["providerAccountId"], Value::Null);
    assert_eq!(chat["callbackUrl"], "https://hooks.example.com/chat");
    assert_eq!(chat["events"], json!(CHATAPP_ALL));
    assert_eq!(chat["externalAutomation"], true);
    assert_eq!(chat["secretLast4"], json!(&chat_secret[66..]));
    assert_eq!(chat["revokedAt"], Value::Null);
    assert!(chat.get("signingSecret").is_none());
    assert_eq!(c.stored_secret(&id(&chat)), chat_secret, "stored for the delivery job");

    // photoapp shape; `channel` may be omitted (told by providerAccountId).
    // Loopback targets are allowed (local development).
    let body = json!({"providerAccountId": "ig-a-1", "callbackUrl": "http://127.0.0.1:9000/ig",
                      "events": ["photoapp.comment.received", "photoapp.message.seen"], "externalAutomation": true});
    let d = c.create(&c.a, body).assert_ok(201).clone();
    let photo = d["subscription"].clone();
    let photo_secret = d["signingSecret"].as_str().unwrap().to_string();
    assert_ne!(photo_secret, chat_secret);
    assert_eq!(photo["channel"], "photoapp");
    assert_eq!(photo["providerAccountId"], "ig-a-1");
    assert_eq!(photo["phoneNumberId"], Value::Null);
    assert_eq!(photo["events"], json!(["photoapp.comment.received", "photoapp.message.seen"]));

    // The list shows both, with secretLast4 and never the secret.
    let l = c.listed(&c.a);
    assert_eq!(l.iter().map(id).collect::<Vec<_>>(), vec![id(&chat), id(&photo)]);
    assert_eq!(l[0]["secretLast4"], chat["secretLast4"]);
    assert_eq!(l[1]["secretLast4"], photo["secretLast4"]);
    assert_eq!(l[0], chat);

    // Update each field.
    let cid = id(&chat);
    let u = c.update(&c.a, &cid, json!({"callbackUrl": "https://hooks.example.com/v2"})).assert_ok(200)["subscription"].clone();
    assert_eq!(u["callbackUrl"], "https://hooks.example.com/v2");
    assert_eq!(u["events"], json!(CHATAPP_ALL), "untouched fields stay");
    assert_eq!(u["status"], "active");
    let u = c.update(&c.a, &cid, json!({"events": ["chatapp.message.read", "chatapp.message.received"]})).assert_ok(200)["subscription"].clone();
    assert_eq!(u["events"], json!(["chatapp.message.read", "chatapp.message.received"]));
    assert_eq!(u["callbackUrl"], "https://hooks.example.com/v2");
    // Pause and resume.
    let u = c.update(&c.a, &cid, json!({"status": "paused"})).assert_ok(200)["subscription"].clone();
    assert_eq!(u["status"], "paused");
    assert_eq!(c.listed(&c.a)[0]["status"], "paused", "paused subscriptions are listed");
    let u = c.update(&c.a, &cid, json!({"status": "active"})).assert_ok(200)["subscription"].clone();
    assert_eq!(u["status"], "active");
    // All three at once.
    let u = c.update(&c.a, &cid, json!({"callbackUrl": "http://localhost:3000/h", "events": ["chatapp.message.failed"], "status": "paused"})).assert_ok(200)["subscription"].clone();
    assert_eq!((u["callbackUrl"].as_str(), u["events"].clone(), u["status"].as_str()), (Some("http://localhost:3000/h"), json!(["chatapp.message.failed"]), Some("paused")));
    assert!(u["updatedAt"].as_str() >= chat["updatedAt"].as_str());
    assert_eq!(u["createdAt"], chat["createdAt"]);
    assert_eq!(u["secretLast4"], chat["secretLast4"], "updates keep the secret");
    assert_eq!(c.stored_secret(&cid), chat_secret);

    // Rotate (a paused subscription rotates too): a new secret, new last4,
    // the old one is gone from storage at once.
    let rotated_at = c.seen.borrow().len();
    let d = c.rotate(&c.a, &cid).assert_ok(200).clone();
    let rotated = d["signingSecret"].as_str().unwrap().to_string();
    assert_ne!(rotated, chat_secret);
    assert_eq!(d["subscription"]["secretLast4"], json!(&rotated[66..]));
    assert_eq!(d["subscription"]["status"], "paused");
    assert_eq!(c.stored_secret(&cid), rotated);
    assert_eq!(sql(c.path(), &format!("SELECT count(*) FROM webhook_subscriptions WHERE signing_secret = '{chat_secret}'")).trim(), "0");
    let twice = c.rotate(&c.a, &cid).assert_ok(200)["signingSecret"].as_str().unwrap().to_string();
    assert_ne!(twice, rotated);
    let listed = c.listed(&c.a);
    assert_eq!(listed[0]["secretLast4"], json!(&twice[66..]));
    // The first secret appears in no response but its create (and in none
    // at all since the rotation), the others in no response but the one that
    // issued them.
    c.assert_never_echoed(&chat_secret, false);
    assert!(c.seen.borrow()[rotated_at..].iter().all(|(_, text)| !text.contains(&chat_secret)));
    c.assert_never_echoed(&rotated, false);
    c.assert_never_echoed(&twice, false);
    c.assert_never_echoed(&photo_secret, false);

    // Revoke: permanent, not listed, secret cleared; revoking twice is a
    // harmless 200 with the same record.
    let pid = id(&photo);
    let r = c.revoke(&c.a, &pid).assert_ok(200)["subscription"].clone();
    assert_eq!(r["status"], "revoked");
    assert!(r["revokedAt"].is_string());
    assert_eq!(r["secretLast4"], photo["secretLast4"]);
    assert_eq!(c.stored_secret(&pid), "NULL");
    let again = c.revoke(&c.a, &pid).assert_ok(200)["subscription"].clone();
    assert_eq!(again, r);
    assert_eq!(c.listed(&c.a).iter().map(id).collect::<Vec<_>>(), vec![cid.clone()]);
    let e = c.update(&c.a, &pid, json!({"status": "active"}));
    e.assert_failure(409, "conflict");
    assert_eq!(e.code(), "subscription_revoked");
    let e = c.rotate(&c.a, &pid);
    e.assert_failure(409, "conflict");
    assert_eq!(e.code(), "subscription_revoked");
    assert_eq!(c.stored_secret(&pid), "NULL");
    c.assert_never_echoed(&photo_secret, false);
    c.assert_never_echoed(&twice, false);
}

#[test]
fn list_pages_by_cursor() {
    let c = setup();
    c.connect_chatapp(&c.a, "pn-page");
    let ids: Vec<String> = (0..5).map(|i| id(&c.chatapp_sub(&c.a, "pn-page", &format!("https://h.example.com/{i}")).0)).collect();
    let p1 = c.list(&c.a, "&limit=2").assert_ok(200).clone();
    let cur = p1["nextCursor"].as_str().unwrap().to_string();
    let p2 = c.list(&c.a, &format!("&limit=2&cursor={cur}")).assert_ok(200).clone();
    let cur = p2["nextCursor"].as_str().unwrap().to_string();
    let p3 = c.list(&c.a, &format!("&limit=2&cursor={cur}")).assert_ok(200).clone();
    assert_eq!(p3["nextCursor"], Value::Null);
    let got: Vec<String> = [&p1, &p2, &p3].iter().flat_map(|p| p["subscriptions"].as_array().unwrap().iter().map(id)).collect();
    assert_eq!(got, ids);
    c.list(&c.a, "&cursor=garbage").assert_failure(400, "validation");
    c.list(&c.a, "&limit=0").assert_failure(400, "validation");
}

#[test]
fn bad_inputs_are_clear_4xx() {
    let c = setup();
    c.connect_chatapp(&c.a, "pn-a-1");
    c.connect_photoapp(&c.a, "ig-a-1");
    c.connect_chatapp(&c.b, "pn-b-1");
    let expect = |r: Resp, status: u16, code: &str, needle: &str| {
        let cat = match status {
            400 => "validation",
            404 => "not_found",
            409 => "conflict",
            _ => unreachable!(),
        };
        r.assert_failure(status, cat);
        assert_eq!(r.code(), code, "{}", r.text);
        assert!(r.message().contains(needle), "{needle:?} not in {}", r.text);
    };

    // Unknown event type, empty events, duplicates, wrong channel's events (schema).
    expect(c.create(&c.a, c.chatapp_body("pn-a-1", "https://h.example.com", &["chatapp.message.exploded"])), 400, "invalid_request", "events[0]");
    expect(c.create(&c.a, c.chatapp_body("pn-a-1", "https://h.example.com", &[])), 400, "invalid_request", "events");
    expect(c.create(&c.a, c.chatapp_body("pn-a-1", "https://h.example.com", &["chatapp.message.sent", "chatapp.message.sent"])), 400, "invalid_request", "events");
    expect(c.create(&c.a, c.chatapp_body("pn-a-1", "https://h.example.com", &["photoapp.message.seen"])), 400, "invalid_request", "events[0]");
    // externalAutomation must be true; photoapp with phoneNumberId; shape mixing.
    let mut b = c.chatapp_body("pn-a-1", "https://h.example.com", &["chatapp.message.sent"]);
    b["externalAutomation"] = json!(false);
    c.create(&c.a, b).assert_failure(400, "validation");
    let b = json!({"channel": "photoapp", "phoneNumberId": "pn-a-1", "providerAccountId": "ig-a-1", "callbackUrl": "https://h.example.com",
                   "events": ["photoapp.message.sent"], "externalAutomation": true});
    c.create(&c.a, b).assert_failure(400, "validation");
    // Unconnected phone number: unknown, another business's, disconnected account.
    expect(c.create(&c.a, c.chatapp_body("pn-nope", "https://h.example.com", &["chatapp.message.sent"])), 404, "phone_number_not_connected", "pn-nope");
    expect(c.create(&c.a, c.chatapp_body("pn-b-1", "https://h.example.com", &["chatapp.message.sent"])), 404, "phone_number_not_connected", "pn-b-1");
    let photo = |acct: &str| json!({"channel": "photoapp", "providerAccountId": acct, "callbackUrl": "https://h.example.com", "events": ["photoapp.message.sent"], "externalAutomation": true});
    expect(c.create(&c.a, photo("ig-other")), 404, "photoapp_account_not_connected", "ig-other");
    c.connect_photoapp(&c.a, "ig-a-2"); // replaces ig-a-1
    expect(c.create(&c.a, photo("ig-a-1")), 404, "photoapp_account_not_connected", "ig-a-1");
    c.create(&c.a, photo("ig-a-2")).assert_ok(201);
    // Bad callback URLs.
    for (url, needle) in [
        ("ftp://h.example.com/hook", "http or https"),
        ("mailto:ops@example.com", "http or https"),
        ("https://user:pass@h.example.com/hook", "credentials"),
        ("https://h.example.com/hook#part", "fragment"),
        ("https://h.example.com:70000/hook", "port"),
        ("https://bad_host-.example.com/", "host"),
    ] {
        expect(c.create(&c.a, c.chatapp_body("pn-a-1", url, &["chatapp.message.sent"])), 400, "invalid_callback_url", needle);
    }
    for url in ["not a url", "https:///nohost", "https://"] {
        c.create(&c.a, c.chatapp_body("pn-a-1", url, &["chatapp.message.sent"])).assert_failure(400, "validation");
    }
    assert_eq!(c.listed(&c.a).len(), 1, "nothing but the photoapp subscription was created");

    // Update rules.
    let (sub, _) = c.chatapp_sub(&c.a, "pn-a-1", "https://h.example.com/ok");
    let sid = id(&sub);
    expect(c.update(&c.a, &sid, json!({})), 400, "invalid_request", "");
    expect(c.update(&c.a, &sid, json!({"events": ["chatapp.message.sent", "photoapp.message.seen"]})), 400, "event_channel_mismatch", "photoapp.message.seen");
    expect(c.update(&c.a, &sid, json!({"events": ["chatapp.message.unknown"]})), 400, "invalid_request", "events[0]");
    expect(c.update(&c.a, &sid, json!({"events": []})), 400, "invalid_request", "events");
    expect(c.update(&c.a, &sid, json!({"callbackUrl": "https://a:b@h.example.com/"})), 400, "invalid_callback_url", "credentials");
    c.update(&c.a, &sid, json!({"status": "revoked"})).assert_failure(400, "validation");
    c.update(&c.a, &sid, json!({"signingSecret": "whsec_x"})).assert_failure(400, "validation");
    let now = c.listed(&c.a).into_iter().find(|s| id(s) == sid).unwrap();
    assert_eq!(now, sub, "failed updates changed nothing");

    // Unknown ids: 404 subscription_not_found on every path operation.
    let ghost = uuid::Uuid::new_v4().to_string();
    expect(c.update(&c.a, &ghost, json!({"status": "paused"})), 404, "subscription_not_found", "not found");
    expect(c.revoke(&c.a, &ghost), 404, "subscription_not_found", "not found");
    expect(c.rotate(&c.a, &ghost), 404, "subscription_not_found", "not found");
    // DELETE takes businessId in the query, no body.
    c.s.as_key(&c.a.key).send("DELETE", &format!("{SUBS}/{sid}"), None).assert_failure(400, "validation");
}

#[test]
fn tenancy_and_scopes() {
    let c = setup();
    c.connect_chatapp(&c.a, "pn-a-1");
    c.connect_chatapp(&c.b, "pn-b-1");
    let (sa, secret_a) = c.chatapp_sub(&c.a, "pn-a-1", "https://a.example.com/hook");
    let (sb, _) = c.chatapp_sub(&c.b, "pn-b-1", "https://b.example.com/hook");
    let (aid, bid) = (id(&sa), id(&sb));

    // B never sees or changes A's subscription: it is simply not found.
    assert_eq!(c.listed(&c.b).iter().map(id).collect::<Vec<_>>(), vec![bid.clone()]);
    for r in [c.update(&c.b, &aid, json!({"status": "paused"})), c.rotate(&c.b, &aid), c.revoke(&c.b, &aid)] {
        r.assert_failure(404, "not_found");
        assert_eq!(r.code(), "subscription_not_found");
    }
    // B's key naming A's business: 403 before anything runs.
    let k = c.s.as_key(&c.b.key);
    k.get(&format!("{SUBS}?businessId={}", c.a.business)).assert_failure(403, "authorization");
    k.patch(&format!("{SUBS}/{aid}"), &json!({"businessId": c.a.business, "status": "paused"})).assert_failure(403, "authorization");
    k.post(&format!("{SUBS}/{aid}/rotate-secret"), &json!({"businessId": c.a.business})).assert_failure(403, "authorization");
    k.send("DELETE", &format!("{SUBS}/{aid}?businessId={}", c.a.business), None).assert_failure(403, "authorization");
    assert_eq!(c.listed(&c.a), vec![sa.clone()], "A's subscription is untouched");
    assert_eq!(c.stored_secret(&aid), secret_a);
    c.assert_never_echoed(&secret_a, false);

    // Scopes: everything needs webhooks:write; create also channels:write.
    let only_webhooks = c.s.admin(&["key", "create", "--business", &c.a.business, "--scopes", "webhooks:write"])["apiKey"].as_str().unwrap().to_string();
    let only_channels = c.s.admin(&["key", "create", "--business", &c.a.business, "--scopes", "channels:write"])["apiKey"].as_str().unwrap().to_string();
    let body = with_business(&c.a, c.chatapp_body("pn-a-1", "https://a.example.com/2", &["chatapp.message.sent"]));
    let r = c.s.as_key(&only_webhooks).post(SUBS, &body);
    r.assert_failure(403, "authorization");
    assert_eq!(r.code(), "missing_scope");
    assert!(r.message().contains("channels:write"), "{}", r.message());
    let r = c.s.as_key(&only_channels).post(SUBS, &body);
    r.assert_failure(403, "authorization");
    assert!(r.message().contains("webhooks:write"), "{}", r.message());
    let ch = c.s.as_key(&only_channels);
    ch.get(&format!("{SUBS}?businessId={}", c.a.business)).assert_failure(403, "authorization");
    ch.patch(&format!("{SUBS}/{aid}"), &json!({"businessId": c.a.business, "status": "paused"})).assert_failure(403, "authorization");
    ch.post(&format!("{SUBS}/{aid}/rotate-secret"), &json!({"businessId": c.a.business})).assert_failure(403, "authorization");
    ch.send("DELETE", &format!("{SUBS}/{aid}?businessId={}", c.a.business), None).assert_failure(403, "authorization");
    // webhooks:write alone manages existing subscriptions.
    let w = c.s.as_key(&only_webhooks);
    w.get(&format!("{SUBS}?businessId={}", c.a.business)).assert_ok(200);
    w.patch(&format!("{SUBS}/{aid}"), &json!({"businessId": c.a.business, "status": "paused"})).assert_ok(200);
    // Both scopes together may create.
    let both = c.s.admin(&["key", "create", "--business", &c.a.business, "--scopes", "webhooks:write,channels:write"])["apiKey"].as_str().unwrap().to_string();
    c.s.as_key(&both).post(SUBS, &body).assert_ok(201);
    assert_eq!(c.listed(&c.a).len(), 2);
}

/// An Idempotency-Key on create or rotate prevents a second execution, but a
/// replay never shows the copy-once secret again, and the stored record
/// holds no copy of it.
#[test]
fn idempotent_replays_never_show_a_secret_again() {
    let c = setup();
    c.connect_chatapp(&c.a, "pn-idem");
    let body = with_business(&c.a, c.chatapp_body("pn-idem", "https://a.example.com/hook", &["chatapp.message.received"]));
    let first = c.s.as_key(&c.a.key).idem("sub-create-1").post(SUBS, &body);
    let secret = first.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();
    let sub = first.data()["subscription"]["id"].as_str().unwrap().to_string();
    let again = c.s.as_key(&c.a.key).idem("sub-create-1").post(SUBS, &body);
    again.assert_failure(409, "conflict");
    assert_eq!(again.code(), "idempotency_replay_redacted");
    assert!(!again.text.contains(&secret));
    assert_eq!(c.listed(&c.a).len(), 1, "the retry did not create a second subscription");

    let rotate = format!("{SUBS}/{sub}/rotate-secret");
    let rot = c.s.as_key(&c.a.key).idem("sub-rotate-1").post(&rotate, &json!({"businessId": c.a.business}));
    let rotated = rot.assert_ok(200)["signingSecret"].as_str().unwrap().to_string();
    let again = c.s.as_key(&c.a.key).idem("sub-rotate-1").post(&rotate, &json!({"businessId": c.a.business}));
    assert_eq!(again.code(), "idempotency_replay_redacted");
    assert_eq!(c.stored_secret(&sub), rotated, "the replay did not rotate again");

    let stored = sql(c.path(), "SELECT response_body FROM idempotency_records");
    assert!(!stored.contains(&secret) && !stored.contains(&rotated), "no secret in idempotency records");
}
