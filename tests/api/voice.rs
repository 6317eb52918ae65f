//! The voice area so far: the resolved call context (operation 40). Calls
//! themselves still answer 501 until they land.

use crate::harness::*;
use serde_json::{json, Value};

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
    let ada = c.post("/api/v1/contacts", json!({"name": "Ada", "mobile": "+447700900123", "categoryIds": [vip], "fields": {"city": "London", "secret": "x"}}))["contact"]["id"]
        .as_str().unwrap().to_string();
    let bob = c.post("/api/v1/contacts", json!({"name": "Bob", "mobile": "+447700900124", "categoryIds": [other], "fields": {"tier": "gold"}}))["contact"]["id"].as_str().unwrap().to_string();
    let cy = c.post("/api/v1/contacts", json!({"name": "Cy", "mobile": "+447700900125", "categoryIds": [vip], "communicationBlocked": true}))["contact"]["id"]
        .as_str().unwrap().to_string();
    let sources = c.s.as_key(&c.t.key).get(&format!("/api/v1/data-sources?businessId={}&limit=200", c.t.business));
    let contacts = sources.data()["dataSources"].as_array().unwrap().iter().find(|d| d["builtIn"] == true).unwrap()["id"].as_str().unwrap().to_string();
    let var = |key: &str, alias: &str| json!({"sourceId": contacts, "fieldKey": key, "alias": alias});
    let agent = c.post("/api/v1/agents", json!({"channel": "voice", "name": "Caller", "instructions": "Confirm the appointment.",
        "contactCategoryIds": [vip], "dataSourceVariables": [var("name", "customerName"), var("city", "city"), var("tier", "tier")],
        "voiceSettings": {"firstGreeting": "Hello {{customerName}}"}}))["agent"]["id"].as_str().unwrap().to_string();
    let plain = c.post("/api/v1/agents", json!({"channel": "voice", "name": "Plain", "instructions": "Say hello."}))["agent"]["id"].as_str().unwrap().to_string();
    let chat = c.post("/api/v1/agents", json!({"channel": "chatapp", "name": "Chat", "instructions": "Answer."}))["agent"]["id"].as_str().unwrap().to_string();

    // A contact in scope: its mobile, and only the declared aliases it has.
    let r = c.resolve(&c.t.key, &format!("agentId={agent}&contactId={ada}"));
    assert_eq!(r.assert_ok(200), &json!({"destination": "+447700900123", "values": {"city": "London", "customerName": "Ada"}, "contactRequired": true}));
    // A direct number: no values; whether the agent needs a contact.
    assert_eq!(c.resolve(&c.t.key, &format!("agentId={agent}&toNumber=%2B14155550100")).assert_ok(200),
               &json!({"destination": "+14155550100", "values": {}, "contactRequired": true}));
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

    // Calls themselves are not built yet.
    let r = c.s.as_key(&c.t.key).get(&format!("/api/v1/voice/calls?businessId={}", c.t.business));
    r.assert_failure(501, "configuration");
}
