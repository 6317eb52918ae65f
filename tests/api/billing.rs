//! Voice lines and billing on the command line (issue 12, point 8, first
//! part): `admin voice configure`, `admin credits add` and `credits show`,
//! with the ledger of every movement.

use crate::harness::*;
use serde_json::json;
use std::process::Command;

fn admin_fails(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("admin").arg("--data-dir").arg(dir).args(args).output().unwrap();
    assert!(!out.status.success(), "admin {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn voice_accounts_default_then_change_only_what_is_given() {
    let dir = DataDir::new();
    let biz = admin(&dir.0, &["business", "create", "--name", "Calls"])["businessId"].as_str().unwrap().to_string();
    let a = admin(&dir.0, &["voice", "configure", "--business", &biz]);
    assert_eq!((a["lines"].clone(), a["pricePerBlockMicrocredits"].clone(), a["blockSeconds"].clone(), a["callerNumber"].clone()), (json!(1), json!(25000), json!(20), json!(null)));
    let a = admin(&dir.0, &["voice", "configure", "--business", &biz, "--lines", "3", "--caller-number", "+14155550100"]);
    assert_eq!((a["lines"].clone(), a["pricePerBlockMicrocredits"].clone(), a["callerNumber"].clone()), (json!(3), json!(25000), json!("+14155550100")));
    let a = admin(&dir.0, &["voice", "configure", "--business", &biz, "--price-per-block", "40000"]);
    assert_eq!((a["lines"].clone(), a["pricePerBlockMicrocredits"].clone(), a["callerNumber"].clone()), (json!(3), json!(40000), json!("+14155550100")));
    // Bad values name their flag; nothing changes.
    assert!(admin_fails(&dir.0, &["voice", "configure", "--business", &biz, "--lines", "-1"]).contains("--lines"));
    assert!(admin_fails(&dir.0, &["voice", "configure", "--business", &biz, "--caller-number", "4155550100"]).contains("--caller-number"));
    assert!(admin_fails(&dir.0, &["voice", "configure", "--business", &biz, "--price-per-block", "-5"]).contains("--price-per-block"));
    assert!(admin_fails(&dir.0, &["voice", "configure", "--business", &uuid::Uuid::new_v4().to_string()]).contains("no business"));
    assert!(admin_fails(&dir.0, &["voice", "configure", "--business", &biz, "--time-zone", "Mars/Olympus"]).contains("--time-zone"));
    assert!(admin_fails(&dir.0, &["voice", "configure", "--business", &biz, "--calling-window", "09:00-09:00"]).contains("--calling-window"));
    assert!(admin_fails(&dir.0, &["voice", "configure", "--business", &biz, "--calling-window", "9-17"]).contains("--calling-window"));
    assert_eq!(sql(&dir.0, &format!("SELECT lines || '|' || price_per_block_microcredits FROM voice_accounts WHERE business_id = '{biz}'")).trim(), "3|40000");
    let a = admin(&dir.0, &["voice", "configure", "--business", &biz, "--time-zone", "Europe/Paris", "--calling-window", "22:00-06:00"]);
    assert_eq!((a["timeZone"].clone(), a["callingWindow"].clone()), (json!("Europe/Paris"), json!("22:00-06:00")));
}

#[test]
fn summary_prices_default_then_change_only_what_is_given() {
    let dir = DataDir::new();
    let biz = admin(&dir.0, &["business", "create", "--name", "Summaries"])["businessId"].as_str().unwrap().to_string();
    let p = admin(&dir.0, &["summaries", "configure", "--business", &biz]);
    assert_eq!((p["pricePerContactMicrocredits"].clone(), p["pricePerThousandCharactersMicrocredits"].clone()), (json!(2000), json!(500)));
    let p = admin(&dir.0, &["summaries", "configure", "--business", &biz, "--price-per-thousand-characters", "100"]);
    assert_eq!((p["pricePerContactMicrocredits"].clone(), p["pricePerThousandCharactersMicrocredits"].clone()), (json!(2000), json!(100)));
    assert!(admin_fails(&dir.0, &["summaries", "configure", "--business", &biz, "--price-per-contact", "-1"]).contains("--price-per-contact"));
    assert!(admin_fails(&dir.0, &["summaries", "configure", "--business", &uuid::Uuid::new_v4().to_string()]).contains("no business"));
}

#[test]
fn credits_are_granted_into_a_ledger_and_shown() {
    let dir = DataDir::new();
    let biz = admin(&dir.0, &["business", "create", "--name", "Calls"])["businessId"].as_str().unwrap().to_string();
    let other = admin(&dir.0, &["business", "create", "--name", "Other"])["businessId"].as_str().unwrap().to_string();
    let shown = admin(&dir.0, &["credits", "show", "--business", &biz]);
    assert_eq!((shown["balanceMicrocredits"].clone(), shown["entries"].clone()), (json!(0), json!([])));
    assert_eq!(admin(&dir.0, &["credits", "add", "--business", &biz, "--microcredits", "1000000"])["balanceMicrocredits"], 1_000_000);
    let r = admin(&dir.0, &["credits", "add", "--business", &biz, "--microcredits", "250000", "--note", "top-up"]);
    assert_eq!((r["balanceMicrocredits"].clone(), r["reservedMicrocredits"].clone()), (json!(1_250_000), json!(0)));
    let shown = admin(&dir.0, &["credits", "show", "--business", &biz]);
    let entries = shown["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!((entries[0]["kind"].clone(), entries[0]["amountMicrocredits"].clone(), entries[0]["note"].clone()), (json!("grant"), json!(250_000), json!("top-up")));
    assert_eq!(entries[1]["amountMicrocredits"], 1_000_000, "newest first");
    assert_eq!(admin(&dir.0, &["credits", "show", "--business", &biz, "--limit", "1"])["entries"].as_array().unwrap().len(), 1);
    // Another business's balance is its own.
    assert_eq!(admin(&dir.0, &["credits", "show", "--business", &other])["balanceMicrocredits"], 0);
    // Refusals name the flag and change nothing.
    assert!(admin_fails(&dir.0, &["credits", "add", "--business", &biz, "--microcredits", "0"]).contains("--microcredits"));
    assert!(admin_fails(&dir.0, &["credits", "add", "--business", &biz, "--microcredits", "-3"]).contains("--microcredits"));
    assert!(admin_fails(&dir.0, &["credits", "show", "--business", &biz, "--limit", "0"]).contains("--limit"));
    assert!(admin_fails(&dir.0, &["credits", "add", "--business", &uuid::Uuid::new_v4().to_string(), "--microcredits", "5"]).contains("no business"));
    assert_eq!(sql(&dir.0, "SELECT count(*) FROM credit_ledger").trim(), "2");
}

#[test]
fn the_balance_and_ledger_are_read_through_the_api_page_by_page() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--carrier-setting", "step-delay-ms=10"]);
    let t = tenant(&dir.0, "credits:read,voice:write,voice:read,agents:write");
    let other = tenant(&dir.0, "credits:read");
    admin(&dir.0, &["voice", "configure", "--business", &t.business, "--lines", "1"]);
    admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", "3000000", "--note", "first top-up"]);
    let key = s.as_key(&t.key);
    let read = |query: &str| key.get(&format!("/api/v1/credits?businessId={}{query}", t.business));

    let fresh = read("");
    let d = fresh.assert_ok(200).clone();
    assert_eq!((d["availableMicrocredits"].clone(), d["reservedMicrocredits"].clone()), (json!(3_000_000), json!(0)));
    assert_eq!(d["entries"].as_array().unwrap().len(), 1, "{d}");
    assert_eq!((d["entries"][0]["kind"].clone(), d["entries"][0]["note"].clone(), d["entries"][0]["reference"].clone()), (json!("grant"), json!("first top-up"), json!(null)));
    if let Err(e) = document_schemas().validate(&json!({"$ref": "#/components/schemas/CreditAccount"}), &d) {
        panic!("{e:?}: {d}");
    }

    // A completed call reserves, is charged and releases the rest.
    let agent =
        s.as_key(&t.key).fresh().post("/api/v1/agents", &json!({"businessId": t.business, "channel": "voice", "name": "Caller", "instructions": "Confirm."})).assert_ok(201)["agent"]["id"].clone();
    let call =
        s.as_key(&t.key).fresh().post("/api/v1/voice/calls", &json!({"businessId": t.business, "agentId": agent, "toNumber": "+15550007777"})).assert_ok(202)["callId"].as_str().unwrap().to_string();
    poll("the call to end", || {
        let c = key.get(&format!("/api/v1/voice/calls/{call}?businessId={}", t.business)).assert_ok(200).clone();
        (c["call"]["status"] == "completed").then_some(())
    });
    let d = poll("the settlement", || {
        let d = read("").assert_ok(200).clone();
        (d["entries"].as_array().unwrap().len() == 4).then_some(d)
    });
    let kinds: Vec<_> = d["entries"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect();
    assert_eq!(kinds, ["release", "charge", "reserve", "grant"], "newest first: {d}");
    let charged = d["entries"][1]["amountMicrocredits"].as_i64().unwrap();
    assert_eq!(d["entries"][0]["reference"], json!(call));
    assert_eq!(d["availableMicrocredits"].as_i64().unwrap(), 3_000_000 - charged);
    assert_eq!(d["reservedMicrocredits"], json!(0));

    // One entry a page, every entry once, in the same order.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = read(&format!("&limit=1{cursor}")).assert_ok(200).clone();
        seen.extend(page["entries"].as_array().unwrap().iter().map(|e| e["id"].clone()));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
        assert!(seen.len() <= 4, "{seen:?}");
    }
    let all: Vec<_> = d["entries"].as_array().unwrap().iter().map(|e| e["id"].clone()).collect();
    assert_eq!(seen, all);

    // Its own scope, its own business.
    let r = s.as_key(&other.key).get(&format!("/api/v1/credits?businessId={}", t.business));
    r.assert_failure(403, "authorization");
    let no_scope = admin(&dir.0, &["key", "create", "--business", &t.business, "--scopes", "voice:read"])["apiKey"].as_str().unwrap().to_string();
    let r = s.as_key(&no_scope).get(&format!("/api/v1/credits?businessId={}", t.business));
    r.assert_failure(403, "authorization");
    assert_eq!(r.code(), "missing_scope");
    let empty = s.as_key(&other.key).get(&format!("/api/v1/credits?businessId={}", other.business));
    assert_eq!(empty.assert_ok(200)["entries"], json!([]));
    read("&limit=0").assert_failure(400, "validation");
    read("&cursor=nope").assert_failure(400, "validation");
}
