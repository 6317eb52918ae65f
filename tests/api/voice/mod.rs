//! The voice area: the resolved call context (40), and calls (37-39,
//! 41-43) against the sandbox carrier, whose destination rules (docs/voice.md,
//! "The sandbox carrier") drive each outcome.

use crate::harness::*;
use serde_json::{json, Value};

mod lines;
mod recordings;
mod turns;
mod variables;

struct Ctx {
    s: Server,
    t: Tenant,
    _dir: DataDir,
}

impl Ctx {
    fn post(&self, path: &str, mut body: Value) -> Value {
        body["businessId"] = json!(self.t.business);
        let r = self.s.as_key(&self.t.key).fresh().post(path, &body);
        assert!(r.status < 300, "{path}: {}", r.text);
        r.data().clone()
    }
    fn resolve(&self, key: &str, query: &str) -> Resp {
        self.s.as_key(key).get(&format!("/api/v1/voice/calls/resolve?businessId={}&{query}", self.t.business))
    }
}

#[test]
fn the_call_context_resolves_a_contacts_declared_variables_and_nothing_else() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let c = Ctx { s, t, _dir: dir };
    let vip = c.post("/api/v1/contacts/categories", json!({"name": "VIP"}))["category"]["id"].as_str().unwrap().to_string();
    let other = c.post("/api/v1/contacts/categories", json!({"name": "Other"}))["category"]["id"].as_str().unwrap().to_string();
    let ada =
        c.post("/api/v1/contacts", json!({"name": "Ada", "mobile": "+447700900123", "categoryIds": [vip], "fields": {"city": "London", "secret": "x"}}))["contact"]["id"].as_str().unwrap().to_string();
    let bob = c.post("/api/v1/contacts", json!({"name": "Bob", "mobile": "+447700900124", "categoryIds": [other], "fields": {"tier": "gold"}}))["contact"]["id"].as_str().unwrap().to_string();
    let cy = c.post("/api/v1/contacts", json!({"name": "Cy", "mobile": "+447700900125", "categoryIds": [vip], "communicationBlocked": true}))["contact"]["id"].as_str().unwrap().to_string();
    let sources = c.s.as_key(&c.t.key).get(&format!("/api/v1/data-sources?businessId={}&limit=200", c.t.business));
    let contacts = sources.data()["dataSources"].as_array().unwrap().iter().find(|d| d["builtIn"] == true).unwrap()["id"].as_str().unwrap().to_string();
    let var = |key: &str, alias: &str| json!({"sourceId": contacts, "fieldKey": key, "alias": alias});
    let agent = c.post(
        "/api/v1/agents",
        json!({"channel": "voice", "name": "Caller", "instructions": "Confirm the appointment.",
        "contactCategoryIds": [vip], "dataSourceVariables": [var("name", "customerName"), var("city", "city"), var("tier", "tier")],
        "voiceSettings": {"firstGreeting": "Hello {{customerName}}"}}),
    )["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let plain = c.post("/api/v1/agents", json!({"channel": "voice", "name": "Plain", "instructions": "Say hello."}))["agent"]["id"].as_str().unwrap().to_string();
    let chat = c.post("/api/v1/agents", json!({"channel": "chatapp", "name": "Chat", "instructions": "Answer."}))["agent"]["id"].as_str().unwrap().to_string();

    // A contact in scope: its mobile, and only the declared aliases it has.
    let r = c.resolve(&c.t.key, &format!("agentId={agent}&contactId={ada}"));
    assert_eq!(r.assert_ok(200), &json!({"destination": "+447700900123", "values": {"city": "London", "customerName": "Ada"}, "contactRequired": true}));
    // A direct number: no values; whether the agent needs a contact.
    assert_eq!(c.resolve(&c.t.key, &format!("agentId={agent}&toNumber=%2B14155550100")).assert_ok(200), &json!({"destination": "+14155550100", "values": {}, "contactRequired": true}));
    assert_eq!(c.resolve(&c.t.key, &format!("agentId={plain}&toNumber=%2B14155550100")).assert_ok(200)["contactRequired"], false);
    // An agent without categories reaches any contact; without variables it shows none.
    assert_eq!(c.resolve(&c.t.key, &format!("agentId={plain}&contactId={bob}")).assert_ok(200)["values"], json!({}));

    // Refusals.
    let code = |r: Resp, status: u16| {
        assert_eq!(r.status, status, "{}", r.text);
        r.code().to_string()
    };
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={agent}&contactId={bob}")), 409), "contact_out_of_scope");
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={agent}&contactId={cy}")), 409), "contact_blocked");
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={chat}&contactId={ada}")), 409), "agent_not_voice");
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={agent}")), 400), "call_target_required");
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={agent}&contactId={ada}&toNumber=%2B14155550100")), 400), "call_target_required");
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={}&contactId={ada}", uuid::Uuid::new_v4())), 404), "agent_not_found");
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={agent}&contactId={}", uuid::Uuid::new_v4())), 404), "contact_not_found");
    let archived = c.s.as_key(&c.t.key).fresh().delete("/api/v1/agents", &json!({"businessId": c.t.business, "agentId": plain}));
    assert_eq!(archived.status, 200, "{}", archived.text);
    assert_eq!(code(c.resolve(&c.t.key, &format!("agentId={plain}&toNumber=%2B14155550100")), 409), "agent_archived");

    // It shows contact data, so it needs both scopes; another business sees nothing.
    let voice_only = admin(&c._dir.0, &["key", "create", "--business", &c.t.business, "--scopes", "voice:read"])["apiKey"].as_str().unwrap().to_string();
    assert_eq!(c.resolve(&voice_only, &format!("agentId={agent}&contactId={ada}")).status, 403);
    let stranger = tenant(&c._dir.0, "all");
    let r = c.s.as_key(&stranger.key).get(&format!("/api/v1/voice/calls/resolve?businessId={}&agentId={agent}&contactId={ada}", stranger.business));
    assert_eq!(code(r, 404), "agent_not_found");
}

