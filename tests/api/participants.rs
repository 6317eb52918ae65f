//! Participant link (operation 34): the participant is a conversation id of
//! the business; linking resolves (or creates) the mobile-first contact and
//! moves the conversation's messages and timeline entries to it, no OTP.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;

const PNID: &str = "pn-link-1";

fn inbound(dir: &Path, from: &str, text: &str) {
    let r = admin(dir, &["sandbox", "inbound", "--phone-number-id", PNID, "--from", from, "--text", text]);
    wait_done(dir, r["jobId"].as_str().unwrap());
}

fn conversation_of(dir: &Path, biz: &str, mobile: &str) -> String {
    sql(dir, &format!("SELECT v.id FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.business_id = '{biz}' AND c.mobile = '{mobile}'")).trim().to_string()
}

fn timeline(s: &Server, key: &str, biz: &str, contact: &str) -> Vec<Value> {
    s.as_key(key).get(&format!("/api/v1/contacts/{contact}/timeline?businessId={biz}")).assert_ok(200)["entries"].as_array().unwrap().clone()
}

#[test]
fn link_moves_history_to_the_mobile_first_contact() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let other = tenant(&dir.0, "all");
    let biz = t.business.as_str();
    s.admin(&["channel", "connect", "--business", biz, "--channel", "chatapp", "--phone-number-id", PNID]);

    inbound(&dir.0, "+15550007001", "hello");
    inbound(&dir.0, "+15550007001", "again");
    let conv = conversation_of(&dir.0, biz, "+15550007001");
    assert_eq!(conv.len(), 36);
    let old_contact = sql(&dir.0, &format!("SELECT contact_id FROM conversations WHERE id = '{conv}'")).trim().to_string();
    let link = |key: &str, business: &str, id: &str, body: Value| {
        let mut b = body;
        b["businessId"] = json!(business);
        s.as_key(key).fresh().post(&format!("/api/v1/channel-participants/{id}/link-contact"), &b)
    };

    // Tenancy and unknown ids: 404 participant_not_found, nothing moves.
    let body = json!({"channel": "chatapp", "mobile": "+15550007999", "name": "Ada Lovelace"});
    for r in [
        link(&other.key, &other.business, &conv, body.clone()),
        link(&t.key, biz, "0190a0b0-0000-7000-8000-000000000000", body.clone()),
        link(&t.key, biz, &conv, json!({"channel": "photoapp", "mobile": "+15550007999"})),
    ] {
        r.assert_failure(404, "not_found");
        assert_eq!(r.code(), "participant_not_found");
    }
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", other.business)).trim(), "0");
    // The body needs a valid mobile.
    link(&t.key, biz, &conv, json!({"channel": "chatapp", "mobile": "12"})).assert_failure(400, "validation");

    // A new mobile: the contact is created (named, in "Inbound") and gets the history.
    let r = link(&t.key, biz, &conv, body.clone());
    let d = r.assert_ok(200).clone();
    assert_eq!(d["linkedEntries"], 2, "{d}");
    let contact = d["contactId"].as_str().unwrap().to_string();
    assert_ne!(contact, old_contact);
    let c = s.as_key(&t.key).get(&format!("/api/v1/contacts/{contact}?businessId={biz}")).assert_ok(200).clone();
    assert_eq!(c["contact"]["mobile"], "+15550007999");
    assert_eq!(c["contact"]["name"], "Ada Lovelace");
    assert_eq!(sql(&dir.0, &format!("SELECT c.name FROM contact_categories cc JOIN categories c ON c.id = cc.category_id WHERE cc.contact_id = '{contact}'")).trim(), "Inbound");
    let entries = timeline(&s, &t.key, biz, &contact);
    let mut texts: Vec<&str> = entries.iter().map(|e| e["summary"]["text"].as_str().unwrap()).collect();
    texts.sort();
    assert_eq!(texts, ["again", "hello"]);
    assert!(timeline(&s, &t.key, biz, &old_contact).is_empty());
    assert_eq!(sql(&dir.0, &format!("SELECT DISTINCT contact_id FROM messages WHERE conversation_id = '{conv}'")).trim(), contact);
    assert_eq!(sql(&dir.0, &format!("SELECT contact_id FROM conversations WHERE id = '{conv}'")).trim(), contact);
    // Linking again to the same contact moves nothing.
    let again = link(&t.key, biz, &conv, json!({"channel": "chatapp", "mobile": "+15550007999"}));
    assert_eq!(again.assert_ok(200).clone(), json!({"contactId": contact, "linkedEntries": 0}));

    // An existing contact with its own conversation on the number: the
    // participant's history joins it and the participant id is used up.
    inbound(&dir.0, "+15550007002", "other person");
    let conv2 = conversation_of(&dir.0, biz, "+15550007002");
    let target = sql(&dir.0, &format!("SELECT contact_id FROM conversations WHERE id = '{conv2}'")).trim().to_string();
    let r = link(&t.key, biz, &conv, json!({"channel": "chatapp", "mobile": "+15550007002"}));
    assert_eq!(r.assert_ok(200).clone(), json!({"contactId": target, "linkedEntries": 2}));
    assert_eq!(timeline(&s, &t.key, biz, &target).len(), 3);
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM messages WHERE conversation_id = '{conv2}' AND contact_id = '{target}'")).trim(), "3");
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM conversations WHERE id = '{conv}'")).trim(), "0");
    let gone = link(&t.key, biz, &conv, json!({"channel": "chatapp", "mobile": "+15550007002"}));
    assert_eq!(gone.assert_failure(404, "not_found").code(), "participant_not_found");
}
