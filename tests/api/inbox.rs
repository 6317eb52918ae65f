//! The inbox (issue 39, ours: operations 61-65): conversations across
//! chatapp and photoapp, newest activity first, with unread counts, the
//! last entry, search and filters; a conversation's thread of messages and
//! comments with delivery states; marking read; and the per-conversation
//! handoff, which stops the agent's auto-replies in that conversation only
//! until it is handed back.

use crate::harness::*;
use serde_json::{json, Value};

const PNID: &str = "pn-inbox-1";
const ACCOUNT: &str = "acct-inbox-1";

struct Inbox {
    dir: DataDir,
    s: Server,
    t: Tenant,
}

fn start() -> Inbox {
    start_with(&[])
}

fn start_with(extra: &[&str]) -> Inbox {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &[&["--sandbox-routes", "--messenger-setting", "step-delay-ms=1"], extra].concat());
    let t = tenant(&dir.0, "all");
    s.admin(&["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", PNID, "--label", "Desk"]);
    s.admin(&["channel", "connect", "--business", &t.business, "--channel", "photoapp", "--account-id", ACCOUNT, "--username", "shop"]);
    Inbox { dir, s, t }
}

impl Inbox {
    fn biz(&self) -> &str {
        &self.t.business
    }
    fn key(&self) -> Req<'_> {
        self.s.as_key(&self.t.key)
    }
    fn signal(&self, path: &str, body: Value) {
        let r = self.key().post(path, &body);
        wait_done(&self.dir.0, r.assert_ok(202)["jobId"].as_str().unwrap());
    }
    /// A chatapp message from `from` (the sandbox's inbound route).
    fn chat(&self, from: &str, name: &str, text: &str) {
        self.signal("/sandbox/v1/chatapp/inbound", json!({"phoneNumberId": PNID, "from": from, "text": text, "name": name}));
    }
    fn photo(&self, from: &str, name: &str, text: &str) {
        self.signal("/sandbox/v1/photoapp/inbound", json!({"photoappAccountId": ACCOUNT, "from": from, "text": text, "name": name}));
    }
    fn list(&self, query: &str) -> Value {
        let path = format!("/api/v1/conversations?businessId={}{query}", self.biz());
        let r = self.key().get(&path);
        assert_documented(&document_schemas(), "GET", &path, &r);
        r.assert_ok(200).clone()
    }
    /// The names (contact or handle) of a list's conversations, in order.
    fn names(&self, query: &str) -> Vec<String> {
        self.list(query)["conversations"].as_array().unwrap().iter().map(name).collect()
    }
    fn thread(&self, id: &str, query: &str) -> Value {
        let path = format!("/api/v1/conversations/{id}/thread?businessId={}{query}", self.biz());
        let r = self.key().get(&path);
        assert_documented(&document_schemas(), "GET", &path, &r);
        r.assert_ok(200).clone()
    }
    fn find(&self, who: &str) -> Value {
        self.list("")["conversations"].as_array().unwrap().iter().find(|c| name(c) == who).unwrap_or_else(|| panic!("no conversation of {who}")).clone()
    }
    fn handoff(&self, id: &str, active: bool) -> Value {
        let path = format!("/api/v1/conversations/{id}");
        let r = self.key().patch(&path, &json!({"businessId": self.biz(), "humanHandoffActive": active}));
        assert_documented(&document_schemas(), "PATCH", &path, &r);
        r.assert_ok(200)["conversation"].clone()
    }
    fn mark_read(&self, id: &str, body: Value) -> Resp {
        let mut b = json!({"businessId": self.biz()});
        b.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        self.key().post(&format!("/api/v1/conversations/{id}/read"), &b)
    }
    /// The auto-reply jobs of the business, each waited for.
    fn autoreplies(&self) -> usize {
        let ids = sql(&self.dir.0, &format!("SELECT id FROM jobs WHERE business_id = '{}' AND kind = 'messaging.autoreply'", self.biz()));
        ids.lines().for_each(|id| wait_done(&self.dir.0, id));
        ids.lines().count()
    }
    fn outbound(&self, conversation: &str) -> usize {
        sql(&self.dir.0, &format!("SELECT count(*) FROM messages WHERE conversation_id = '{conversation}' AND direction = 'outbound'")).trim().parse().unwrap()
    }
}

