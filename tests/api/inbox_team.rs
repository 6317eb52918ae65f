//! The team inbox (issue 50, ours: operations 76-81 and 61-65's new
//! fields): the support-agent role, which answers conversations and
//! configures nothing; assignment to a person; open and resolved (a new
//! inbound message reopens); internal notes, never sent; unread per person;
//! who sent each outbound message; saved replies.

use crate::console::{assert_code, user, Browser};
use crate::harness::*;
use serde_json::{json, Value};

const PNID: &str = "pn-team-1";

struct Team {
    dir: DataDir,
    s: Server,
    t: Tenant,
}

fn start() -> Team {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--sandbox-routes", "--messenger-setting", "step-delay-ms=1"]);
    let t = tenant(&dir.0, "all");
    s.admin(&["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", PNID, "--label", "Desk"]);
    user(&dir.0, &t.business, "owner@team.example", "owner");
    user(&dir.0, &t.business, "agent@team.example", "agent");
    user(&dir.0, &t.business, "viewer@team.example", "viewer");
    Team { dir, s, t }
}

impl Team {
    fn biz(&self) -> &str {
        &self.t.business
    }
    fn key(&self) -> Req<'_> {
        self.s.as_key(&self.t.key)
    }
    fn chat(&self, from: &str, name: &str, text: &str) {
        let r = self.key().post("/sandbox/v1/chatapp/inbound", &json!({"phoneNumberId": PNID, "from": from, "text": text, "name": name}));
        wait_done(&self.dir.0, r.assert_ok(202)["jobId"].as_str().unwrap());
    }
    /// The conversations `b` lists with `query`, by contact name, checked
    /// against the document.
    fn names(&self, b: &mut Browser, query: &str) -> Vec<String> {
        let path = format!("/api/v1/conversations?businessId={}{query}", self.biz());
        let r = b.get(&path);
        assert_documented(&document_schemas(), "GET", &path, &r);
        r.assert_ok(200)["conversations"].as_array().unwrap().iter().map(|c| c["contact"]["name"].as_str().unwrap().to_string()).collect()
    }
    fn find(&self, b: &mut Browser, who: &str) -> Value {
        let r = b.get(&format!("/api/v1/conversations?businessId={}", self.biz()));
        r.assert_ok(200)["conversations"].as_array().unwrap().iter().find(|c| c["contact"]["name"] == who).unwrap_or_else(|| panic!("no {who}")).clone()
    }
    fn thread(&self, b: &mut Browser, id: &str) -> Vec<Value> {
        let path = format!("/api/v1/conversations/{id}/thread?businessId={}", self.biz());
        let r = b.get(&path);
        assert_documented(&document_schemas(), "GET", &path, &r);
        r.assert_ok(200)["entries"].as_array().unwrap().clone()
    }
    fn update(&self, b: &mut Browser, id: &str, body: Value) -> Resp {
        let mut full = json!({"businessId": self.biz()});
        full.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
        let path = format!("/api/v1/conversations/{id}");
        let r = b.send("PATCH", &path, Some(full));
        if r.status < 300 {
            assert_documented(&document_schemas(), "PATCH", &path, &r);
        }
        r
    }
    fn reply(&self, b: &mut Browser, to: &str, text: &str) -> Resp {
        b.post("/api/v1/messages", json!({"businessId": self.biz(), "phoneNumberId": PNID, "to": to, "type": "text", "text": text}))
    }
    fn outbound(&self) -> usize {
        sql(&self.dir.0, &format!("SELECT count(*) FROM messages WHERE business_id = '{}' AND direction = 'outbound'", self.biz())).trim().parse().unwrap()
    }
}