/// A server with a fast sandbox carrier, a tenant with credits, a voice agent.
struct Calls {
    s: Server,
    t: Tenant,
    dir: DataDir,
    agent: String,
    /// A contact category for contacts that need no particular one.
    everyone: String,
}

const PRICE: i64 = 25_000;
const TERMINAL: [&str; 5] = ["completed", "no_answer", "busy", "failed", "cancelled"];

impl Calls {
    fn new(lines: u32, microcredits: u64) -> Calls {
        Calls::with_step(lines, microcredits, 20)
    }
    /// With the sandbox carrier's `step-delay-ms` at `step_ms`.
    fn with_step(lines: u32, microcredits: u64, step_ms: u32) -> Calls {
        Calls::with_flags(lines, microcredits, step_ms, &[])
    }
    /// [`Calls::with_step`], with more `serve` flags.
    fn with_flags(lines: u32, microcredits: u64, step_ms: u32, flags: &[&str]) -> Calls {
        let dir = DataDir::new();
        let step = format!("step-delay-ms={step_ms}");
        let s = Server::start_with(&dir.0, &[&["--carrier-setting", step.as_str()], flags].concat());
        let t = tenant(&dir.0, "all");
        admin(&dir.0, &["voice", "configure", "--business", &t.business, "--lines", &lines.to_string()]);
        if microcredits > 0 {
            admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", &microcredits.to_string()]);
        }
        let mut c = Calls { s, t, dir, agent: String::new(), everyone: String::new() };
        c.agent = c.agent_with(json!({"firstGreeting": "Hello, this is Acme calling."}));
        c.everyone = c.post("/api/v1/contacts/categories", json!({"name": "Everyone"}))["category"]["id"].as_str().unwrap().to_string();
        c
    }
    fn agent_with(&self, voice_settings: Value) -> String {
        self.post("/api/v1/agents", json!({"channel": "voice", "name": "Caller", "instructions": "Confirm the appointment.", "voiceSettings": voice_settings}))["agent"]["id"]
            .as_str()
            .unwrap()
            .to_string()
    }
    fn post(&self, path: &str, mut body: Value) -> Value {
        body["businessId"] = json!(self.t.business);
        let r = self.s.as_key(&self.t.key).fresh().post(path, &body);
        assert!(r.status < 300, "{path}: {}", r.text);
        r.data().clone()
    }
    fn start(&self, body: Value) -> Resp {
        let mut body = body;
        body["businessId"] = json!(self.t.business);
        self.s.as_key(&self.t.key).fresh().post("/api/v1/voice/calls", &body)
    }
    fn call(&self, to: &str) -> String {
        let r = self.start(json!({"agentId": self.agent, "toNumber": to}));
        let d = r.assert_ok(202);
        assert_eq!((d["destination"].as_str(), d["status"].as_str()), (Some(to), Some("queued")));
        d["callId"].as_str().unwrap().to_string()
    }
    fn report(&self, id: &str) -> Value {
        let r = self.s.as_key(&self.t.key).get(&format!("/api/v1/voice/calls/{id}?businessId={}", self.t.business));
        r.assert_ok(200).clone()
    }
    fn until(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        poll(what, || Some(self.report(id)).filter(|r| done(r)))
    }
    fn ended(&self, id: &str) -> Value {
        self.until(id, "the call's end", |r| TERMINAL.contains(&r["call"]["status"].as_str().unwrap()))
    }
    fn cancel(&self, id: &str, key: &str) -> Resp {
        self.s.as_key(&self.t.key).idem(key).send("DELETE", &format!("/api/v1/voice/calls/{id}?businessId={}", self.t.business), None)
    }
    fn balance(&self) -> (i64, i64) {
        let b = admin(&self.dir.0, &["credits", "show", "--business", &self.t.business]);
        (b["balanceMicrocredits"].as_i64().unwrap(), b["reservedMicrocredits"].as_i64().unwrap())
    }
    fn db(&self, query: &str) -> String {
        sql(&self.dir.0, query).trim().to_string()
    }
}

