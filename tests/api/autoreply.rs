//! AI auto-reply (issue 4 point 7, the reply half): an inbound chatapp
//! message on a number with no active or paused external-automation subscription,
//! whose assigned agent auto-replies without a human handoff, gets a reply
//! from the `ai` interface (here the embedded deterministic offline
//! responder), stored as a queued outbound text message in the conversation
//! plus a timeline entry, and handed to `messaging.deliver`. The history bound (20) is unit-tested in the
//! dispatcher (autoreply.rs).

use crate::harness::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

const PNID: &str = "pn-auto-1";
const FROM: &str = "+15550004321";

/// Injects an inbound message and waits until `messaging.inbound` is done.
fn inbound(dir: &Path, text: &str) {
    let r = admin(dir, &["sandbox", "inbound", "--phone-number-id", PNID, "--from", FROM, "--text", text, "--name", "Ada"]);
    wait_done(dir, r["jobId"].as_str().unwrap());
}

fn expected(text: &str) -> String {
    let quoted: String = text.chars().take(200).collect();
    format!("Thanks for your message: \"{quoted}\". An agent will follow up.")
}

/// Outbound messages of the business: `text|type|conversation`.
fn outbound(dir: &Path, biz: &str) -> Vec<String> {
    sql(dir, &format!("SELECT text, type, conversation_id FROM messages WHERE business_id = '{biz}' AND direction = 'outbound' ORDER BY created_at, id")).lines().map(str::to_string).collect()
}

/// Waits for every `messaging.autoreply` job of the business to finish.
fn autoreplies_settled(dir: &Path, biz: &str) -> usize {
    let ids = sql(dir, &format!("SELECT id FROM jobs WHERE business_id = '{biz}' AND kind = 'messaging.autoreply'"));
    let ids: Vec<&str> = ids.lines().collect();
    for id in &ids {
        wait_done(dir, id);
    }
    ids.len()
}

struct Setup {
    dir: DataDir,
    s: Server,
    t: Tenant,
    agent: String,
}

fn setup() -> Setup {
    setup_with(&[])
}

fn setup_with(extra: &[&str]) -> Setup {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, extra);
    let t = tenant(&dir.0, "all");
    let biz = t.business.clone();
    s.admin(&["channel", "connect", "--business", &biz, "--channel", "chatapp", "--phone-number-id", PNID, "--label", "Support"]);
    let body = json!({"businessId": biz, "channel": "chatapp", "name": "Front desk", "instructions": "Answer questions about opening hours."});
    let agent = s.as_key(&t.key).fresh().post("/api/v1/agents", &body).assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    let su = Setup { dir, s, t, agent };
    su.assign(true, false);
    su
}

impl Setup {
    fn biz(&self) -> &str {
        &self.t.business
    }
    fn assign(&self, auto: bool, handoff: bool) {
        let body = json!({"businessId": self.biz(), "channel": "chatapp", "phoneNumberId": PNID, "aiAgentId": self.agent,
                          "autoReplyEnabled": auto, "humanHandoffActive": handoff});
        let d = self.s.as_key(&self.t.key).patch("/api/v1/channels/assignments", &body).assert_ok(200).clone();
        assert_eq!((d["autoReplyEnabled"].clone(), d["humanHandoffActive"].clone()), (json!(auto), json!(handoff)));
    }
}

