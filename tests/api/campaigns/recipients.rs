//! An iteration's recipients (ours 90, the console's campaign page): each
//! member with the contact as it is now, its outcome, its latest call or
//! opening and the contact's reply, paged in admission order.

use super::{check, code, C};
use crate::harness::*;
use serde_json::json;

#[test]
fn a_voice_iterations_recipients_name_their_contacts_calls_and_outcomes() {
    let c = C::new(2, 50_000_000, 60_000, 10);
    let agent = c.voice_agent(json!({}));
    let ada = c.contact("Ada", "+15550400001", json!({}));
    let busy = c.contact("Busy", "+15550402222", json!({})); // …2222: busy
    let cy = c.contact("Cy", "+15550400003", json!({}));
    let d = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": [ada, busy, cy]}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    let first = d.data()["currentIteration"]["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/campaigns/{campaign}/recipients");

    // Before the start: every one pending, no call yet, in admission order.
    let before = c.get(&path);
    check("RecipientList", &before);
    assert_eq!(before["iterationId"], first.as_str());
    let names: Vec<&str> = before["recipients"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Ada", "Busy", "Cy"]);
    assert!(before["recipients"].as_array().unwrap().iter().all(|r| r["outcome"] == "pending" && r["call"].is_null() && r["mobile"].is_string()));

    c.act(&campaign, "start").assert_ok(200);
    c.completed(&c.s, &campaign);
    let after = c.get(&path);
    check("RecipientList", &after);
    for r in after["recipients"].as_array().unwrap() {
        let call = &r["call"];
        let id = call["id"].as_str().expect("each recipient has its call");
        // The call is the one the voice API reads.
        let read = c.get(&format!("/api/v1/voice/calls/{id}"));
        assert_eq!(read["call"]["status"], call["status"], "{r}");
        assert_eq!(read["call"]["contactId"], r["contactId"]);
        if r["contactId"] == busy.as_str() {
            assert_eq!((r["outcome"].as_str(), call["status"].as_str(), r["attempts"].as_i64()), (Some("busy"), Some("busy"), Some(1)), "{r}");
        } else {
            assert_eq!((r["outcome"].as_str(), call["status"].as_str()), (Some("completed"), Some("completed")), "{r}");
            assert!(call["endedBy"].is_string() && call["durationSeconds"].as_i64().unwrap() > 0, "{r}");
        }
        assert!(r["opening"].is_null() && r["reply"].is_null());
    }
    // Filtered by outcome, and paged.
    let only = c.get(&format!("{path}?outcome=busy"));
    assert_eq!(only["recipients"].as_array().unwrap().len(), 1);
    let page = c.get(&format!("{path}?limit=2"));
    let cursor = page["nextCursor"].as_str().expect("a second page").to_string();
    let rest = c.get(&format!("{path}?limit=2&cursor={cursor}"));
    assert_eq!(rest["recipients"][0]["name"], "Cy");
    assert!(rest["nextCursor"].is_null());

    // A follow-up is the current iteration now; the first stays readable by id.
    let f = c.send("POST", &format!("/api/v1/campaigns/{campaign}/iterations"), json!({"channel": "voice", "agentId": agent, "selection": {"fromOutcomes": ["busy"]}}));
    f.assert_ok(201);
    assert_eq!(c.get(&path)["recipients"].as_array().unwrap().len(), 1, "the current iteration by default");
    assert_eq!(c.get(&format!("{path}?iterationId={first}"))["recipients"].as_array().unwrap().len(), 3);

    // A deleted contact keeps its row, with the name it was admitted with.
    c.send("DELETE", "/api/v1/contacts", json!({"contactIds": [cy]})).assert_ok(200);
    let gone = c.get(&format!("{path}?iterationId={first}&limit=50"))["recipients"].as_array().unwrap().iter().find(|r| r["contactId"] == cy.as_str()).unwrap().clone();
    assert_eq!((gone["contactExists"].as_bool(), gone["name"].as_str(), gone["mobile"].clone()), (Some(false), Some("Cy"), json!(null)));

    // Another campaign's iteration, another business's campaign, a narrow key.
    let other = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": [ada]})).assert_ok(201)["currentIteration"]["id"].as_str().unwrap().to_string();
    let r = c.s.as_key(&c.t.key).get(&format!("{path}?businessId={}&iterationId={other}", c.t.business));
    assert_eq!(code(&r, 404), "iteration_not_found");
    let stranger = tenant(&c.dir.0, "all");
    let r = c.s.as_key(&stranger.key).get(&format!("{path}?businessId={}", stranger.business));
    assert_eq!(code(&r, 404), "campaign_not_found");
    let narrow = admin(&c.dir.0, &["key", "create", "--business", &c.t.business, "--scopes", "campaigns:read,contacts:read"])["apiKey"].as_str().unwrap().to_string();
    let r = c.s.as_key(&narrow).get(&format!("{path}?businessId={}", c.t.business));
    assert_eq!(code(&r, 403), "missing_scope");
    c.s.as_key(&c.t.key).get(&format!("{path}?businessId={}&outcome=maybe", c.t.business)).assert_failure(400, "validation");
}

#[test]
fn a_chatapp_recipient_shows_its_opening_and_the_reply() {
    // A campaign minute of 2 ms: the 24-hour reply window lasts about 3 s.
    let c = C::new(1, 0, 2, 5);
    admin(&c.dir.0, &["channel", "connect", "--business", &c.t.business, "--channel", "chatapp", "--phone-number-id", "pn-rcp"]);
    let agent = c.post("/api/v1/agents", json!({"channel": "chatapp", "name": "Renewals", "instructions": "Help with renewals."}))["agent"]["id"].as_str().unwrap().to_string();
    c.send("PATCH", "/api/v1/channels/assignments", json!({"channel": "chatapp", "phoneNumberId": "pn-rcp", "aiAgentId": agent, "autoReplyEnabled": false, "humanHandoffActive": false}))
        .assert_ok(200);
    let ada = c.contact("Ada", "+15551030001", json!({}));
    let r = c.create(json!({"channel": "chatapp", "agentId": agent, "contactIds": [ada], "openingMessage": "Your plan renews soon."}));
    let campaign = r.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    c.act(&campaign, "start").assert_ok(200);
    let path = format!("/api/v1/campaigns/{campaign}/recipients");
    poll("the opening to be read", || (c.get(&path)["recipients"][0]["outcome"] == "read").then_some(()));
    admin(&c.dir.0, &["sandbox", "inbound", "--phone-number-id", "pn-rcp", "--from", "+15551030001", "--text", "Yes, keep it"]);
    let r = poll("the reply", || {
        let r = c.get(&path)["recipients"][0].clone();
        (r["outcome"] == "replied").then_some(r)
    });
    check("Recipient", &r);
    assert_eq!(r["reply"]["text"], "Yes, keep it");
    assert_eq!(r["opening"]["status"], "read");
    let message = c.get(&format!("/api/v1/messages/{}", r["opening"]["messageId"].as_str().unwrap()));
    assert_eq!(message["recipient"], "+15551030001");
    assert!(r["call"].is_null());
}