fn name(c: &Value) -> String {
    c["contact"]["name"].as_str().or(c["participantName"].as_str()).unwrap_or_default().to_string()
}

#[test]
fn newest_first_with_unread_counts_and_the_last_entry() {
    let i = start();
    i.chat("+15550001001", "Ada", "Hello from Ada");
    i.chat("+15550001002", "Bo", "Hi, Bo here");
    i.photo("u-1", "cy.photo", "Is the blue one in stock?");
    i.chat("+15550001001", "Ada", "Are you open on Sunday?");
    assert_eq!(i.names(""), ["Ada", "cy.photo", "Bo"]);

    let ada = i.find("Ada");
    assert_eq!((ada["channel"].as_str(), ada["phoneNumberId"].as_str(), ada["recipient"].as_str()), (Some("chatapp"), Some(PNID), Some("+15550001001")));
    assert_eq!(ada["unreadCount"], 2);
    assert_eq!((ada["lastEntry"]["text"].as_str(), ada["lastEntry"]["direction"].as_str()), (Some("Are you open on Sunday?"), Some("inbound")));
    assert_eq!((ada["status"].as_str(), ada["humanHandoffActive"].as_bool(), ada["agent"].is_null()), (Some("unassigned"), Some(false), true));
    let cy = i.find("cy.photo");
    assert_eq!((cy["contact"].is_null(), cy["recipient"].as_str(), cy["providerAccountId"].as_str()), (true, Some("u-1"), Some(ACCOUNT)));

    // Read: everything, or up to what the reader saw (later ones stay unread).
    let ada_id = ada["id"].as_str().unwrap();
    let read = i.mark_read(ada_id, json!({}));
    assert_documented(&document_schemas(), "POST", &format!("/api/v1/conversations/{ada_id}/read"), &read);
    assert_eq!(read.assert_ok(200)["conversation"]["unreadCount"], 0);
    assert_eq!(i.names("&unread=true"), ["cy.photo", "Bo"]);
    assert_eq!(i.names("&unread=false"), ["Ada"]);
    let bo = i.find("Bo")["id"].as_str().unwrap().to_string();
    i.chat("+15550001002", "Bo", "Anyone there?");
    let first = i.thread(&bo, "")["entries"][1]["id"].as_str().unwrap().to_string();
    assert_eq!(i.mark_read(&bo, json!({"lastSeenEntryId": first})).assert_ok(200)["conversation"]["unreadCount"], 1);
    // A reply of the business is activity, not unread.
    i.key().fresh().post("/api/v1/messages", &json!({"businessId": i.biz(), "phoneNumberId": PNID, "to": "+15550001002", "type": "text", "text": "Yes!"})).assert_ok(202);
    let b = i.find("Bo");
    assert_eq!((i.names("")[0].as_str(), b["unreadCount"].as_i64(), b["lastEntry"]["direction"].as_str()), ("Bo", Some(1), Some("outbound")));
    // The marker never moves back.
    let newest = i.thread(&bo, "")["entries"][1]["id"].as_str().unwrap().to_string();
    i.mark_read(&bo, json!({"lastSeenEntryId": newest})).assert_ok(200);
    assert_eq!(i.mark_read(&bo, json!({"lastSeenEntryId": first})).assert_ok(200)["conversation"]["unreadCount"], 0);
}

