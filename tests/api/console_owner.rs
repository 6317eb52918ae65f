//! An owner's settings in the console (host/src/console/owner.rs): voice
//! lines and prices, summary prices, credit top-ups on a sandbox server and
//! sandbox channels, each checked by the area's own rule and refused in
//! words, for an owner's session only.

use crate::console::{assert_code, user, Browser};
use crate::harness::*;
use serde_json::{json, Value};

/// The field a validation failure names.
fn field(r: &Resp) -> &str {
    r.body["error"]["details"][0]["field"].as_str().unwrap_or_default()
}

#[test]
fn an_owner_sets_voice_lines_prices_credits_and_a_sandbox_channel() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--sandbox-routes"]);
    // Each in a database of its own (the local default): a number
    // connected to one is still refused for the other.
    let a = tenant(&dir.0, "all");
    let b = tenant(&dir.0, "all");
    user(&dir.0, &a.business, "owner@a.example", "owner");
    user(&dir.0, &a.business, "viewer@a.example", "viewer");
    let mut owner = Browser::login(&s, "owner@a.example");

    // The defaults, then a change of everything.
    let d = owner.get("/console/api/voice").assert_ok(200).clone();
    assert_eq!(d["voice"]["lines"], 1);
    assert_eq!(d["voice"]["pricePerBlockMicrocredits"], 25_000);
    assert_eq!(d["voice"]["blockSeconds"], 20);
    assert_eq!(d["summaryPrices"], json!({"pricePerContactMicrocredits": 2000, "pricePerThousandCharactersMicrocredits": 500}));
    assert_eq!(d["credits"]["topUpAllowed"], true);
    let change = json!({"lines": 3, "pricePerBlockMicrocredits": 30_000, "callerNumber": "+14155550100", "timeZone": "Europe/Paris", "callingWindow": "09:00-20:00"});
    let d = owner.send("PUT", "/console/api/voice", Some(change)).assert_ok(200).clone();
    assert_eq!(d["voice"], json!({"lines": 3, "pricePerBlockMicrocredits": 30_000, "blockSeconds": 20, "callerNumber": "+14155550100", "timeZone": "Europe/Paris", "callingWindow": "09:00-20:00"}));
    // What is not given is kept.
    let d = owner.send("PUT", "/console/api/voice", Some(json!({"lines": 2}))).assert_ok(200).clone();
    assert_eq!((d["voice"]["lines"].clone(), d["voice"]["timeZone"].clone()), (json!(2), json!("Europe/Paris")));

    // Each refusal names the body's field, in words, and writes nothing.
    for (body, name) in [
        (json!({"lines": 1001}), "lines"),
        (json!({"lines": 5, "timeZone": "Mars/Olympus"}), "timeZone"),
        (json!({"callingWindow": "9 to 5"}), "callingWindow"),
        (json!({"callerNumber": "555"}), "callerNumber"),
        (json!({"pricePerBlockMicrocredits": -1}), "pricePerBlockMicrocredits"),
    ] {
        let r = owner.send("PUT", "/console/api/voice", Some(body));
        assert_code(&r, 400, "validation", "invalid_request");
        assert_eq!(field(&r), name, "{}", r.text);
        assert!(r.message().contains(name) && !r.message().contains('^'), "{}", r.text);
    }
    assert_eq!(owner.get("/console/api/voice").data()["voice"]["lines"], 2, "a refused change wrote nothing");
    assert_code(&owner.send("PUT", "/console/api/voice", Some(json!({"lines": "three"}))), 400, "validation", "invalid_body");
    assert_code(&owner.send("PUT", "/console/api/voice", Some(json!({"colour": "blue"}))), 400, "validation", "invalid_body");

    // Summary prices: the next estimate's.
    let d = owner.send("PUT", "/console/api/summary-prices", Some(json!({"pricePerContactMicrocredits": 1500}))).assert_ok(200).clone();
    assert_eq!(d["summaryPrices"], json!({"pricePerContactMicrocredits": 1500, "pricePerThousandCharactersMicrocredits": 500}));
    let r = owner.send("PUT", "/console/api/summary-prices", Some(json!({"pricePerThousandCharactersMicrocredits": -5})));
    assert_code(&r, 400, "validation", "invalid_request");
    assert_eq!(field(&r), "pricePerThousandCharactersMicrocredits");

    // A top-up: the public ledger shows the grant.
    let d = owner.post("/console/api/credits", json!({"microcredits": 5_000_000, "note": "console top-up"})).assert_ok(200).clone();
    assert_eq!(d["credits"]["availableMicrocredits"], 5_000_000);
    let ledger = s.as_key(&a.key).get(&format!("/api/v1/credits?businessId={}", a.business));
    assert_eq!(ledger.data()["availableMicrocredits"], 5_000_000, "{}", ledger.text);
    let r = owner.post("/console/api/credits", json!({"microcredits": 0}));
    assert_code(&r, 400, "validation", "invalid_request");
    assert_eq!(field(&r), "microcredits");

    // A sandbox number, then the public channel list shows it; no token
    // reference comes back.
    let r = owner.post("/console/api/channels", json!({"channel": "chatapp", "providerId": "pn-sales", "label": "Sales"}));
    let d = r.assert_ok(200).clone();
    assert_eq!((d["phoneNumberId"].as_str(), d["label"].as_str(), d["status"].as_str()), (Some("pn-sales"), Some("Sales"), Some("connected")));
    assert!(!r.text.contains("sbpt_"), "{}", r.text);
    let channels = s.as_key(&a.key).get(&format!("/api/v1/channels?businessId={}", a.business));
    assert!(channels.text.contains("pn-sales") && !channels.text.contains("sbpt_"), "{}", channels.text);
    for (body, name) in [
        (json!({"channel": "sms", "providerId": "pn-x"}), "channel"),
        (json!({"channel": "chatapp", "providerId": "bad id!"}), "providerId"),
        (json!({"channel": "chatapp", "providerId": "pn-y", "label": "x".repeat(121)}), "label"),
    ] {
        let r = owner.post("/console/api/channels", body);
        assert_code(&r, 400, "validation", "invalid_request");
        assert_eq!(field(&r), name, "{}", r.text);
    }
    // Another business's number is refused (and stays theirs).
    user(&dir.0, &b.business, "owner@b.example", "owner");
    let mut other = Browser::login(&s, "owner@b.example");
    let r = other.post("/console/api/channels", json!({"channel": "chatapp", "providerId": "pn-sales"}));
    assert_code(&r, 400, "validation", "invalid_request");
    assert!(r.message().contains("another business"), "{}", r.text);
    // Business B's settings are its own.
    assert_eq!(other.get("/console/api/voice").data()["voice"]["lines"], 1);

    // Only an owner's session, with its CSRF token and a JSON body.
    let mut viewer = Browser::login(&s, "viewer@a.example");
    assert_code(&viewer.get("/console/api/voice"), 403, "authorization", "owner_role_required");
    assert_code(&viewer.send("PUT", "/console/api/voice", Some(json!({"lines": 9}))), 403, "authorization", "owner_role_required");
    assert_code(&viewer.post("/console/api/credits", json!({"microcredits": 1})), 403, "authorization", "owner_role_required");
    assert_code(&viewer.post("/console/api/channels", json!({"channel": "chatapp", "providerId": "pn-v"})), 403, "authorization", "owner_role_required");
    assert_code(&owner.without_csrf("POST", "/console/api/credits", Some(json!({"microcredits": 1}))), 403, "authorization", "csrf_token_invalid");
    let r = s.as_key(&a.key).get("/console/api/voice");
    assert_code(&r, 401, "authentication", "session_required");
    assert_code(&owner.send("POST", "/console/api/voice", Some(json!({}))), 405, "validation", "method_not_allowed");
    assert_code(&owner.send("PUT", "/console/api/credits", Some(json!({}))), 405, "validation", "method_not_allowed");
    assert_code(&owner.send("PUT", "/console/api/voice", None), 415, "validation", "unsupported_media_type");
    assert_eq!(owner.get("/console/api/voice").data()["credits"]["availableMicrocredits"], 5_000_000, "nothing refused moved credits");
}

