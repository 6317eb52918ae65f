//! The campaign admission preview (ours 70): who a first iteration would
//! admit, by the same rules and counts as createCampaign, writing nothing.

use super::{check, code, C};
use crate::harness::*;
use serde_json::json;

#[test]
fn a_preview_counts_who_a_campaign_would_admit_and_writes_nothing() {
    let c = C::new(1, 0, 60_000, 20);
    let vip = c.post("/api/v1/contacts/categories", json!({"name": "VIP"}))["category"]["id"].as_str().unwrap().to_string();
    let other = c.post("/api/v1/contacts/categories", json!({"name": "Other"}))["category"]["id"].as_str().unwrap().to_string();
    let ada = c.contact("Ada", "+15550100001", json!({"categoryIds": [vip], "fields": {"city": "London"}}));
    let bob = c.contact("Bob", "+15550100002", json!({"categoryIds": [other], "fields": {"city": "Paris"}}));
    let cy = c.contact("Cy", "+15550100003", json!({"categoryIds": [vip], "fields": {"city": "Rome"}, "communicationBlocked": true}));
    let dee = c.contact("Dee", "+15550100004", json!({"categoryIds": [vip]}));
    let sources = c.get("/api/v1/data-sources?limit=200");
    let contacts = sources["dataSources"].as_array().unwrap().iter().find(|d| d["builtIn"] == true).unwrap()["id"].as_str().unwrap().to_string();
    let agent = c.voice_agent(json!({"contactCategoryIds": [vip], "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "city", "alias": "city"}]}));
    let preview = |body: serde_json::Value| c.send("POST", "/api/v1/campaigns/admission-preview", body);

    // The same counts a create answers, for both audiences.
    let unknown = "01a2170f-0000-7000-8000-000000000000";
    let r = preview(json!({"channel": "voice", "agentId": agent, "contactIds": [ada, bob, cy, dee, unknown]}));
    let d = r.assert_ok(200).clone();
    check("CampaignAdmissionPreviewResult", &d);
    assert_eq!(d["admission"], json!({"accepted": 1, "skipped": {"notFound": 1, "blocked": 1, "outOfScope": 1, "variableMissing": 1}}));
    // Who is left out is named, in the audience's order, each with why.
    let named: Vec<(String, String)> = d["skippedContacts"].as_array().unwrap().iter().map(|s| (s["contactId"].as_str().unwrap().to_string(), s["reason"].as_str().unwrap().to_string())).collect();
    let want: Vec<(String, String)> =
        [(&bob, "outOfScope"), (&cy, "blocked"), (&dee.to_string(), "variableMissing"), (&unknown.to_string(), "notFound")].iter().map(|(i, r)| (i.to_string(), r.to_string())).collect();
    assert_eq!(named, want);
    assert_eq!(d["skippedContacts"][0]["name"], "Bob");
    assert_eq!(d["skippedContacts"][0]["mobile"], "+15550100002");
    assert_eq!(d["skippedContacts"][2]["missingFields"], json!(["city"]));
    assert_eq!(d["skippedContacts"][3]["name"], json!(null));
    let by_category = preview(json!({"channel": "voice", "agentId": agent, "categoryIds": [vip]}));
    assert_eq!(by_category.assert_ok(200)["admission"], json!({"accepted": 1, "skipped": {"notFound": 0, "blocked": 1, "outOfScope": 0, "variableMissing": 1}}));
    let created = c.create(json!({"channel": "voice", "agentId": agent, "categoryIds": [vip]}));
    assert_eq!(created.assert_ok(201)["admission"], by_category.data()["admission"], "a create admits what the preview counted");
    // Nobody admitted is an answer, not a conflict.
    let none = preview(json!({"channel": "voice", "agentId": agent, "contactIds": [bob, cy]}));
    let d = none.assert_ok(200).clone();
    check("CampaignAdmissionPreviewResult", &d);
    assert_eq!(d["admission"]["accepted"], 0);

    // It writes nothing: still the one campaign, and its one member.
    let campaigns = c.get("/api/v1/campaigns")["campaigns"].as_array().unwrap().len();
    assert_eq!(campaigns, 1);

    // The agent and the audience are checked as a create checks them.
    let chat = c.post("/api/v1/agents", json!({"channel": "chatapp", "name": "Chat", "instructions": "Answer."}))["agent"]["id"].as_str().unwrap().to_string();
    assert_eq!(code(&preview(json!({"channel": "voice", "agentId": chat, "contactIds": [ada]})), 409), "agent_channel_mismatch");
    assert_eq!(code(&preview(json!({"channel": "chatapp", "agentId": chat, "contactIds": [ada]})), 409), "agent_not_assigned");
    assert_eq!(code(&preview(json!({"channel": "voice", "agentId": unknown, "contactIds": [ada]})), 404), "agent_not_found");
    assert_eq!(code(&preview(json!({"channel": "voice", "agentId": agent, "categoryIds": [unknown]})), 404), "category_not_found");
    for bad in [
        json!({"channel": "voice", "agentId": agent, "contactIds": [ada], "categoryIds": [vip]}),
        json!({"channel": "voice", "agentId": agent}),
        json!({"channel": "voice", "agentId": agent, "contactIds": []}),
        json!({"channel": "sms", "agentId": agent, "contactIds": [ada]}),
        json!({"channel": "voice", "agentId": agent, "contactIds": [ada], "openingMessage": "Hi"}),
    ] {
        preview(bad).assert_failure(400, "validation");
    }
    assert_eq!(c.get("/api/v1/campaigns")["campaigns"].as_array().unwrap().len(), 1, "no refused preview wrote anything");

    // Another business's agent is not found; a key without contacts:read is refused.
    let stranger = tenant(&c.dir.0, "all");
    let r = c.s.as_key(&stranger.key).fresh().post("/api/v1/campaigns/admission-preview", &json!({"businessId": stranger.business, "channel": "voice", "agentId": agent, "contactIds": [ada]}));
    assert_eq!(code(&r, 404), "agent_not_found");
    let narrow = admin(&c.dir.0, &["key", "create", "--business", &c.t.business, "--scopes", "campaigns:read"])["apiKey"].as_str().unwrap().to_string();
    let r = c.s.as_key(&narrow).fresh().post("/api/v1/campaigns/admission-preview", &json!({"businessId": c.t.business, "channel": "voice", "agentId": agent, "contactIds": [ada]}));
    assert_eq!(code(&r, 403), "missing_scope");
}