#[test]
fn assigned_agent_answers_with_the_offline_responder() {
    let su = setup();
    let (dir, biz) = (&su.dir.0, su.biz());
    inbound(dir, "What are your opening hours?");
    let replies = poll("the reply", || {
        let o = outbound(dir, biz);
        (!o.is_empty()).then_some(o)
    });
    let conversation = sql(dir, &format!("SELECT id FROM conversations WHERE business_id = '{biz}' AND phone_number_id = '{PNID}'"));
    let conversation = conversation.trim();
    assert_eq!(replies, [format!("{}|text|{conversation}", expected("What are your opening hours?"))]);
    assert_eq!(autoreplies_settled(dir, biz), 1);
    // Stored queued for the contact's mobile and handed to the same delivery
    // job as an API send (which then moves its status on).
    let row = sql(
        dir,
        &format!(
            "SELECT m.recipient, m.phone_number_id, m.queued_at IS NOT NULL, j.kind, json_extract(j.payload, '$.messageId') = m.id, m.status \
         FROM messages m JOIN jobs j ON j.id = m.task_ref WHERE m.business_id = '{biz}' AND m.direction = 'outbound'"
        ),
    );
    let cols: Vec<&str> = row.trim().split('|').collect();
    assert_eq!(cols[..5], [FROM, PNID, "1", "messaging.deliver", "1"], "{row}");
    assert!(["queued", "submitted", "accepted", "sent", "delivered", "read"].contains(&cols[5]), "{row}");

    // The reply is on the contact's timeline, after the inbound message.
    let contact = sql(dir, &format!("SELECT contact_id FROM conversations WHERE id = '{conversation}'"));
    let tl = su.s.as_key(&su.t.key).get(&format!("/api/v1/contacts/{}/timeline?businessId={biz}", contact.trim()));
    let entries: Vec<Value> = tl.assert_ok(200)["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[0]["direction"], "outbound");
    assert_eq!(entries[0]["channel"], "chatapp");
    assert_eq!(entries[0]["summary"]["text"], json!(expected("What are your opening hours?")));
    assert_eq!(entries[1]["direction"], "inbound");

    // A long message is quoted up to 200 characters; each message gets its reply.
    let long = format!("{}tail", "x".repeat(200));
    inbound(dir, &long);
    assert_eq!(autoreplies_settled(dir, biz), 2);
    let replies = outbound(dir, biz);
    assert_eq!(replies.len(), 2);
    assert!(replies[1].starts_with(&format!("{}|text|", expected(&long))), "{replies:?}");
    assert!(!replies[1].contains("tail"));
}

#[test]
fn no_reply_under_external_automation_handoff_or_auto_reply_off() {
    let su = setup();
    let (dir, biz) = (&su.dir.0, su.biz());
    let key = &su.t.key;

    // An active subscription on the number: the integrator answers.
    let body = json!({"businessId": biz, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": "http://127.0.0.1:9/hook",
                      "events": ["chatapp.message.received"], "externalAutomation": true});
    let sub = su.s.as_key(key).post("/api/v1/webhook-subscriptions", &body).assert_ok(201)["subscription"]["id"].as_str().unwrap().to_string();
    inbound(dir, "first");
    assert_eq!(autoreplies_settled(dir, biz), 0, "no reply job under external automation");
    assert!(outbound(dir, biz).is_empty());

    // Paused: the integrator still owns the replies (it would answer this
    // message after resuming; a reply now would be a second answer).
    su.s.as_key(key).patch(&format!("/api/v1/webhook-subscriptions/{sub}"), &json!({"businessId": biz, "status": "paused"})).assert_ok(200);
    inbound(dir, "paused");
    assert_eq!(autoreplies_settled(dir, biz), 0, "no reply job while the external automation is paused");
    assert!(outbound(dir, biz).is_empty());

    // Revoked: the assignment decides again, and it says reply.
    su.s.as_key(key).send("DELETE", &format!("/api/v1/webhook-subscriptions/{sub}?businessId={biz}"), None).assert_ok(200);
    inbound(dir, "second");
    assert_eq!(autoreplies_settled(dir, biz), 1);
    let replies = outbound(dir, biz);
    assert_eq!(replies.len(), 1);
    assert!(replies[0].starts_with(&expected("second")), "{replies:?}");

    // A human handoff: no reply.
    su.assign(true, true);
    inbound(dir, "third");
    assert_eq!(autoreplies_settled(dir, biz), 1);
    // Auto reply off: no reply.
    su.assign(false, false);
    inbound(dir, "fourth");
    assert_eq!(autoreplies_settled(dir, biz), 1);
    assert_eq!(outbound(dir, biz).len(), 1);

    // Back on: the reply sees the latest message.
    su.assign(true, false);
    inbound(dir, "fifth");
    assert_eq!(autoreplies_settled(dir, biz), 2);
    let replies = outbound(dir, biz);
    assert!(replies[1].starts_with(&expected("fifth")), "{replies:?}");
}

/// Runs inside the fake endpoint before it answers.
pub(crate) type BeforeAnswer = std::sync::Arc<std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>>;

/// A one-shot OpenAI-compatible chat-completions endpoint: returns the
/// request body it received through the channel and answers `reply`.
pub(crate) fn fake_completions(reply: &'static str) -> (String, std::sync::mpsc::Receiver<(String, Value)>) {
    fake_completions_with(reply, BeforeAnswer::default())
}

/// As [`fake_completions`], running `before` (when set) before answering.
pub(crate) fn fake_completions_with(reply: &'static str, before: BeforeAnswer) -> (String, std::sync::mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let request = read_request(&stream).unwrap();
        if let Some(f) = before.lock().unwrap().take() {
            f();
        }
        let answer = json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}]}).to_string();
        answer_json(&stream, &answer);
        tx.send((request.request_line, serde_json::from_slice(&request.body).unwrap())).unwrap();
    });
    (url, rx)
}