#[test]
fn search_and_each_filter() {
    let i = start();
    i.chat("+15550002001", "Ada Lovelace", "Do you deliver to Oslo?");
    i.chat("+15550002002", "Bo", "50% off still on?");
    i.photo("u-2", "cy.photo", "Hello");
    i.signal("/sandbox/v1/photoapp/comments", json!({"photoappAccountId": ACCOUNT, "from": "u-3", "text": "Ship to Bergen?", "name": "dee.d", "postId": "p-1", "commentId": "c-1"}));

    // q: a name (any case), a mobile's digits, a handle, a message's or a comment's text; LIKE's wildcards are literal.
    assert_eq!(i.names("&q=lovelace"), ["Ada Lovelace"]);
    assert_eq!(i.names("&q=2002"), ["Bo"]);
    assert_eq!(i.names("&q=cy.ph"), ["cy.photo"]);
    assert_eq!(i.names("&q=oslo"), ["Ada Lovelace"]);
    assert_eq!(i.names("&q=bergen"), ["dee.d"]);
    assert_eq!(i.names("&q=50%25"), ["Bo"]);
    assert!(i.names("&q=_").is_empty());
    assert!(i.names("&q=nobody").is_empty());

    assert_eq!(i.names("&channel=chatapp"), ["Bo", "Ada Lovelace"]);
    assert_eq!(i.names("&channel=photoapp"), ["dee.d", "cy.photo"]);

    // An agent answers the chatapp number: agentId and status follow the assignment.
    let agent = i.key().fresh().post("/api/v1/agents", &json!({"businessId": i.biz(), "channel": "chatapp", "name": "Desk agent", "instructions": "Help."})).assert_ok(201)["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    i.key().patch("/api/v1/channels/assignments", &json!({"businessId": i.biz(), "channel": "chatapp", "phoneNumberId": PNID, "aiAgentId": agent, "autoReplyEnabled": true})).assert_ok(200);
    assert_eq!(i.names(&format!("&agentId={agent}")), ["Bo", "Ada Lovelace"]);
    assert!(i.names(&format!("&agentId={}", i.t.business)).is_empty());
    assert_eq!(i.find("Bo")["agent"], json!({"id": agent, "name": "Desk agent"}));
    assert_eq!(i.names("&status=agent"), ["Bo", "Ada Lovelace"]);
    assert_eq!(i.names("&status=unassigned"), ["dee.d", "cy.photo"]);
    let bo = i.find("Bo")["id"].as_str().unwrap().to_string();
    assert_eq!(i.handoff(&bo, true)["status"], "human");
    assert_eq!(i.names("&status=human"), ["Bo"]);
    assert_eq!(i.names("&status=agent"), ["Ada Lovelace"]);
    // An external automation owns the photoapp account's replies.
    i.key()
        .fresh()
        .post(
            "/api/v1/webhook-subscriptions",
            &json!({"businessId": i.biz(), "channel": "photoapp", "providerAccountId": ACCOUNT, "callbackUrl": "http://127.0.0.1:9/hook", "events": ["photoapp.message.received"], "externalAutomation": true}),
        )
        .assert_ok(201);
    assert_eq!(i.names("&status=automation"), ["dee.d", "cy.photo"]);
    // Filters combine.
    assert_eq!(i.names("&channel=chatapp&status=agent&q=oslo"), ["Ada Lovelace"]);
    assert!(i.names("&channel=photoapp&status=agent").is_empty());
}

#[test]
fn pages_of_conversations_and_of_a_thread() {
    let i = start();
    for n in 0..5 {
        i.chat(&format!("+1555000300{n}"), &format!("P{n}"), &format!("message {n}"));
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    let mut pages = 0;
    loop {
        let page = i.list(&format!("&limit=2{cursor}"));
        seen.extend(page["conversations"].as_array().unwrap().iter().map(name));
        pages += 1;
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    assert_eq!((seen, pages), (vec!["P4", "P3", "P2", "P1", "P0"].into_iter().map(String::from).collect::<Vec<_>>(), 3));

    for n in 1..5 {
        i.chat("+15550003000", "P0", &format!("again {n}"));
    }
    let id = i.find("P0")["id"].as_str().unwrap().to_string();
    let mut texts = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = i.thread(&id, &format!("&limit=2{cursor}"));
        texts.extend(page["entries"].as_array().unwrap().iter().map(|e| e["text"].as_str().unwrap().to_string()));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(texts, ["again 4", "again 3", "again 2", "again 1", "message 0"]);
}

#[test]
fn the_thread_shows_delivery_states_and_comments() {
    let i = start();
    i.photo("u-5", "eve.e", "Hi there");
    i.signal("/sandbox/v1/photoapp/comments", json!({"photoappAccountId": ACCOUNT, "from": "u-5", "text": "Nice post", "name": "eve.e", "postId": "p-7", "commentId": "c-7"}));
    let eve = i.find("eve.e");
    let id = eve["id"].as_str().unwrap();
    assert_eq!((eve["unreadCount"].as_i64(), eve["lastEntry"]["kind"].as_str()), (Some(2), Some("comment")));
    // A reply as a person (sendMessage) joins the thread and is delivered.
    let sent = i.key().fresh().post("/api/v1/messages", &json!({"businessId": i.biz(), "channel": "photoapp", "photoappAccountId": ACCOUNT, "to": "u-5", "type": "text", "text": "Thanks!"}));
    let message = sent.assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let entry = poll("the reply delivered", || {
        let e = i.thread(id, "")["entries"][0].clone();
        (e["status"] == "delivered" || e["status"] == "read").then_some(e)
    });
    assert_eq!((entry["id"].as_str(), entry["direction"].as_str(), entry["kind"].as_str()), (Some(message.as_str()), Some("outbound"), Some("message")));
    assert!(entry["sentAt"].is_string() && entry["deliveredAt"].is_string(), "{entry}");
    let entries = i.thread(id, "")["entries"].clone();
    assert_eq!((entries[1]["kind"].as_str(), entries[1]["text"].as_str(), entries[1]["postId"].as_str()), (Some("comment"), Some("Nice post"), Some("p-7")));
    assert_eq!((entries[2]["kind"].as_str(), entries[2]["status"].as_str()), (Some("message"), Some("received")));
    // Marking read up to the comment.
    let comment = entries[1]["id"].as_str().unwrap();
    assert_eq!(i.mark_read(id, json!({"lastSeenEntryId": comment})).assert_ok(200)["conversation"]["unreadCount"], 0);
}

#[test]
fn a_handoff_stops_auto_replies_in_that_conversation_until_handed_back() {
    let i = start();
    let agent = i.key().fresh().post("/api/v1/agents", &json!({"businessId": i.biz(), "channel": "chatapp", "name": "Desk agent", "instructions": "Help."})).assert_ok(201)["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    i.key().patch("/api/v1/channels/assignments", &json!({"businessId": i.biz(), "channel": "chatapp", "phoneNumberId": PNID, "aiAgentId": agent, "autoReplyEnabled": true})).assert_ok(200);
    i.chat("+15550004001", "Ada", "first");
    assert_eq!(i.autoreplies(), 1);
    let ada = i.find("Ada")["id"].as_str().unwrap().to_string();
    poll("the agent's reply", || (i.outbound(&ada) == 1).then_some(()));

    // Taken over: the agent stays silent in Ada's conversation, not in Bo's.
    let c = i.handoff(&ada, true);
    assert_eq!((c["humanHandoffActive"].as_bool(), c["status"].as_str()), (Some(true), Some("human")));
    assert!(i.handoff(&ada, true)["humanHandoffActive"].as_bool().unwrap(), "taking over twice is the same");
    i.chat("+15550004001", "Ada", "second");
    i.chat("+15550004002", "Bo", "hello");
    assert_eq!(i.autoreplies(), 2, "Bo's message only");
    let bo = i.find("Bo")["id"].as_str().unwrap().to_string();
    poll("Bo's reply", || (i.outbound(&bo) == 1).then_some(()));
    assert_eq!(i.outbound(&ada), 1, "no auto-reply while a person has it");
    // The person answers with sendMessage.
    i.key().fresh().post("/api/v1/messages", &json!({"businessId": i.biz(), "phoneNumberId": PNID, "to": "+15550004001", "type": "text", "text": "Hi, Sam here."})).assert_ok(202);
    assert_eq!(i.outbound(&ada), 2);

    // Handed back: the next message is answered again.
    let c = i.handoff(&ada, false);
    assert_eq!((c["humanHandoffActive"].as_bool(), c["status"].as_str()), (Some(false), Some("agent")));
    i.chat("+15550004001", "Ada", "third");
    assert_eq!(i.autoreplies(), 3);
    poll("the agent's reply after hand back", || (i.outbound(&ada) == 3).then_some(()));
}

#[test]
fn bad_input_is_refused_in_the_failure_envelope() {
    let i = start();
    i.chat("+15550005001", "Ada", "hello");
    let id = i.find("Ada")["id"].as_str().unwrap().to_string();
    let biz = i.biz().to_string();
    let k = i.key();
    let missing = "01890000-0000-7000-8000-000000000000";
    for path in [format!("/api/v1/conversations/{missing}?businessId={biz}"), format!("/api/v1/conversations/{missing}/thread?businessId={biz}")] {
        assert_eq!(k.get(&path).assert_failure(404, "not_found").code(), "conversation_not_found");
    }
    let r = k.get(&format!("/api/v1/conversations/not-a-uuid/thread?businessId={biz}"));
    assert_eq!(r.assert_failure(400, "validation").code(), "invalid_path_parameter");
    for query in ["&status=busy", "&channel=sms", "&unread=yes", "&limit=0", "&limit=201", "&cursor=nope", "&agentId=x", &format!("&q={}", "x".repeat(101)), "&q="] {
        k.get(&format!("/api/v1/conversations?businessId={biz}{query}")).assert_failure(400, "validation");
    }
    k.get(&format!("/api/v1/conversations/{id}/thread?businessId={biz}&cursor=nope")).assert_failure(400, "validation");
    let patch = |body: Value| k.patch(&format!("/api/v1/conversations/{id}"), &body);
    patch(json!({"businessId": biz})).assert_failure(400, "validation");
    patch(json!({"businessId": biz, "humanHandoffActive": "yes"})).assert_failure(400, "validation");
    patch(json!({"businessId": biz, "humanHandoffActive": true, "extra": 1})).assert_failure(400, "validation");
    let r = k.patch(&format!("/api/v1/conversations/{missing}"), &json!({"businessId": biz, "humanHandoffActive": true}));
    assert_eq!(r.assert_failure(404, "not_found").code(), "conversation_not_found");
    assert_eq!(i.mark_read(&id, json!({"lastSeenEntryId": missing})).assert_failure(404, "not_found").code(), "entry_not_found");
    i.mark_read(&id, json!({"lastSeenEntryId": "x"})).assert_failure(400, "validation");
    assert_eq!(i.find("Ada")["humanHandoffActive"], false, "nothing was written");

    // Another business sees none of it; a read-only key writes nothing.
    let other = tenant(&i.dir.0, "all");
    let r = i.s.as_key(&other.key).get(&format!("/api/v1/conversations/{id}?businessId={}", other.business));
    assert_eq!(r.assert_failure(404, "not_found").code(), "conversation_not_found");
    assert!(i.s.as_key(&other.key).get(&format!("/api/v1/conversations?businessId={}", other.business)).assert_ok(200)["conversations"].as_array().unwrap().is_empty());
    let k2 = admin(&i.dir.0, &["key", "create", "--business", &biz, "--scopes", "communications:read"])["apiKey"].as_str().unwrap().to_string();
    i.s.as_key(&k2).get(&format!("/api/v1/conversations/{id}?businessId={biz}")).assert_ok(200);
    let r = i.s.as_key(&k2).patch(&format!("/api/v1/conversations/{id}"), &json!({"businessId": biz, "humanHandoffActive": true}));
    assert_eq!(r.assert_failure(403, "authorization").code(), "missing_scope");
    let r = i.s.as_key(&k2).post(&format!("/api/v1/conversations/{id}/read"), &json!({"businessId": biz}));
    assert_eq!(r.assert_failure(403, "authorization").code(), "missing_scope");
}

#[test]
fn a_photoapp_conversation_taken_over_gets_no_auto_reply() {
    let i = start();
    let agent = i.key().fresh().post("/api/v1/agents", &json!({"businessId": i.biz(), "channel": "photoapp", "name": "Shop agent", "instructions": "Help."})).assert_ok(201)["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    i.key().patch("/api/v1/channels/assignments", &json!({"businessId": i.biz(), "channel": "photoapp", "providerAccountId": ACCOUNT, "aiAgentId": agent, "autoReplyEnabled": true})).assert_ok(200);
    i.photo("u-8", "hal.h", "first");
    assert_eq!(i.autoreplies(), 1);
    let hal = i.find("hal.h");
    let id = hal["id"].as_str().unwrap().to_string();
    assert_eq!((hal["status"].as_str(), hal["agent"]["name"].as_str()), (Some("agent"), Some("Shop agent")));
    poll("the agent's reply", || (i.outbound(&id) == 1).then_some(()));

    assert_eq!(i.handoff(&id, true)["status"], "human");
    i.photo("u-8", "hal.h", "second");
    assert_eq!(i.autoreplies(), 1, "no auto-reply job while a person has it");
    i.handoff(&id, false);
    i.photo("u-8", "hal.h", "third");
    assert_eq!(i.autoreplies(), 2);
    poll("the agent's reply after hand back", || (i.outbound(&id) == 2).then_some(()));
}

/// A person who takes the conversation over while the agent's turn is
/// under way (here: while the AI endpoint answers) gets no agent reply
/// after it: the job checks the handoff again before it writes.
#[test]
fn a_takeover_during_the_agents_turn_stops_its_reply() {
    let before = crate::autoreply::BeforeAnswer::default();
    let (url, called) = crate::autoreply::fake_completions_with("Noted.", before.clone());
    let i = start_with(&["--ai-endpoint", &url, "--ai-model", "test-model"]);
    let agent = i.key().fresh().post("/api/v1/agents", &json!({"businessId": i.biz(), "channel": "chatapp", "name": "Desk agent", "instructions": "Help."})).assert_ok(201)["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    i.key().patch("/api/v1/channels/assignments", &json!({"businessId": i.biz(), "channel": "chatapp", "phoneNumberId": PNID, "aiAgentId": agent, "autoReplyEnabled": true})).assert_ok(200);
    let (status_tx, status_rx) = std::sync::mpsc::channel();
    let (base, key, biz) = (i.s.base.clone(), i.t.key.clone(), i.biz().to_string());
    *before.lock().unwrap() = Some(Box::new(move || {
        let http = reqwest::blocking::Client::new();
        let list: Value = http.get(format!("{base}/api/v1/conversations?businessId={biz}")).bearer_auth(&key).send().unwrap().json().unwrap();
        let id = list["data"]["conversations"][0]["id"].as_str().unwrap().to_string();
        let r = http.patch(format!("{base}/api/v1/conversations/{id}")).bearer_auth(&key).json(&json!({"businessId": biz, "humanHandoffActive": true})).send().unwrap();
        status_tx.send(r.status().as_u16()).unwrap();
    }));
    i.chat("+15550006001", "Ada", "hello");
    assert_eq!(i.autoreplies(), 1);
    called.recv_timeout(std::time::Duration::from_secs(60)).expect("the agent's turn asked the AI endpoint");
    assert_eq!(status_rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap(), 200, "taken over during the turn");
    let ada = i.find("Ada");
    assert_eq!((ada["humanHandoffActive"].as_bool(), i.outbound(ada["id"].as_str().unwrap())), (Some(true), 0), "no reply after the takeover");
}