/// `v` matches the document's schema `name`.
fn check(name: &str, v: &Value) {
    if let Err(e) = document_schemas().validate(&json!({"$ref": format!("#/components/schemas/{name}")}), v) {
        panic!("not a {name}: {:?}\n{v}", e.iter().map(|v| &v.message).collect::<Vec<_>>());
    }
}

/// Started 20-second blocks of a call of `seconds`.
fn blocks(seconds: i64) -> i64 {
    (seconds + 19) / 20
}

fn outcome(r: &Value) -> (String, String, String, i64) {
    let c = &r["call"];
    (c["status"].as_str().unwrap().into(), c["endedBy"].as_str().unwrap_or("-").into(), c["endReason"].as_str().unwrap_or("-").into(), c["chargedMicrocredits"].as_i64().unwrap())
}

#[test]
fn a_call_talks_ends_and_is_charged_its_started_blocks() {
    let c = Calls::new(1, 5_000_000);
    let id = c.call("+15550001234");
    let r = c.ended(&id);
    let call = &r["call"];
    assert_eq!(outcome(&r), ("completed".into(), "agent".into(), "agent_ended_call".into(), blocks(call["durationSeconds"].as_i64().unwrap()) * PRICE));
    assert!(call["durationSeconds"].as_i64().unwrap() > 0 && call["startedAt"].is_string() && call["endedAt"].is_string());
    assert_eq!((call["contactId"].clone(), call["agentName"].clone(), call["transcriptAvailable"].clone()), (json!(null), json!("Caller"), json!(true)));
    // The report's shape is the document's.
    check("CallDetail", &r);
    // The greeting opens, the customer's three lines are answered, the
    // assistant says goodbye on the customer's goodbye; offsets only grow.
    let turns = r["transcript"].as_array().unwrap();
    let said: Vec<(&str, &str)> = turns.iter().map(|t| (t["speaker"].as_str().unwrap(), t["text"].as_str().unwrap())).collect();
    assert_eq!(said[0], ("assistant", "Hello, this is Acme calling."));
    assert_eq!(said[1], ("customer", "Hi, yes, this is me."));
    assert_eq!(said.last().unwrap().1, "Thank you for your time. Goodbye.");
    assert_eq!(said.len(), 7, "{said:?}");
    let offsets: Vec<i64> = turns.iter().map(|t| t["audioOffsetMs"].as_i64().unwrap()).collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    assert!(turns.iter().all(|t| t["audioEndOffsetMs"].as_i64() > t["audioOffsetMs"].as_i64()));
    // The money: reserved at start, charged and released at the end.
    let charged = call["chargedMicrocredits"].as_i64().unwrap();
    assert_eq!(c.balance(), (5_000_000 - charged, 0));
    assert_eq!(
        c.db(&format!("SELECT kind || ':' || amount FROM credit_ledger WHERE reference = '{id}' ORDER BY id")).replace('\n', " "),
        format!("reserve:750000 charge:{charged} release:{}", 750_000 - charged)
    );
    assert_eq!(c.db("SELECT COUNT(*) FROM calls WHERE holds_line = 1"), "0", "the line is free again");

    // The transcript download: the report's turns as text, an attachment.
    let d = c.s.as_key(&c.t.key).get(&format!("/api/v1/voice/calls/{id}/transcript?businessId={}", c.t.business));
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(d.header("content-type"), "text/plain; charset=utf-8");
    assert_eq!(d.header("content-disposition"), format!("attachment; filename=\"call-{id}-transcript.txt\""));
    let lines: Vec<&str> = d.text.lines().collect();
    assert_eq!(lines.len(), turns.len());
    assert_eq!(lines[0], "[00:00] Assistant: Hello, this is Acme calling.");
    assert!(lines[1].ends_with("] Customer: Hi, yes, this is me."), "{}", lines[1]);

    // The list: newest first, filters, and no internals.
    let other = c.call("+15550002222");
    c.ended(&other);
    let list = |q: &str| c.s.as_key(&c.t.key).get(&format!("/api/v1/voice/calls?businessId={}{q}", c.t.business)).assert_ok(200).clone();
    let all = list("");
    let ids: Vec<&str> = all["calls"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [other.as_str(), id.as_str()]);
    assert_eq!(list("&status=busy")["calls"].as_array().unwrap().len(), 1);
    assert_eq!(list("&endedBy=agent")["calls"][0]["id"], json!(id));
    assert_eq!(list("&endReason=busy")["calls"][0]["id"], json!(other));
    assert_eq!(list(&format!("&agentId={}", uuid::Uuid::new_v4()))["calls"], json!([]));
    let page = list("&limit=1");
    assert_eq!(page["calls"][0]["id"], json!(other));
    let next = list(&format!("&limit=1&cursor={}", page["nextCursor"].as_str().unwrap()));
    assert_eq!((next["calls"][0]["id"].clone(), next["nextCursor"].clone()), (json!(id), json!(null)));
    for secret in ["memo", "sbx", "reserved", "holds_line", "requested"] {
        assert!(!all.to_string().contains(secret), "{secret} leaked");
    }
    // No transcript yet: 404 until turns exist.
    let r = c.s.as_key(&c.t.key).get(&format!("/api/v1/voice/calls/{other}/transcript?businessId={}", c.t.business));
    assert_eq!((r.status, r.code()), (404, "transcript_not_available"));
    // Another business sees none of it.
    let stranger = tenant(&c.dir.0, "all");
    let r = c.s.as_key(&stranger.key).get(&format!("/api/v1/voice/calls/{id}?businessId={}", stranger.business));
    assert_eq!((r.status, r.code()), (404, "call_not_found"));
}