#[test]
fn configured_endpoint_gets_instructions_and_history() {
    let (url, rx) = fake_completions("We open at 9.");
    let su = setup_with(&["--ai-endpoint", &url, "--ai-model", "test-model"]);
    let (dir, biz) = (&su.dir.0, su.biz());
    inbound(dir, "When do you open?");
    assert_eq!(autoreplies_settled(dir, biz), 1);
    let (request_line, body) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(request_line.starts_with("POST /v1/chat/completions "), "{request_line}");
    assert_eq!(
        body,
        json!({"model": "test-model", "messages": [
            {"role": "system", "content": "Answer questions about opening hours."},
            {"role": "user", "content": "When do you open?"}]})
    );
    let replies = outbound(dir, biz);
    assert_eq!(replies.len(), 1);
    assert!(replies[0].starts_with("We open at 9.|text|"), "{replies:?}");
}

/// The agent's turn holds no write lock while it waits for the AI endpoint:
/// the endpoint itself creates a contact through the API before it answers.
/// Were the write gate held across the call, that create would wait for the
/// job (which waits for the endpoint) until the gate's 30 s wait ran out and
/// answer 503.
#[test]
fn the_ai_call_holds_no_write_lock() {
    let before = BeforeAnswer::default();
    let (url, rx) = fake_completions_with("Noted.", before.clone());
    let su = setup_with(&["--ai-endpoint", &url, "--ai-model", "test-model"]);
    let (dir, biz) = (&su.dir.0, su.biz().to_string());
    let (status_tx, status_rx) = std::sync::mpsc::channel();
    let category = su.s.as_key(&su.t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": biz, "name": "Walk-ins"})).assert_ok(201)["category"]["id"].as_str().unwrap().to_string();
    let (base, key, business) = (su.s.base.clone(), su.t.key.clone(), biz.clone());
    *before.lock().unwrap() = Some(Box::new(move || {
        let r = reqwest::blocking::Client::new()
            .post(format!("{base}/api/v1/contacts"))
            .bearer_auth(key)
            .header("idempotency-key", "during-the-ai-call")
            .json(&json!({"businessId": business, "name": "Grace", "mobile": "+15550009876", "categoryIds": [category]}))
            .timeout(Duration::from_secs(60))
            .send()
            .unwrap();
        status_tx.send(r.status().as_u16()).unwrap();
    }));
    inbound(dir, "Anyone there?");
    assert_eq!(autoreplies_settled(dir, &biz), 1);
    rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(status_rx.recv_timeout(Duration::from_secs(60)).unwrap(), 201, "a write during the AI call must not wait for the job");
    let replies = outbound(dir, &biz);
    assert_eq!(replies.len(), 1);
    assert!(replies[0].starts_with("Noted.|text|"), "{replies:?}");
}

/// A photoapp account's assigned agent answers a participant's direct
/// message the same way (no contact needed); with
/// `photoappCollectMobileEnabled` (the default) its instructions ask for the
/// customer's mobile.
#[test]
fn a_photoapp_agent_answers_a_participant() {
    let (url, rx) = fake_completions("Happy to help!");
    let su = setup_with(&["--ai-endpoint", &url, "--ai-model", "test-model"]);
    let (dir, biz) = (&su.dir.0, su.biz().to_string());
    su.s.admin(&["channel", "connect", "--business", &biz, "--channel", "photoapp", "--account-id", "acct-auto-1"]);
    let k = || su.s.as_key(&su.t.key);
    let agent = k().fresh().post("/api/v1/agents", &json!({"businessId": biz, "channel": "photoapp", "name": "Shop", "instructions": "Sell shoes."}));
    let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    let body = json!({"businessId": biz, "channel": "photoapp", "providerAccountId": "acct-auto-1", "aiAgentId": agent, "autoReplyEnabled": true});
    k().patch("/api/v1/channels/assignments", &body).assert_ok(200);

    let r = admin(dir, &["sandbox", "inbound", "--channel", "photoapp", "--account-id", "acct-auto-1", "--from", "u-7", "--text", "Do you ship?"]);
    wait_done(dir, r["jobId"].as_str().unwrap());
    assert_eq!(autoreplies_settled(dir, &biz), 1);
    let (_, sent) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("Sell shoes.") && system.contains("mobile number"), "{system}");
    assert_eq!(sent["messages"][1], json!({"role": "user", "content": "Do you ship?"}));
    let reply = sql(dir, &format!("SELECT text, channel, recipient, phone_number_id, IFNULL(contact_id, '-') FROM messages WHERE business_id = '{biz}' AND direction = 'outbound'"));
    assert_eq!(reply.trim(), "Happy to help!|photoapp|u-7|acct-auto-1|-");
}