/// Without `--sandbox-routes` credits are the operator's to add; once the
/// business's messages go through a plugin, the console connects no
/// sandbox number.
#[test]
fn top_ups_need_a_sandbox_server_and_sandbox_channels_the_sandbox_messenger() {
    let dir = DataDir::new();
    let plugins = dir.0.join("plugins");
    let out = std::process::Command::new(BIN)
        .args(["plugin", "template", "--interface", "messenger", "--name", "acme-messenger", "--out", plugins.join("acme-messenger").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = Server::start_with(&dir.0, &["--plugin-dir", plugins.to_str().unwrap()]);
    let a = tenant(&dir.0, "all");
    user(&dir.0, &a.business, "owner@a.example", "owner");
    let mut owner = Browser::login(&s, "owner@a.example");
    assert_eq!(owner.get("/console/api/voice").data()["credits"]["topUpAllowed"], false);
    assert_code(&owner.post("/console/api/credits", json!({"microcredits": 1000})), 403, "authorization", "credit_top_up_unavailable");
    assert_eq!(owner.get("/console/api/voice").data()["credits"]["availableMicrocredits"], 0);

    owner.post("/console/api/channels", json!({"channel": "photoapp", "providerId": "acct-1", "label": "acme"})).assert_ok(200);
    owner.send("PUT", "/console/api/providers/messenger", Some(json!({"plugin": "acme-messenger"}))).assert_ok(200);
    let r = owner.post("/console/api/channels", json!({"channel": "chatapp", "providerId": "pn-2"}));
    assert_code(&r, 409, "conflict", "sandbox_messenger_required");
    let channels: Value = s.as_key(&a.key).get(&format!("/api/v1/channels?businessId={}", a.business)).data().clone();
    assert!(!channels.to_string().contains("pn-2"), "{channels}");
}
