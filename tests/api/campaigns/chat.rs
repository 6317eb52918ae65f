//! Chatapp iterations (issue 40): failed openings are retried by outcome
//! within `maxRetries` and `retryDelayMinutes`, as failed calls are, and a
//! `kill -9` mid-iteration never sends a member two openings for one
//! attempt.

use super::C;
use crate::harness::*;
use serde_json::{json, Value};

/// A chatapp agent without variables, assigned to a connected number.
fn chat_agent(c: &C, number: &str) -> String {
    admin(&c.dir.0, &["channel", "connect", "--business", &c.t.business, "--channel", "chatapp", "--phone-number-id", number]);
    let agent = c.post("/api/v1/agents", json!({"channel": "chatapp", "name": "Renewals", "instructions": "Help with renewals."}))["agent"]["id"].as_str().unwrap().to_string();
    c.send("PATCH", "/api/v1/channels/assignments", json!({"channel": "chatapp", "phoneNumberId": number, "aiAgentId": agent, "autoReplyEnabled": false, "humanHandoffActive": false})).assert_ok(200);
    agent
}

/// The outcomes of a member's history, oldest first.
fn history(m: &Value) -> Vec<String> {
    m["history"].as_array().unwrap().iter().map(|h| h["outcome"].as_str().unwrap().to_string()).collect()
}

#[test]
fn failed_chatapp_openings_are_retried_by_outcome() {
    // A campaign minute of 5 ms: a retry one minute later, a reply window of about 7 s.
    let c = C::new(1, 0, 5, 5);
    let agent = chat_agent(&c, "pn-retry");
    let gone = c.contact("Gone", "+15551020000", json!({})); // …0000: fails after acceptance
    let reader = c.contact("Reader", "+15551020001", json!({})); // read
    let refused = c.contact("Refused", "+15551022222", json!({})); // …2222: refused at submit
    let r = c.create(json!({"channel": "chatapp", "agentId": agent, "contactIds": [gone, reader, refused], "openingMessage": "Your plan renews soon.", "maxRetries": 2, "retryDelayMinutes": 1}));
    let campaign = r.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    assert_eq!(r.data()["currentIteration"]["maxRetries"], 2);
    c.act(&campaign, "start").assert_ok(200);
    let it = c.completed(&c.s, &campaign);
    let counts = &it["counts"];
    assert_eq!((counts["failed"].as_i64(), counts["read"].as_i64(), counts["total"].as_i64()), (Some(2), Some(1), Some(3)), "{counts}");

    // Each failed opening was sent again, twice (maxRetries), each time a
    // new message; the one read never again.
    let members = c.get(&format!("/api/v1/campaigns/{campaign}/memberships"));
    for m in members["memberships"].as_array().unwrap() {
        let contact = m["contactId"].as_str().unwrap();
        let sent = c.db(&format!("SELECT COUNT(*) FROM messages WHERE contact_id = '{contact}' AND direction = 'outbound'"));
        let failed = history(m).iter().filter(|o| *o == "failed").count();
        if contact == reader {
            assert_eq!((m["attempts"].as_i64(), sent.as_str(), failed), (Some(1), "1", 0), "{m}");
        } else {
            assert_eq!((m["attempts"].as_i64(), sent.as_str(), failed), (Some(3), "3", 3), "{m}");
            assert_eq!(history(m).iter().filter(|o| *o == "in_progress").count(), 3, "{m}");
        }
    }
    let acts = c.get(&format!("/api/v1/campaigns/{campaign}/activities?channel=chatapp&contactId={gone}"));
    assert_eq!(acts["activities"].as_array().unwrap().len(), 3, "each opening is an activity");
    assert_eq!(c.db(&format!("SELECT COUNT(*) FROM campaign_members WHERE campaign_id = '{campaign}' AND retry_at_ms IS NOT NULL")), "0");

    // Without retries (the default), a failed opening stays failed.
    let r = c.create(json!({"channel": "chatapp", "agentId": agent, "contactIds": [gone], "openingMessage": "Once only."}));
    let once = r.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    c.act(&once, "start").assert_ok(200);
    let it = c.completed(&c.s, &once);
    assert_eq!((it["counts"]["failed"].as_i64(), it["maxRetries"].as_i64()), (Some(1), Some(0)));
    assert_eq!(c.db(&format!("SELECT attempts FROM campaign_members WHERE campaign_id = '{once}'")), "1");

    // A cancel drops a retry that is waiting: the member is cancelled, never sent again.
    let r = c.create(json!({"channel": "chatapp", "agentId": agent, "contactIds": [gone], "openingMessage": "Later.", "maxRetries": 1, "retryDelayMinutes": 10080}));
    let waiting = r.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    c.act(&waiting, "start").assert_ok(200);
    poll("the failed opening to wait for its retry", || (c.db(&format!("SELECT COUNT(*) FROM campaign_members WHERE campaign_id = '{waiting}' AND retry_at_ms IS NOT NULL")) == "1").then_some(()));
    assert_eq!(c.current(&waiting)["status"], "running", "an iteration waits for its retries");
    let it = c.act(&waiting, "cancel");
    assert_eq!(it.assert_ok(200)["currentIteration"]["counts"]["cancelled"], 1);
    assert_eq!(c.db(&format!("SELECT attempts FROM campaign_members WHERE campaign_id = '{waiting}'")), "1");
}

