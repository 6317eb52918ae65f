//! Inbound chatapp messages (issue 4 point 7, inbound half): `switchboard
//! admin sandbox inbound` enqueues a durable `messaging.inbound` job; the
//! dispatcher resolves or creates the contact (once, even for concurrent
//! messages from a new number), stores the message, appends the timeline and
//! enqueues one `webhooks.deliver` job per subscription that includes
//! `chatapp.message.received`. The HTTP delivery itself is tested elsewhere.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const PNID: &str = "pn-inbound-1";
const FROM: &str = "+15550001234";
const SUBS: &str = "/api/v1/webhook-subscriptions";

fn inbound(dir: &Path, text: &str, pmid: Option<&str>) -> Value {
    let mut args = vec!["sandbox", "inbound", "--phone-number-id", PNID, "--from", FROM, "--text", text, "--name", "Ada"];
    if let Some(p) = pmid {
        args.extend(["--provider-message-id", p]);
    }
    admin(dir, &args)
}

#[test]
fn inbound_messages_resolve_one_contact_and_fan_out() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let biz = t.business.as_str();
    s.admin(&["channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", PNID, "--label", "Support"]);

    let sub = |events: &[&str]| -> String {
        let body = json!({"businessId": biz, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": "https://hooks.example.com/in",
                          "events": events, "externalAutomation": true});
        s.as_key(&t.key).post(SUBS, &body).assert_ok(201)["subscription"]["id"].as_str().unwrap().to_string()
    };
    let wants = sub(&["chatapp.message.received", "chatapp.message.sent"]);
    let other = sub(&["chatapp.message.sent"]);
    let paused = sub(&["chatapp.message.received"]);
    s.as_key(&t.key).patch(&format!("{SUBS}/{paused}"), &json!({"businessId": biz, "status": "paused"})).assert_ok(200);

    // An unknown phone number is refused before anything is enqueued.
    let out = Command::new(BIN).args(["admin", "--data-dir"]).arg(&dir.0).args(["sandbox", "inbound", "--phone-number-id", "pn-unknown", "--from", FROM, "--text", "x"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a connected chatapp number"));

    // Two messages from a new number at once.
    let d = dir.0.clone();
    let threads: Vec<_> = ["hello one", "hello two"]
        .into_iter()
        .map(|text| {
            let d = d.clone();
            std::thread::spawn(move || inbound(&d, text, None))
        })
        .collect();
    let sent: Vec<Value> = threads.into_iter().map(|h| h.join().unwrap()).collect();
    for m in &sent {
        assert!(m["providerMessageId"].as_str().unwrap().starts_with("sbx."), "{m}");
    }
    let pmids: Vec<String> = sent.iter().map(|m| m["providerMessageId"].as_str().unwrap().to_string()).collect();
    assert_ne!(pmids[0], pmids[1]);

    let contacts = poll("the contact", || {
        let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={biz}&search=%2B15550001234"));
        let list = r.assert_ok(200)["contacts"].as_array().unwrap().clone();
        (!list.is_empty()).then_some(list)
    });
    for m in &sent {
        wait_done(&dir.0, m["jobId"].as_str().unwrap());
    }
    // The same provider message again: processed once.
    let again = inbound(&dir.0, "hello again", Some(&pmids[0]));
    assert_eq!(again["providerMessageId"], json!(pmids[0]));
    wait_done(&dir.0, again["jobId"].as_str().unwrap());

    assert_eq!(contacts.len(), 1, "{contacts:?}");
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={biz}&search=%2B15550001234"));
    let list = r.assert_ok(200)["contacts"].as_array().unwrap().clone();
    assert_eq!(list.len(), 1, "one contact for concurrent messages from a new number: {list:?}");
    let contact = &list[0];
    assert_eq!(contact["mobile"], FROM);
    assert_eq!(contact["name"], "Ada");
    let cid = contact["id"].as_str().unwrap();
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{biz}'")).trim(), "1");
    // Its category: "Inbound", created once.
    assert_eq!(
        sql(&dir.0, &format!("SELECT c.name FROM contact_categories cc JOIN categories c ON c.id = cc.category_id WHERE cc.business_id = '{biz}' AND cc.contact_id = '{cid}'")).trim(),
        "Inbound"
    );
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM categories WHERE business_id = '{biz}'")).trim(), "1");

    // Messages and the conversation.
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*), COUNT(DISTINCT conversation_id) FROM messages WHERE business_id = '{biz}' AND direction = 'inbound' AND status = 'received'")).trim(), "2|1");
    let conversation = sql(&dir.0, &format!("SELECT id FROM conversations WHERE business_id = '{biz}' AND contact_id = '{cid}' AND phone_number_id = '{PNID}'"));
    let conversation = conversation.trim();
    assert_eq!(conversation.len(), 36);

    // The timeline: two inbound chatapp messages, newest first.
    let tl = s.as_key(&t.key).get(&format!("/api/v1/contacts/{cid}/timeline?businessId={biz}"));
    let entries = tl.assert_ok(200)["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "{entries:?}");
    let mut texts: Vec<&str> = entries.iter().map(|e| e["summary"]["text"].as_str().unwrap()).collect();
    for e in &entries {
        assert_eq!((e["channel"].as_str(), e["kind"].as_str(), e["direction"].as_str()), (Some("chatapp"), Some("message"), Some("inbound")), "{e}");
        assert!(e["summary"]["messageId"].as_str().is_some_and(|m| m.len() == 36), "{e}");
    }
    let key = |e: &Value| (e["occurredAt"].as_str().unwrap().to_string(), e["id"].as_str().unwrap().to_string());
    assert!(key(&entries[0]) > key(&entries[1]), "newest first: {entries:?}");
    texts.sort();
    assert_eq!(texts, ["hello one", "hello two"]);

    // Exactly one delivery job per (subscription, message): the active and
    // the paused subscription with the event, none for the other one.
    let jobs = sql(
        &dir.0,
        &format!(
            "SELECT json_extract(payload, '$.subscriptionId'), json_extract(payload, '$.eventId') FROM jobs \
             WHERE business_id = '{biz}' AND kind = 'webhooks.deliver' ORDER BY 1, 2"
        ),
    );
    let mut expected: Vec<String> = [&wants, &paused].iter().flat_map(|s| pmids.iter().map(move |p| format!("{s}|{p}"))).collect();
    expected.sort();
    assert_eq!(jobs.lines().collect::<Vec<_>>(), expected, "delivery jobs");
    assert!(!jobs.contains(&other));

    // The stored event payload (retryNumber is added per attempt by delivery).
    let raw = sql(
        &dir.0,
        &format!(
            "SELECT payload FROM jobs WHERE business_id = '{biz}' AND kind = 'webhooks.deliver' \
             AND json_extract(payload, '$.subscriptionId') = '{wants}' AND json_extract(payload, '$.eventId') = '{}'",
            pmids[0]
        ),
    );
    let job: Value = serde_json::from_str(raw.trim()).unwrap();
    let p = &job["payload"];
    assert_eq!(p["contractVersion"], "1.1");
    assert_eq!(p["eventId"], json!(pmids[0]));
    assert_eq!(p["eventType"], "chatapp.message.received");
    assert_eq!(p["businessId"], biz);
    assert_eq!(p["phoneNumberId"], PNID);
    assert_eq!(p["channel"], "chatapp");
    assert_eq!(p["conversationId"], conversation);
    assert_eq!(p["providerMessageId"], json!(pmids[0]));
    assert_eq!(p["customer"], json!({"mobileE164": FROM, "chatappId": "15550001234", "name": "Ada"}));
    assert_eq!(p["message"], json!({"type": "text", "text": "hello one"}));
    assert!(p["occurredAt"].as_str().is_some_and(|t| t.ends_with('Z')));
}

/// The sandbox-only inbound route: off by default; with --sandbox-routes it
/// takes a key of the business owning the number.
#[test]
fn the_sandbox_inbound_route_is_off_by_default_and_scoped_when_on() {
    let dir = DataDir::new();
    let body = json!({"phoneNumberId": PNID, "from": FROM, "text": "via http", "name": "Ada"});
    {
        let s = Server::start(&dir.0);
        let t = tenant(&dir.0, "all");
        s.as_key(&t.key).post("/sandbox/v1/chatapp/inbound", &body).assert_failure(404, "not_found");
    }
    let s = Server::start_with(&dir.0, &["--sandbox-routes"]);
    let owner = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &owner.business, "--channel", "chatapp", "--phone-number-id", PNID]);
    let other = tenant(&dir.0, "all");
    let r = s.as_key(&other.key).post("/sandbox/v1/chatapp/inbound", &body);
    r.assert_failure(404, "not_found");
    assert_eq!(r.code(), "phone_number_not_connected", "another business's number looks unconnected");
    let reader = key_without_chatapp_write(&dir.0, &owner.business);
    let r = s.as_key(&reader).post("/sandbox/v1/chatapp/inbound", &body);
    r.assert_failure(403, "authorization");
    s.req().post("/sandbox/v1/chatapp/inbound", &body).assert_failure(401, "authentication");
    let bad = json!({"phoneNumberId": PNID, "from": "12345", "text": "x"});
    s.as_key(&owner.key).post("/sandbox/v1/chatapp/inbound", &bad).assert_failure(400, "validation");
    let r = s.as_key(&owner.key).post("/sandbox/v1/chatapp/inbound", &body);
    let pmid = r.assert_ok(202)["providerMessageId"].as_str().unwrap().to_string();
    assert!(pmid.starts_with("sbx."));
    let started = Instant::now();
    loop {
        let list = s.as_key(&owner.key).get(&format!("/api/v1/contacts?businessId={}&search=%2B15550001234", owner.business));
        if list.data()["contacts"].as_array().is_some_and(|c| c.len() == 1) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the injected message was not processed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn key_without_chatapp_write(dir: &Path, business: &str) -> String {
    admin(dir, &["key", "create", "--business", business, "--scopes", "contacts:read"])["apiKey"].as_str().unwrap().to_string()
}