#[test]
fn every_sandbox_number_rule_ends_as_documented() {
    let c = Calls::new(4, 20_000_000);
    let rules = [
        ("+15550000000", ("failed", "provider", "carrier_rejected", 0)),
        ("+15550001111", ("no_answer", "provider", "no_answer", 0)),
        ("+15550002222", ("busy", "provider", "busy", 0)),
        ("+15550003333", ("failed", "provider", "carrier_unavailable", 0)),
        ("+15550004444", ("completed", "agent", "agent_ended_call", -1)),
        ("+15550005555", ("failed", "provider", "carrier_failure", 15_000)),
        ("+15550007777", ("completed", "customer", "customer_hung_up", PRICE)),
        ("+15550008888", ("completed", "agent", "agent_ended_call", -1)),
    ];
    let ids: Vec<String> = rules.iter().map(|(to, _)| c.call(to)).collect();
    for (id, (to, (status, by, reason, charge))) in ids.iter().zip(rules) {
        let r = c.ended(id);
        let (s, b, why, charged) = outcome(&r);
        assert_eq!((s.as_str(), b.as_str(), why.as_str()), (status, by, reason), "{to}");
        let blocks = blocks(r["call"]["durationSeconds"].as_i64().unwrap());
        assert_eq!(charged, if charge < 0 { blocks * PRICE } else { charge }, "{to}");
        assert_eq!(r["call"]["transcriptAvailable"], json!(status == "completed"), "{to}");
    }
    let placements = |id: &str| c.db(&format!("SELECT placements FROM calls WHERE id = '{id}'"));
    // The carrier that is down was asked four times (backoff 1, 2, 4 s)…
    assert_eq!(placements(&ids[3]), "4");
    // …the placement that timed out was placed once and reconciled by our id.
    assert_eq!(placements(&ids[4]), "1");
    assert_eq!(c.report(&ids[4])["transcript"][0]["text"], json!("Hello, this is Acme calling."));
    // 8888 speaks over the greeting: its reply is held until the greeting
    // has played, so in the call's audio it follows the greeting's end.
    let t = c.report(&ids[7])["transcript"].clone();
    assert_eq!((t[0]["speaker"].as_str(), t[1]["text"].as_str()), (Some("assistant"), Some("Hello? Who is this?")));
    assert!(t[1]["audioOffsetMs"].as_i64() < t[0]["audioEndOffsetMs"].as_i64(), "spoken over the greeting");
    let reply = t.as_array().unwrap().iter().find(|x| x["text"] == json!("You said: \"Hello? Who is this?\". How can I help further?")).unwrap_or_else(|| panic!("{t}"));
    assert!(reply["audioOffsetMs"].as_i64() >= t[0]["audioEndOffsetMs"].as_i64(), "the reply waited for the greeting: {t}");
    assert_eq!(c.balance().1, 0, "every reservation was settled");
    assert_eq!(c.db("SELECT COUNT(*) FROM calls WHERE holds_line = 1"), "0");
}