#[test]
fn a_support_agent_answers_and_configures_nothing() {
    let t = start();
    t.chat("+15550007001", "Ada", "Hello?");
    let mut agent = Browser::login(&t.s, "agent@team.example");
    let me = agent.get("/console/api/session").data().clone();
    assert_eq!(me["role"], "agent");
    let scopes: Vec<&str> = me["scopes"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(scopes.contains(&"communications:write") && scopes.contains(&"contacts:read") && scopes.contains(&"campaigns:read"), "{scopes:?}");
    for s in ["agents:write", "channels:write", "webhooks:write", "campaigns:write", "contacts:write", "voice:write", "data_sources:write"] {
        assert!(!scopes.contains(&s), "{s} in {scopes:?}");
    }

    // A day's work: read, reply, assign, note, resolve, use a saved reply.
    let ada = t.find(&mut agent, "Ada");
    let id = ada["id"].as_str().unwrap();
    t.reply(&mut agent, "+15550007001", "Hi Ada, Sam here.").assert_ok(202);
    let user_id = me["userId"].as_str().unwrap();
    t.update(&mut agent, id, json!({"assignedUserId": user_id, "humanHandoffActive": true})).assert_ok(200);
    agent.post(&format!("/api/v1/conversations/{id}/notes"), json!({"businessId": t.biz(), "text": "Wants a refund."})).assert_ok(201);
    let c = t.update(&mut agent, id, json!({"state": "resolved"})).assert_ok(200)["conversation"].clone();
    assert_eq!((c["state"].as_str(), c["assignee"]["email"].as_str()), (Some("resolved"), Some("agent@team.example")));
    agent.post("/api/v1/saved-replies", json!({"businessId": t.biz(), "title": "Hours", "text": "We open at 9."})).assert_ok(201);

    // Nothing that configures the business, through the API or the console's own routes.
    let biz = t.biz().to_string();
    let refused = [
        ("POST", "/api/v1/agents", json!({"businessId": biz, "channel": "chatapp", "name": "X", "instructions": "Help."})),
        ("PATCH", "/api/v1/channels/assignments", json!({"businessId": biz, "channel": "chatapp", "phoneNumberId": PNID, "autoReplyEnabled": false})),
        ("POST", "/api/v1/webhook-subscriptions", json!({"businessId": biz, "url": "https://example.com/h", "events": ["message.received"]})),
        ("POST", "/api/v1/campaigns", json!({"businessId": biz, "name": "C"})),
        ("POST", "/api/v1/contacts", json!({"businessId": biz, "name": "Z", "mobile": "+15550007999"})),
        ("POST", "/api/v1/data-sources", json!({"businessId": biz, "name": "D"})),
    ];
    for (method, path, body) in refused {
        let r = agent.send(method, path, Some(body));
        assert_code(&r, 403, "authorization", "missing_scope");
    }
    for (method, path, body, code) in [
        ("POST", "/console/api/keys", Some(json!({"name": "k", "scopes": ["contacts:read"]})), "owner_role_required"),
        ("GET", "/console/api/users", None, "owner_role_required"),
        ("POST", "/console/api/users", Some(json!({"email": "x@team.example", "role": "agent"})), "owner_role_required"),
        ("PUT", "/console/api/voice", Some(json!({"lines": 2})), "owner_role_required"),
        ("POST", "/console/api/credits", Some(json!({"microcredits": 5})), "owner_role_required"),
        ("PUT", "/console/api/providers/messenger", Some(json!({"plugin": null})), "owner_role_required"),
    ] {
        assert_code(&agent.send(method, path, body), 403, "authorization", code);
    }

    // A viewer reads and answers nothing.
    let mut viewer = Browser::login(&t.s, "viewer@team.example");
    assert_eq!(t.names(&mut viewer, ""), ["Ada"]);
    assert_code(&t.reply(&mut viewer, "+15550007001", "hi"), 403, "authorization", "missing_scope");
    assert_code(&t.update(&mut viewer, id, json!({"state": "open"})), 403, "authorization", "missing_scope");
    assert_code(&viewer.post(&format!("/api/v1/conversations/{id}/notes"), json!({"businessId": t.biz(), "text": "x"})), 403, "authorization", "missing_scope");

    // An owner invites a support agent and changes a role to agent.
    let mut owner = Browser::login(&t.s, "owner@team.example");
    assert_eq!(owner.post("/console/api/users", json!({"email": "new@team.example", "role": "agent"})).assert_ok(201)["role"], "agent");
    let viewer_id = owner.get("/console/api/users").data()["users"].as_array().unwrap().iter().find(|u| u["email"] == "viewer@team.example").unwrap()["userId"].as_str().unwrap().to_string();
    owner.send("PATCH", &format!("/console/api/users/{viewer_id}"), Some(json!({"role": "agent"}))).assert_ok(200);
    let mut promoted = Browser::login(&t.s, "viewer@team.example");
    t.reply(&mut promoted, "+15550007001", "Now I can answer.").assert_ok(202);
}

#[test]
fn assignment_state_notes_unread_and_who_sent_it() {
    let t = start();
    t.chat("+15550008001", "Ada", "first from Ada");
    t.chat("+15550008002", "Bo", "first from Bo");
    let mut agent = Browser::login(&t.s, "agent@team.example");
    let mut owner = Browser::login(&t.s, "owner@team.example");

    // The team, as the business's database holds it.
    let path = format!("/api/v1/team-members?businessId={}", t.biz());
    let r = agent.get(&path);
    assert_documented(&document_schemas(), "GET", &path, &r);
    let members = r.assert_ok(200)["members"].as_array().unwrap().clone();
    let emails: Vec<&str> = members.iter().map(|m| m["email"].as_str().unwrap()).collect();
    assert_eq!(emails, ["agent@team.example", "owner@team.example", "viewer@team.example"]);
    assert_eq!(members.iter().filter(|m| m["you"] == true).map(|m| m["email"].as_str().unwrap()).collect::<Vec<_>>(), ["agent@team.example"]);
    let id_of = |email: &str| members.iter().find(|m| m["email"] == email).unwrap()["userId"].as_str().unwrap().to_string();
    let (agent_id, viewer_id) = (id_of("agent@team.example"), id_of("viewer@team.example"));
    assert!(t.key().get(&path).assert_ok(200)["members"].as_array().unwrap().iter().all(|m| m["you"] == false));

    // Assignment, and the filters mine and unassigned.
    let ada = t.find(&mut agent, "Ada")["id"].as_str().unwrap().to_string();
    let bo = t.find(&mut agent, "Bo")["id"].as_str().unwrap().to_string();
    assert_eq!(t.names(&mut agent, "&assignee=none"), ["Bo", "Ada"]);
    let c = t.update(&mut owner, &ada, json!({"assignedUserId": agent_id})).assert_ok(200)["conversation"].clone();
    assert_eq!(c["assignee"], json!({"userId": agent_id, "email": "agent@team.example"}));
    assert_eq!(t.names(&mut agent, "&assignee=me"), ["Ada"]);
    assert!(t.names(&mut owner, "&assignee=me").is_empty());
    assert_eq!(t.names(&mut owner, &format!("&assignee={agent_id}")), ["Ada"]);
    assert_eq!(t.names(&mut owner, "&assignee=none"), ["Bo"]);
    for who in [viewer_id.as_str(), "01890000-0000-7000-8000-000000000000"] {
        assert_code(&t.update(&mut owner, &bo, json!({"assignedUserId": who})), 404, "not_found", "assignee_not_found");
    }
    let r = t.key().get(&format!("/api/v1/conversations?businessId={}&assignee=me", t.biz()));
    assert!(r.assert_ok(200)["conversations"].as_array().unwrap().is_empty(), "an API key is nobody: {}", r.text);
    t.key().get(&format!("/api/v1/conversations?businessId={}&assignee=someone", t.biz())).assert_failure(400, "validation");
    assert!(t.update(&mut owner, &ada, json!({"assignedUserId": null})).assert_ok(200)["conversation"]["assignee"].is_null());
    t.update(&mut owner, &ada, json!({"assignedUserId": agent_id})).assert_ok(200);

    // Unread is each person's own.
    let read = agent.post(&format!("/api/v1/conversations/{ada}/read"), json!({"businessId": t.biz()}));
    assert_eq!(read.assert_ok(200)["conversation"]["unreadCount"], 0);
    assert_eq!(t.find(&mut owner, "Ada")["unreadCount"], 1, "the owner has not read it");
    assert_eq!(t.names(&mut owner, "&unread=true"), ["Bo", "Ada"]);
    assert_eq!(t.names(&mut agent, "&unread=true"), ["Bo"]);
    assert_eq!(t.names(&mut agent, "&unread=false"), ["Ada"]);
    t.chat("+15550008001", "Ada", "second from Ada");
    assert_eq!(t.find(&mut agent, "Ada")["unreadCount"], 1);
    assert_eq!(t.find(&mut owner, "Ada")["unreadCount"], 2);

    // Notes stay in the thread and are never sent.
    let before = t.outbound();
    let path = format!("/api/v1/conversations/{ada}/notes");
    let r = agent.post(&path, json!({"businessId": t.biz(), "text": "  Called her back, waiting on stock.  "}));
    assert_documented(&document_schemas(), "POST", &path, &r);
    let note = r.assert_ok(201)["entry"].clone();
    assert_eq!((note["kind"].as_str(), note["text"].as_str(), note["sentBy"]["name"].as_str()), (Some("note"), Some("Called her back, waiting on stock."), Some("agent@team.example")));
    let entries = t.thread(&mut agent, &ada);
    assert_eq!(entries[0]["id"], note["id"]);
    assert_eq!((entries[0]["direction"].as_str(), entries[0]["sentBy"]["kind"].as_str()), (Some("internal"), Some("person")));
    assert_eq!(t.outbound(), before, "a note is not a message");
    assert_eq!(sql(&t.dir.0, &format!("SELECT count(*) FROM jobs WHERE business_id = '{}' AND kind = 'messaging.deliver'", t.biz())).trim(), "0");
    assert_eq!(t.find(&mut agent, "Ada")["unreadCount"], 1, "a note is not unread");
    // The thread's newest entry may be a note: reading up to it reads what came before.
    let r = owner.post(&format!("/api/v1/conversations/{ada}/read"), json!({"businessId": t.biz(), "lastSeenEntryId": note["id"]}));
    assert_eq!(r.assert_ok(200)["conversation"]["unreadCount"], 0, "{}", r.text);
    let by_key = t.key().fresh().post(&path, &json!({"businessId": t.biz(), "text": "From the CRM"})).assert_ok(201)["entry"]["sentBy"].clone();
    assert_eq!(by_key, json!({"kind": "api", "id": null, "name": null}));
    for (body, status) in [(json!({"businessId": t.biz(), "text": "   "}), 400), (json!({"businessId": t.biz(), "text": "x".repeat(4001)}), 400), (json!({"businessId": t.biz()}), 400)] {
        agent.post(&path, body).assert_failure(status, "validation");
    }
    let r = agent.post("/api/v1/conversations/01890000-0000-7000-8000-000000000000/notes", json!({"businessId": t.biz(), "text": "x"}));
    assert_code(&r, 404, "not_found", "conversation_not_found");

    // Who sent each outbound message: the person, an API key.
    t.reply(&mut agent, "+15550008001", "On it, Ada.").assert_ok(202);
    let last = t.find(&mut owner, "Ada")["lastEntry"].clone();
    assert_eq!(last["sentBy"], json!({"kind": "person", "id": agent_id, "name": "agent@team.example"}));
    t.key().fresh().post("/api/v1/messages", &json!({"businessId": t.biz(), "phoneNumberId": PNID, "to": "+15550008002", "type": "text", "text": "Automated hello"})).assert_ok(202);
    assert_eq!(t.find(&mut owner, "Bo")["lastEntry"]["sentBy"]["kind"], "api");
    let bo_entries = t.thread(&mut owner, &bo);
    assert_eq!((bo_entries[0]["sentBy"]["kind"].as_str(), bo_entries[1]["sentBy"].is_null()), (Some("api"), true), "inbound: no sender");

    // Resolved, then reopened by the customer's next message.
    let c = t.update(&mut agent, &ada, json!({"state": "resolved"})).assert_ok(200)["conversation"].clone();
    assert_eq!(c["state"], "resolved");
    assert!(c["resolvedAt"].is_string());
    assert_eq!(t.names(&mut agent, "&state=resolved"), ["Ada"]);
    assert_eq!(t.names(&mut agent, "&state=open"), ["Bo"]);
    assert!(t.names(&mut agent, "&state=open&assignee=me").is_empty());
    t.chat("+15550008001", "Ada", "one more thing");
    let c = t.find(&mut agent, "Ada");
    assert_eq!((c["state"].as_str(), c["resolvedAt"].is_null()), (Some("open"), true));
    assert_eq!(t.update(&mut agent, &ada, json!({"state": "resolved"})).assert_ok(200)["conversation"]["state"], "resolved");
    assert_eq!(t.update(&mut agent, &ada, json!({"state": "open"})).assert_ok(200)["conversation"]["state"], "open");
    for body in [json!({}), json!({"state": "closed"}), json!({"assignedUserId": "x"}), json!({"state": "open", "extra": 1})] {
        t.update(&mut agent, &ada, body).assert_failure(400, "validation");
    }
}

#[test]
fn the_ai_agent_is_named_on_its_replies() {
    let t = start();
    let agent = t.key().fresh().post("/api/v1/agents", &json!({"businessId": t.biz(), "channel": "chatapp", "name": "Desk agent", "instructions": "Help."})).assert_ok(201)["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    t.key().patch("/api/v1/channels/assignments", &json!({"businessId": t.biz(), "channel": "chatapp", "phoneNumberId": PNID, "aiAgentId": agent, "autoReplyEnabled": true})).assert_ok(200);
    t.chat("+15550009001", "Ada", "hello");
    let ids = sql(&t.dir.0, &format!("SELECT id FROM jobs WHERE business_id = '{}' AND kind = 'messaging.autoreply'", t.biz()));
    ids.lines().for_each(|id| wait_done(&t.dir.0, id));
    let mut owner = Browser::login(&t.s, "owner@team.example");
    let c = poll("the agent's reply", || Some(t.find(&mut owner, "Ada")).filter(|c| c["lastEntry"]["direction"] == "outbound"));
    assert_eq!(c["lastEntry"]["sentBy"], json!({"kind": "agent", "id": agent, "name": "Desk agent"}));
}

#[test]
fn saved_replies_are_the_businesss_own() {
    let t = start();
    let mut agent = Browser::login(&t.s, "agent@team.example");
    let biz = t.biz().to_string();
    let r = agent.post("/api/v1/saved-replies", json!({"businessId": biz, "title": "  Opening hours ", "text": "We open at 9, Monday to Saturday."}));
    assert_documented(&document_schemas(), "POST", "/api/v1/saved-replies", &r);
    let saved = r.assert_ok(201)["savedReply"].clone();
    assert_eq!(saved["title"], "Opening hours");
    let id = saved["id"].as_str().unwrap().to_string();
    agent.post("/api/v1/saved-replies", json!({"businessId": biz, "title": "address", "text": "12 High St."})).assert_ok(201);
    let list_path = format!("/api/v1/saved-replies?businessId={biz}");
    let r = agent.get(&list_path);
    assert_documented(&document_schemas(), "GET", &list_path, &r);
    let titles: Vec<&str> = r.data()["savedReplies"].as_array().unwrap().iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["address", "Opening hours"], "by title, either case");

    let path = format!("/api/v1/saved-replies/{id}");
    let r = agent.send("PATCH", &path, Some(json!({"businessId": biz, "text": "We open at 8."})));
    assert_documented(&document_schemas(), "PATCH", &path, &r);
    assert_eq!((r.data()["savedReply"]["title"].as_str(), r.data()["savedReply"]["text"].as_str()), (Some("Opening hours"), Some("We open at 8.")));
    for body in [json!({"businessId": biz}), json!({"businessId": biz, "title": " "}), json!({"businessId": biz, "title": "x".repeat(101)}), json!({"businessId": biz, "text": ""})] {
        agent.send("PATCH", &path, Some(body)).assert_failure(400, "validation");
    }
    agent.post("/api/v1/saved-replies", json!({"businessId": biz, "title": "t"})).assert_failure(400, "validation");

    // Another business sees none of it; a viewer changes nothing.
    let other = tenant(&t.dir.0, "all");
    let r = t.s.as_key(&other.key).send("DELETE", &format!("/api/v1/saved-replies/{id}?businessId={}", other.business), None);
    assert_eq!(r.assert_failure(404, "not_found").code(), "saved_reply_not_found");
    assert!(t.s.as_key(&other.key).get(&format!("/api/v1/saved-replies?businessId={}", other.business)).assert_ok(200)["savedReplies"].as_array().unwrap().is_empty());
    let mut viewer = Browser::login(&t.s, "viewer@team.example");
    assert_code(&viewer.send("DELETE", &format!("{path}?businessId={biz}"), None), 403, "authorization", "missing_scope");

    let r = agent.send("DELETE", &format!("{path}?businessId={biz}"), None);
    assert_documented(&document_schemas(), "DELETE", &path, &r);
    assert_eq!(r.assert_ok(200)["deleted"], true);
    assert_code(&agent.send("DELETE", &format!("{path}?businessId={biz}"), None), 404, "not_found", "saved_reply_not_found");
    assert_eq!(agent.get(&list_path).data()["savedReplies"].as_array().unwrap().len(), 1);
}

/// A user made, or disabled, with `switchboard admin user` is in the
/// business's team (or out of it) at once: `GET /team-members` and
/// assignment know them before anyone logs in or opens the console.
#[test]
fn admin_user_commands_change_the_team_at_once() {
    let t = start();
    t.chat("+15550009001", "Ada", "hello");
    let path = format!("/api/v1/team-members?businessId={}", t.biz());
    let team = || -> Vec<Value> { t.key().get(&path).assert_ok(200)["members"].as_array().unwrap().clone() };
    let emails = |m: &[Value]| m.iter().map(|m| m["email"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(emails(&team()), ["agent@team.example", "owner@team.example", "viewer@team.example"], "made by the command, nobody logged in");
    let ada = t.key().get(&format!("/api/v1/conversations?businessId={}", t.biz())).assert_ok(200)["conversations"][0]["id"].as_str().unwrap().to_string();
    let assign = |who: &str| t.key().patch(&format!("/api/v1/conversations/{ada}"), &json!({"businessId": t.biz(), "assignedUserId": who}));

    // One made with a setup link (no password yet) can be assigned at once.
    let made = t.s.admin(&["user", "create", "--business", t.biz(), "--email", "new.agent@team.example", "--role", "agent"]);
    let new_id = made["userId"].as_str().unwrap();
    let members = team();
    assert!(members.iter().any(|m| m["userId"] == new_id && m["role"] == "agent"), "{members:?}");
    assert_eq!(assign(new_id).assert_ok(200)["conversation"]["assignee"]["email"], "new.agent@team.example");

    // Disabled: out of the team at once, and no longer an assignee.
    t.s.admin(&["user", "disable", "--user-id", new_id]);
    assert!(!team().iter().any(|m| m["userId"] == new_id));
    assert_code(&assign(new_id), 404, "not_found", "assignee_not_found");
}