#[test]
fn kill_9_mid_chatapp_iteration_never_sends_a_member_two_openings_for_one_attempt() {
    // A campaign minute of 60 ms: retries 60 ms later, a reply window of
    // about 86 s (the iteration is still running while the crashes land).
    let mut c = C::new(1, 0, 60, 15);
    let agent = chat_agent(&c, "pn-soak");
    // 400 openings that are read, 5 that fail and are retried once.
    let mut rows: Vec<(String, String)> = (1..=400).map(|i| (format!("+1555071{i:04}"), format!("K{i}"))).collect();
    rows.extend((1..=5).map(|i| (format!("+155507{i}0000"), format!("F{i}"))));
    c.import(&rows);
    let d = c.create(json!({"channel": "chatapp", "agentId": agent, "categoryIds": [c.everyone], "openingMessage": "Your plan renews soon.", "maxRetries": 1, "retryDelayMinutes": 1}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    c.act(&campaign, "start").assert_ok(200);
    // kill -9 fifteen times, at uneven moments, while the openings go out.
    for pause_ms in [40u64, 170, 90, 260, 120].repeat(3) {
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
        assert_eq!(c.current(&campaign)["status"], "running", "the crashes land while the iteration runs");
        c.crash_and_restart();
    }
    let settled = poll_within("every opening to settle", std::time::Duration::from_secs(120), || {
        let it = c.current(&campaign);
        let n = |k: &str| it["counts"][k].as_i64().unwrap_or(0);
        let waiting = c.db(&format!("SELECT COUNT(*) FROM campaign_members WHERE campaign_id = '{campaign}' AND retry_at_ms IS NOT NULL"));
        (n("read") + n("replied") == 400 && n("failed") == 5 && waiting == "0").then_some(it)
    });
    assert_eq!(settled["counts"]["total"], 405);
    // One opening message per attempt of each member: 400 once, the 5 failed twice.
    let mismatched = c.db(&format!(
        "SELECT COUNT(*) FROM campaign_members m WHERE m.campaign_id = '{campaign}' \
         AND m.attempts <> (SELECT COUNT(*) FROM messages k WHERE k.business_id = m.business_id AND k.contact_id = m.contact_id AND k.direction = 'outbound')"
    ));
    assert_eq!(mismatched, "0", "members whose attempts and opening messages differ");
    assert_eq!(c.db(&format!("SELECT SUM(attempts) FROM campaign_members WHERE campaign_id = '{campaign}'")), "410", "400 + 5 failed twice");
    // Each message was handed to the provider once and named by it once.
    assert_eq!(c.db("SELECT COUNT(*), COUNT(DISTINCT provider_message_id) FROM messages WHERE direction = 'outbound'"), "410|410");
    assert_eq!(c.db(&format!("SELECT COUNT(*) FROM campaign_openings WHERE campaign_id = '{campaign}'")), "410", "each opening an activity");
    let history = c.db(&format!(
        "SELECT COUNT(*) FROM campaign_member_events e JOIN campaign_members m ON m.business_id = e.business_id AND m.id = e.member_id \
         WHERE m.campaign_id = '{campaign}' AND e.outcome = 'in_progress'"
    ));
    assert_eq!(history, "410", "one in_progress in the history per opening");
}