#[test]
fn starts_are_refused_clearly_and_write_nothing() {
    let c = Calls::new(1, 1_000_000);
    let vip = c.post("/api/v1/contacts/categories", json!({"name": "VIP"}))["category"]["id"].as_str().unwrap().to_string();
    let ada = c.post("/api/v1/contacts", json!({"name": "Ada", "mobile": "+447700900123", "categoryIds": [vip], "fields": {}}))["contact"]["id"].as_str().unwrap().to_string();
    let bob = c.post("/api/v1/contacts", json!({"name": "Bob", "mobile": "+447700900124", "categoryIds": [c.everyone], "fields": {"city": "Oslo"}}))["contact"]["id"].as_str().unwrap().to_string();
    let cy = c.post("/api/v1/contacts", json!({"name": "Cy", "mobile": "+447700900125", "categoryIds": [vip], "communicationBlocked": true}))["contact"]["id"].as_str().unwrap().to_string();
    let sources = c.s.as_key(&c.t.key).get(&format!("/api/v1/data-sources?businessId={}&limit=200", c.t.business));
    let contacts = sources.data()["dataSources"].as_array().unwrap().iter().find(|d| d["builtIn"] == true).unwrap()["id"].as_str().unwrap().to_string();
    let scoped = c.post(
        "/api/v1/agents",
        json!({"channel": "voice", "name": "Scoped", "instructions": "Hi.", "contactCategoryIds": [vip],
        "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "name", "alias": "customerName"}, {"sourceId": contacts, "fieldKey": "city", "alias": "city"}],
        "voiceSettings": {"firstGreeting": "Hello {{customerName}}"}}),
    )["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let city = c.post(
        "/api/v1/agents",
        json!({"channel": "voice", "name": "City", "instructions": "Hi.", "contactCategoryIds": [vip],
        "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "city", "alias": "city"}],
        "voiceSettings": {"firstGreeting": "Hello from {{city}}"}}),
    )["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let chat = c.post("/api/v1/agents", json!({"channel": "chatapp", "name": "Chat", "instructions": "Answer."}))["agent"]["id"].as_str().unwrap().to_string();
    let archived = c.agent_with(json!({}));
    assert_eq!(c.s.as_key(&c.t.key).fresh().delete("/api/v1/agents", &json!({"businessId": c.t.business, "agentId": archived})).status, 200);
    let stranger = tenant(&c.dir.0, "all");
    let foreign = {
        let cat = c.s.as_key(&stranger.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": stranger.business, "name": "Theirs"}));
        let cat = cat.data()["category"]["id"].as_str().unwrap().to_string();
        let r = c.s.as_key(&stranger.key).fresh().post("/api/v1/contacts", &json!({"businessId": stranger.business, "name": "Zed", "mobile": "+447700900999", "categoryIds": [cat]}));
        r.data()["contact"]["id"].as_str().unwrap().to_string()
    };
    let refused = |body: Value, status: u16, code: &str| {
        let r = c.start(body.clone());
        assert_eq!((r.status, r.code()), (status, code), "{body}: {}", r.text);
    };
    let a = &c.agent;
    refused(json!({"agentId": a}), 400, "invalid_request");
    refused(json!({"agentId": a, "contactId": ada, "toNumber": "+15550001234"}), 400, "invalid_request");
    refused(json!({"agentId": a, "toNumber": "15550001234"}), 400, "invalid_request");
    refused(json!({"agentId": archived, "toNumber": "+15550001234"}), 409, "agent_archived");
    refused(json!({"agentId": chat, "toNumber": "+15550001234"}), 409, "agent_not_voice");
    refused(json!({"agentId": uuid::Uuid::new_v4().to_string(), "toNumber": "+15550001234"}), 404, "agent_not_found");
    refused(json!({"agentId": a, "contactId": foreign}), 404, "contact_not_found");
    refused(json!({"agentId": scoped, "contactId": cy}), 409, "contact_blocked");
    refused(json!({"agentId": scoped, "contactId": bob}), 409, "contact_out_of_scope");
    refused(json!({"agentId": scoped, "toNumber": "+15550001234"}), 409, "contact_required");
    refused(json!({"agentId": city, "contactId": ada}), 409, "variable_missing");
    refused(json!({"agentId": scoped, "contactId": ada, "testVariables": {"customerName": "x".repeat(501)}}), 400, "invalid_request");
    refused(json!({"agentId": scoped, "contactId": ada, "testVariables": {"undeclared": "x"}}), 409, "test_variable_not_declared");
    // A maximum the balance cannot cover: 402, nothing placed or held.
    let long = c.agent_with(json!({"maxCallDurationSeconds": 3600}));
    let r = c.start(json!({"agentId": long, "toNumber": "+15550001234"}));
    r.assert_failure(402, "billing");
    assert_eq!(r.code(), "insufficient_credit");
    assert_eq!(c.db("SELECT COUNT(*) FROM calls"), "0");
    assert_eq!(c.db("SELECT COUNT(*) FROM credit_ledger WHERE kind <> 'grant'"), "0");
    assert_eq!(c.balance(), (1_000_000, 0));
    // Scopes: voice:write starts, voice:read does not.
    let reader = admin(&c.dir.0, &["key", "create", "--business", &c.t.business, "--scopes", "voice:read"])["apiKey"].as_str().unwrap().to_string();
    let r = c.s.as_key(&reader).fresh().post("/api/v1/voice/calls", &json!({"businessId": c.t.business, "agentId": a, "toNumber": "+15550001234"}));
    assert_eq!(r.status, 403);

    // An accepted contact call: snapshotted once, retried without a second call.
    let body = json!({"businessId": c.t.business, "agentId": scoped, "contactId": ada, "testVariables": {"city": "Paris"}});
    let first = c.s.as_key(&c.t.key).idem("start-1").post("/api/v1/voice/calls", &body);
    let again = c.s.as_key(&c.t.key).idem("start-1").post("/api/v1/voice/calls", &body);
    assert_eq!(first.assert_ok(202)["callId"], again.assert_ok(202)["callId"]);
    assert_eq!(first.data()["destination"], json!("+447700900123"));
    let id = first.data()["callId"].as_str().unwrap().to_string();
    assert_eq!(c.db("SELECT COUNT(*) FROM calls"), "1");
    // A later edit of the contact does not change the placed call.
    c.s.as_key(&c.t.key).fresh().patch(&format!("/api/v1/contacts/{ada}"), &json!({"businessId": c.t.business, "name": "Changed"})).assert_ok(200);
    let r = c.ended(&id);
    assert_eq!(r["transcript"][0]["text"], json!("Hello Ada"));
    // callData shows what the caller sent, never the contact's values.
    assert_eq!(r["call"]["callData"], json!({"city": "Paris"}));
    assert_eq!((r["call"]["contactId"].clone(), r["call"]["contactName"].clone()), (json!(ada), json!("Ada")));
    // The call is on the contact's timeline and in its voice rollup.
    let tl = c.s.as_key(&c.t.key).get(&format!("/api/v1/contacts/{ada}/timeline?businessId={}", c.t.business));
    let entry = tl.assert_ok(200)["entries"][0].clone();
    assert_eq!((entry["channel"].as_str(), entry["kind"].as_str(), entry["summary"]["callId"].as_str()), (Some("voice"), Some("call"), Some(id.as_str())));
    assert_eq!((entry["summary"]["status"].clone(), entry["summary"]["transcriptAvailable"].clone()), (json!("completed"), json!(true)));
    let contact = c.s.as_key(&c.t.key).get(&format!("/api/v1/contacts/{ada}?businessId={}", c.t.business));
    assert_eq!(contact.data()["contact"]["activity"]["voice"]["count"], json!(1), "{}", contact.text);
    // A direct number call creates no contact.
    let before = c.db("SELECT COUNT(*) FROM contacts");
    let direct = c.call("+15550001234");
    c.ended(&direct);
    assert_eq!(c.db("SELECT COUNT(*) FROM contacts"), before);
}

#[test]
fn cancel_hangs_up_a_carrier_call_and_cancels_a_queued_one() {
    // Slower steps: the live call stays up 5 s, room for the cancels below
    // on a loaded machine.
    let c = Calls::with_step(1, 5_000_000, 50);
    // 6666 answers and stays connected; the single line is its.
    let live = c.call("+15550006666");
    c.until(&live, "the answer", |r| r["call"]["status"] == "answered");
    // A second call waits for the line: no carrier call, so cancelled at once.
    let waiting = c.call("+15550001234");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(c.report(&waiting)["call"]["status"], json!("queued"), "one line, one call");
    let r = c.cancel(&waiting, "cancel-waiting");
    assert_eq!(r.assert_ok(200), &json!({"callId": waiting, "status": "cancelled"}));
    assert_eq!(outcome(&c.report(&waiting)), ("cancelled".into(), "operator".into(), "operator_cancelled".into(), 0));
    // The live call: `cancelling` first, then the carrier's end; operator stays operator.
    let r = c.cancel(&live, "cancel-live");
    assert_eq!(r.assert_ok(200), &json!({"callId": live, "status": "cancelling"}));
    let again = c.cancel(&live, "cancel-live");
    assert_eq!(again.data(), r.data(), "a replay answers the same");
    let r = c.ended(&live);
    let (status, by, reason, charged) = outcome(&r);
    assert_eq!((status.as_str(), by.as_str(), reason.as_str()), ("cancelled", "operator", "operator_cancelled"));
    assert_eq!(charged, blocks(r["call"]["durationSeconds"].as_i64().unwrap()) * PRICE);
    // Cancelling an ended call is a clear 409 and changes nothing.
    let r = c.cancel(&live, "cancel-again");
    assert_eq!((r.status, r.code()), (409, "call_already_ended"));
    assert_eq!(outcome(&c.report(&live)).3, charged);
    // The key is required.
    let r = c.s.as_key(&c.t.key).send("DELETE", &format!("/api/v1/voice/calls/{live}?businessId={}", c.t.business), None);
    assert_eq!(r.status, 400);
    assert_eq!(c.balance(), (5_000_000 - charged, 0));
}

#[test]
fn a_47_second_call_is_charged_three_blocks() {
    let c = Calls::new(1, 5_000_000);
    // 6666 stays connected until its maximum duration, reported as connected time.
    let agent = c.agent_with(json!({"maxCallDurationSeconds": 47}));
    let r = c.start(json!({"agentId": agent, "toNumber": "+15550006666"}));
    let id = r.assert_ok(202)["callId"].as_str().unwrap().to_string();
    assert_eq!(c.db(&format!("SELECT reserved FROM calls WHERE id = '{id}'")), (3 * PRICE).to_string(), "the maximum is reserved");
    let r = c.ended(&id);
    assert_eq!(outcome(&r), ("completed".into(), "system".into(), "max_duration".into(), 3 * PRICE));
    assert_eq!(r["call"]["durationSeconds"], json!(47));
    assert_eq!(c.balance(), (5_000_000 - 3 * PRICE, 0));
}

#[test]
fn lines_are_never_exceeded_under_twenty_concurrent_starts() {
    let c = Calls::new(2, 50_000_000);
    let ids: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let c = &c;
                s.spawn(move || c.call(&format!("+155500{i:02}123")))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut most = 0;
    let started = std::time::Instant::now();
    loop {
        let held: usize = c.db("SELECT COUNT(*) FROM calls WHERE holds_line = 1").parse().unwrap();
        most = most.max(held);
        let open: usize = c.db("SELECT COUNT(*) FROM calls WHERE status NOT IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled')").parse().unwrap();
        if open == 0 {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(90), "calls never finished");
    }
    assert!(most <= 2, "{most} lines held at once");
    // The carrier's own view: never more than two calls between ringing and their end.
    let mut edges: Vec<(String, i32)> = Vec::new();
    for id in &ids {
        let call = c.ended(id)["call"].clone();
        assert_eq!(call["status"], json!("completed"));
        let ringing = c.db(&format!("SELECT ringing_at FROM calls WHERE id = '{id}'"));
        edges.push((ringing, 1));
        edges.push((call["endedAt"].as_str().unwrap().to_string(), -1));
    }
    edges.sort();
    let (mut now, mut peak) = (0, 0);
    for (_, d) in edges {
        now += d;
        peak = peak.max(now);
    }
    assert!(peak <= 2, "{peak} carrier calls at once");
}

#[test]
fn a_batch_starts_each_contact_on_its_own() {
    let c = Calls::new(2, 1_500_000);
    let ada = c.post("/api/v1/contacts", json!({"name": "Ada", "mobile": "+15550001234", "categoryIds": [c.everyone]}))["contact"]["id"].as_str().unwrap().to_string();
    let bob = c.post("/api/v1/contacts", json!({"name": "Bob", "mobile": "+15550002222", "categoryIds": [c.everyone]}))["contact"]["id"].as_str().unwrap().to_string();
    let cy = c.post("/api/v1/contacts", json!({"name": "Cy", "mobile": "+15550001235", "categoryIds": [c.everyone], "communicationBlocked": true}))["contact"]["id"].as_str().unwrap().to_string();
    let dee = c.post("/api/v1/contacts", json!({"name": "Dee", "mobile": "+15550001236", "categoryIds": [c.everyone]}))["contact"]["id"].as_str().unwrap().to_string();
    let missing = uuid::Uuid::new_v4().to_string();
    // 1,500,000 covers two reservations of 750,000: the third contact that
    // could be called is refused for credit, the others go ahead.
    let body = json!({"businessId": c.t.business, "agentId": c.agent, "contactIds": [ada, cy, bob, missing, dee]});
    let r = c.s.as_key(&c.t.key).idem("batch-1").post("/api/v1/voice/calls/batch", &body);
    let d = r.assert_ok(202).clone();
    check("CallBatchResult", &d);
    let accepted: Vec<&str> = d["accepted"].as_array().unwrap().iter().map(|a| a["contactId"].as_str().unwrap()).collect();
    assert_eq!(accepted, [ada.as_str(), bob.as_str()]);
    let failures: Vec<(&str, &str)> = d["failures"].as_array().unwrap().iter().map(|f| (f["contactId"].as_str().unwrap(), f["code"].as_str().unwrap())).collect();
    assert_eq!(failures, [(cy.as_str(), "contact_blocked"), (missing.as_str(), "contact_not_found"), (dee.as_str(), "insufficient_credit")]);
    // An exact retry is the original answer; nothing more is started.
    let again = c.s.as_key(&c.t.key).idem("batch-1").post("/api/v1/voice/calls/batch", &body);
    assert_eq!(again.data(), &d);
    assert_eq!(c.db("SELECT COUNT(*) FROM calls"), "2");
    for a in d["accepted"].as_array().unwrap() {
        let r = c.ended(a["callId"].as_str().unwrap());
        assert_eq!(r["call"]["sourceName"], json!("Batch start"));
    }
    // Sizes and duplicates are refused whole.
    let many: Vec<String> = (0..21).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let r = c.s.as_key(&c.t.key).fresh().post("/api/v1/voice/calls/batch", &json!({"businessId": c.t.business, "agentId": c.agent, "contactIds": many}));
    assert_eq!(r.status, 400, "{}", r.text);
    let r = c.s.as_key(&c.t.key).fresh().post("/api/v1/voice/calls/batch", &json!({"businessId": c.t.business, "agentId": c.agent, "contactIds": [ada, ada]}));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(c.db("SELECT COUNT(*) FROM calls"), "2");
}

#[test]
fn kill_9_mid_call_ends_every_call_once_with_one_charge_and_its_line_back() {
    let dir = DataDir::new();
    // Slow steps, so the kill finds calls connected, cancelling, placing and queued.
    let args = ["--carrier-setting", "step-delay-ms=200"];
    let mut s = Server::start_with(&dir.0, &args);
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["voice", "configure", "--business", &t.business, "--lines", "3"]);
    admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", "10000000"]);
    let mut c = Calls { s, t, dir, agent: String::new(), everyone: String::new() };
    c.agent = c.agent_with(json!({"firstGreeting": "Hello, this is Acme calling."}));
    let connected = c.call("+15550006666");
    let cancelling = c.call("+15550016666");
    c.until(&connected, "an answer", |r| r["call"]["status"] == "answered");
    c.until(&cancelling, "an answer", |r| r["call"]["status"] == "answered");
    let timed_out = c.call("+15550004444");
    let queued = c.call("+15550001234");
    assert_eq!(c.cancel(&cancelling, "cancel-before-kill").assert_ok(200)["status"], json!("cancelling"));
    c.s.child.kill().unwrap();
    c.s.child.wait().unwrap();
    assert_eq!(c.db(&format!("SELECT status FROM calls WHERE id = '{queued}'")), "queued", "killed before it was placed");

    // A new node takes over once the dead one's lease runs out.
    s = Server::start_with(&c.dir.0, &args);
    c.s = s;
    let expect = [(&connected, "completed", "system"), (&cancelling, "cancelled", "operator"), (&timed_out, "completed", "agent"), (&queued, "completed", "agent")];
    for (id, status, by) in expect {
        let r = c.ended(id);
        let (s, b, _, charged) = outcome(&r);
        assert_eq!((s.as_str(), b.as_str()), (status, by), "{id}");
        // One reservation, one charge, one release; the charge is the call's.
        let ledger = c.db(&format!("SELECT kind FROM credit_ledger WHERE reference = '{id}' ORDER BY id")).replace('\n', " ");
        assert_eq!(ledger, "reserve charge release", "{id}");
        assert_eq!(c.db(&format!("SELECT amount FROM credit_ledger WHERE reference = '{id}' AND kind = 'charge'")), charged.to_string());
        // Exactly one carrier call was placed for each.
        assert_eq!(c.db(&format!("SELECT placements FROM calls WHERE id = '{id}'")), "1", "{id}");
    }
    assert_eq!(c.db("SELECT COUNT(*) FROM calls WHERE holds_line = 1"), "0");
    let charged: i64 = c.db("SELECT SUM(charged) FROM calls").parse().unwrap();
    assert_eq!(c.balance(), (10_000_000 - charged, 0));
}
