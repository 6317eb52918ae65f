//! Declared variables of structured sources other than Contacts: a contact
//! resolves them from its row of each source (by its mobile, else by a
//! field key it shares with the source), so they need a contact as
//! Contacts variables do.

use super::*;

#[test]
fn variables_of_other_sources_resolve_from_the_contacts_row() {
    let c = Calls::new(1, 5_000_000);
    let fields = json!([
        {"key": "phone", "label": "Phone", "type": "text", "lookup": true},
        {"key": "customerId", "label": "Customer", "type": "text", "lookup": true},
        {"key": "plan", "label": "Plan", "type": "text"},
        {"key": "balance", "label": "Balance", "type": "number"}
    ]);
    let accounts = c.post("/api/v1/data-sources", json!({"name": "Accounts", "class": "structured", "kind": "table", "fields": fields}))["dataSource"]["id"].as_str().unwrap().to_string();
    let csv = "phone,customerId,plan,balance\n+447700900123,C-1,Gold,12.5\n,C-2,Silver,3\n+447700900125,C-3,,7\n,42.0,Bronze,1\n";
    let d = c.post("/api/v1/data-sources/upload", json!({"dataSourceId": accounts, "fileName": "accounts.csv", "format": "csv", "contentBase64": b64(csv.as_bytes())}));
    let ingestion = d["ingestionId"].as_str().unwrap().to_string();
    poll("the accounts to be active", || {
        let r = c.s.as_key(&c.t.key).get(&format!("/api/v1/data-sources/ingestions?businessId={}&ingestionId={ingestion}", c.t.business));
        let stage = r.data()["ingestion"]["stage"].as_str().unwrap_or("").to_string();
        assert!(!["failed", "needs_review"].contains(&stage.as_str()), "{}", r.text);
        (stage == "active").then_some(())
    });
    let sources = c.s.as_key(&c.t.key).get(&format!("/api/v1/data-sources?businessId={}&limit=200", c.t.business));
    let contacts = sources.data()["dataSources"].as_array().unwrap().iter().find(|d| d["builtIn"] == true).unwrap()["id"].as_str().unwrap().to_string();
    let agent = c.post(
        "/api/v1/agents",
        json!({"channel": "voice", "name": "Collector", "instructions": "Remind the customer of their balance.", "contactCategoryIds": [c.everyone],
        "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "name", "alias": "customerName"},
                                {"sourceId": accounts, "fieldKey": "plan", "alias": "plan"},
                                {"sourceId": accounts, "fieldKey": "balance", "alias": "balance"}],
        "voiceSettings": {"firstGreeting": "Hello {{customerName}}, about your {{plan}} plan."}}),
    )["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let contact = |name: &str, mobile: &str, fields: Value| {
        c.post("/api/v1/contacts", json!({"name": name, "mobile": mobile, "categoryIds": [c.everyone], "fields": fields}))["contact"]["id"].as_str().unwrap().to_string()
    };
    // By mobile; by a field key the contact shares with the source (any case);
    // a row with an empty cell; no row at all.
    let ada = contact("Ada", "+447700900123", json!({}));
    let bob = contact("Bob", "+447700900124", json!({"customerId": "c-2"}));
    let cy = contact("Cy", "+447700900125", json!({}));
    let dee = contact("Dee", "+447700900126", json!({"customerId": "C-9"}));
    let resolve = |id: &str| c.s.as_key(&c.t.key).get(&format!("/api/v1/voice/calls/resolve?businessId={}&agentId={agent}&contactId={id}", c.t.business)).assert_ok(200)["values"].clone();
    assert_eq!(resolve(&ada), json!({"customerName": "Ada", "plan": "Gold", "balance": "12.5"}));
    assert_eq!(resolve(&bob), json!({"customerName": "Bob", "plan": "Silver", "balance": "3"}));
    assert_eq!(resolve(&cy), json!({"customerName": "Cy", "balance": "7"}));
    assert_eq!(resolve(&dee), json!({"customerName": "Dee"}));
    // Numbers match as numbers: a contact's 42 finds the row written 42.0.
    let eve = contact("Eve", "+447700900127", json!({"customerId": "42"}));
    assert_eq!(resolve(&eve), json!({"customerName": "Eve", "plan": "Bronze", "balance": "1"}));

    // A call snapshots them and fills the greeting; one without a value is refused.
    let id = c.start(json!({"agentId": agent, "contactId": ada})).assert_ok(202)["callId"].as_str().unwrap().to_string();
    let r = c.ended(&id);
    assert_eq!(r["transcript"][0]["text"], json!("Hello Ada, about your Gold plan."), "{r}");
    let r = c.start(json!({"agentId": agent, "contactId": dee}));
    assert_eq!((r.status, r.code()), (409, "variable_missing"), "{}", r.text);

    // Variables of another source only are contact-backed as well: a bare
    // number has no row, so the agent must be scoped to contact categories,
    // and it calls contacts only, refused as a Contacts variable's agent is.
    let plan_only = json!({"channel": "voice", "name": "Plans", "instructions": "Talk about the plan.",
        "dataSourceVariables": [{"sourceId": accounts, "fieldKey": "plan", "alias": "plan"}],
        "voiceSettings": {"firstGreeting": "About your {{plan}} plan."}});
    let mut unscoped = plan_only.clone();
    unscoped["businessId"] = json!(c.t.business);
    let r = c.s.as_key(&c.t.key).fresh().post("/api/v1/agents", &unscoped);
    assert_eq!((r.status, r.code()), (400, "contact_categories_required"), "{}", r.text);
    let mut scoped = plan_only.clone();
    scoped["contactCategoryIds"] = json!([c.everyone]);
    let created = c.post("/api/v1/agents", scoped);
    assert_eq!(created["agent"]["contactContextRequired"], true);
    let plans = created["agent"]["id"].as_str().unwrap().to_string();
    let resolved = |agent: &str, target: &str| c.s.as_key(&c.t.key).get(&format!("/api/v1/voice/calls/resolve?businessId={}&agentId={agent}&{target}", c.t.business));
    assert_eq!(resolved(&plans, "toNumber=%2B14155550100").assert_ok(200), &json!({"destination": "+14155550100", "values": {}, "contactRequired": true}));
    assert_eq!(resolved(&plans, &format!("contactId={ada}")).assert_ok(200), &json!({"destination": "+447700900123", "values": {"plan": "Gold"}, "contactRequired": true}));
    let by_number = c.start(json!({"agentId": plans, "toNumber": "+14155550100"}));
    let contacts_by_number = c.start(json!({"agentId": agent, "toNumber": "+14155550100"}));
    assert_eq!((by_number.status, by_number.code()), (409, "contact_required"), "{}", by_number.text);
    assert_eq!((by_number.message(), by_number.body["error"]["category"].clone()), (contacts_by_number.message(), contacts_by_number.body["error"]["category"].clone()));
    // A contact target still works, from the contact's row.
    let id = c.start(json!({"agentId": plans, "contactId": ada})).assert_ok(202)["callId"].as_str().unwrap().to_string();
    assert_eq!(c.ended(&id)["transcript"][0]["text"], json!("About your Gold plan."));
}
