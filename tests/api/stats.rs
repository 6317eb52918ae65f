//! The console's daily figures (ours, operations 67-69): messages, calls
//! and credits per day (UTC) of a period ending today, counted on the
//! server, every day present; tenancy, scopes and the `days` bounds.

use crate::harness::*;
use serde_json::{json, Value};
use std::process::Command;

const PNID: &str = "pn-stats-1";

/// A write straight into the data dir's database (moving rows back in time,
/// which the API never does), beside the running server; at its primary
/// when it has one (the edge target).
fn write_sql(dir: &std::path::Path, statement: &str, params: &[&str]) {
    if let Some(url) = primary_of(dir) {
        let args: Vec<Value> = params.iter().map(|p| json!({"type": "text", "value": p})).collect();
        let body = json!({"requests": [{"type": "execute", "stmt": {"sql": statement, "args": args}}, {"type": "close"}]});
        let r: Value = reqwest::blocking::Client::new().post(format!("{url}/v2/pipeline")).json(&body).send().expect("pipeline").json().expect("json");
        assert_eq!(r["results"][0]["type"], "ok", "{statement}: {r}");
        return;
    }
    // The row's database (a business has one of its own by default): each
    // file the statement may belong to; only the one holding the row changes.
    let script = "import sqlite3,sys\nc=sqlite3.connect(sys.argv[1],timeout=30)\nc.execute(sys.argv[2],sys.argv[3:])\nc.commit()";
    for file in database_files(dir, &format!("{statement} {}", params.join(" "))) {
        let out = Command::new("python3").arg("-c").arg(script).arg(file).arg(statement).args(params).output().expect("python3");
        assert!(out.status.success(), "sql failed: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The day `n` days before today (UTC), YYYY-MM-DD, as the database says.
fn day(dir: &std::path::Path, n: i64) -> String {
    sql(dir, &format!("SELECT date('now', '-{n} days')")).trim().to_string()
}

/// The lowest time-ordered id of a moment `n` days and a few hours ago.
fn id_days_ago(dir: &std::path::Path, n: i64) -> String {
    let ms: u64 = sql(dir, &format!("SELECT CAST((julianday('now', '-{n} days', 'start of day', '+6 hours') - 2440587.5) * 86400000 AS INTEGER)")).trim().parse().unwrap();
    format!("{:08x}-{:04x}-7000-8000-{:012x}", ms >> 16, ms & 0xffff, n)
}

fn valid(name: &str, v: &Value) {
    if let Err(e) = document_schemas().validate(&json!({"$ref": format!("#/components/schemas/{name}")}), v) {
        panic!("not a {name}: {:?}\n{v}", e.iter().map(|v| &v.message).collect::<Vec<_>>());
    }
}

fn by_date<'a>(d: &'a Value, date: &str) -> &'a Value {
    d["days"].as_array().unwrap().iter().find(|x| x["date"] == date).unwrap_or_else(|| panic!("no {date} in {d}"))
}

#[test]
fn messages_calls_and_credits_are_counted_per_day() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--carrier-setting", "step-delay-ms=10"]);
    let t = tenant(&dir.0, "all");
    let other = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", PNID]);
    admin(&dir.0, &["voice", "configure", "--business", &t.business, "--lines", "1"]);
    admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", "3000000"]);
    admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", "1000000"]);
    let k = || s.as_key(&t.key);
    let stats = |what: &str, query: &str| k().get(&format!("/api/v1/stats/{what}?businessId={}{query}", t.business));

    // Nothing yet: every day of the period present, with zeros.
    let d = stats("messages", "").assert_ok(200).clone();
    valid("MessageStats", &d);
    assert_eq!((d["days"].as_array().unwrap().len(), d["to"].as_str().unwrap(), d["from"].as_str().unwrap()), (14, day(&dir.0, 0).as_str(), day(&dir.0, 13).as_str()), "{d}");
    assert!(d["days"].as_array().unwrap().iter().all(|x| x["inbound"] == 0 && x["outbound"] == 0) && d["outcomes"] == json!([]), "{d}");

    // Three sent, one received; one sent moved back to yesterday.
    let mut sent = Vec::new();
    for text in ["one", "two", "three"] {
        let r = k().fresh().post("/api/v1/messages", &json!({"businessId": t.business, "phoneNumberId": PNID, "to": "+15550002222", "type": "text", "text": text}));
        sent.push(r.assert_ok(202)["messageId"].as_str().unwrap().to_string());
    }
    admin(&dir.0, &["sandbox", "inbound", "--phone-number-id", PNID, "--from", "+15550003333", "--text", "Hi", "--name", "Ada"]);
    poll("the inbound message", || Some(()).filter(|_| sql(&dir.0, &format!("SELECT count(*) FROM messages WHERE business_id = '{}' AND direction = 'inbound'", t.business)).trim() == "1"));
    write_sql(&dir.0, "UPDATE messages SET created_at = date('now', '-1 days') || 'T09:00:00.000Z' WHERE id = ?", &[&sent[0]]);
    // The figures are read on the node that serves messaging; on the edge
    // target that is a replica node, which pulls what was written at the
    // primary beside it (the inbound message, the moved row) a moment later.
    let (today, yesterday) = (day(&dir.0, 0), day(&dir.0, 1));
    let d = poll("the figures to show the received message and the moved one", || {
        Some(stats("messages", "&days=3").assert_ok(200).clone()).filter(|d| by_date(d, &today)["inbound"] == 1 && by_date(d, &yesterday)["outbound"] == 1)
    });
    valid("MessageStats", &d);
    assert_eq!(d["days"].as_array().unwrap().len(), 3);
    assert_eq!((by_date(&d, &day(&dir.0, 0))["inbound"].clone(), by_date(&d, &day(&dir.0, 0))["outbound"].clone()), (json!(1), json!(2)), "{d}");
    assert_eq!((by_date(&d, &day(&dir.0, 1))["inbound"].clone(), by_date(&d, &day(&dir.0, 1))["outbound"].clone()), (json!(0), json!(1)), "{d}");
    assert_eq!(by_date(&d, &day(&dir.0, 2))["outbound"], 0);
    let outcomes: i64 = d["outcomes"].as_array().unwrap().iter().map(|o| o["count"].as_i64().unwrap()).sum();
    assert_eq!(outcomes, 3, "every message sent in the period, by its status now: {d}");
    // A period of one day leaves yesterday's out.
    let d = stats("messages", "&days=1").assert_ok(200).clone();
    assert_eq!((d["days"].as_array().unwrap().len(), d["days"][0]["outbound"].clone()), (1, json!(2)), "{d}");

    // One call, to its end: counted today with its status and charge.
    let agent = k()
        .fresh()
        .post(
            "/api/v1/agents",
            &json!({"businessId": t.business, "channel": "voice", "name": "Caller", "instructions": "Confirm.",
        "voiceSettings": {"firstGreeting": "Hello, this is Acme calling."}}),
        )
        .assert_ok(201)["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let call = k().fresh().post("/api/v1/voice/calls", &json!({"businessId": t.business, "agentId": agent, "toNumber": "+15550004444"})).assert_ok(202)["callId"].as_str().unwrap().to_string();
    let ended = poll("the call's end", || {
        let r = k().get(&format!("/api/v1/voice/calls/{call}?businessId={}", t.business)).assert_ok(200)["call"].clone();
        Some(r).filter(|c| ["completed", "no_answer", "busy", "failed", "cancelled"].contains(&c["status"].as_str().unwrap()))
    });
    let d = stats("calls", "&days=2").assert_ok(200).clone();
    valid("CallStats", &d);
    let today = by_date(&d, &day(&dir.0, 0));
    assert_eq!((today["calls"].clone(), today["chargedMicrocredits"].clone()), (json!(1), ended["chargedMicrocredits"].clone()), "{d}");
    assert_eq!(today["completed"], json!(i64::from(ended["status"] == "completed")));
    assert_eq!(today["connectedSeconds"].as_i64().unwrap(), sql(&dir.0, &format!("SELECT connected_ms / 1000 FROM calls WHERE id = '{call}'")).trim().parse::<i64>().unwrap());
    assert_eq!(d["outcomes"], json!([{"status": ended["status"], "count": 1}]), "{d}");
    assert_eq!(by_date(&d, &day(&dir.0, 1))["calls"], 0);

    // Credits: the first grant moved back three days (outside a period of
    // two, inside one of four); the balance runs on from it.
    let first = sql(&dir.0, &format!("SELECT id FROM credit_ledger WHERE business_id = '{}' AND kind = 'grant' ORDER BY id LIMIT 1", t.business)).trim().to_string();
    write_sql(&dir.0, "UPDATE credit_ledger SET id = ?, created_at = date('now', '-3 days') || 'T06:00:00.000Z' WHERE id = ?", &[&id_days_ago(&dir.0, 3), &first]);
    let charged = ended["chargedMicrocredits"].as_i64().unwrap();
    // As above: the moved grant reaches a replica node a moment later.
    let three_days_ago = day(&dir.0, 3);
    poll("the figures to show the moved grant", || Some(stats("credits", "&days=4").assert_ok(200).clone()).filter(|d| by_date(d, &three_days_ago)["grantedMicrocredits"] == 3_000_000));
    let d = stats("credits", "&days=2").assert_ok(200).clone();
    valid("CreditStats", &d);
    let (yesterday, today) = (by_date(&d, &day(&dir.0, 1)), by_date(&d, &day(&dir.0, 0)));
    assert_eq!((yesterday["grantedMicrocredits"].clone(), yesterday["balanceMicrocredits"].clone()), (json!(0), json!(3_000_000)), "the balance starts from before the period: {d}");
    assert_eq!(
        (today["grantedMicrocredits"].clone(), today["chargedMicrocredits"].clone(), today["balanceMicrocredits"].clone()),
        (json!(1_000_000), json!(charged), json!(4_000_000 - charged)),
        "{d}"
    );
    let d = stats("credits", "&days=4").assert_ok(200).clone();
    assert_eq!((d["days"][0]["grantedMicrocredits"].clone(), d["days"][0]["balanceMicrocredits"].clone()), (json!(3_000_000), json!(3_000_000)), "{d}");

    // Another business counts its own: nothing.
    let o = || s.as_key(&other.key);
    for what in ["messages", "calls", "credits"] {
        let d = o().get(&format!("/api/v1/stats/{what}?businessId={}", other.business)).assert_ok(200).clone();
        assert!(d["days"].as_array().unwrap().iter().all(|x| x.as_object().unwrap().iter().all(|(k, v)| k == "date" || *v == 0)), "{what}: {d}");
    }
}

#[test]
fn the_period_is_1_to_90_days_and_each_figure_needs_its_scope() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "contacts:read");
    let all = tenant(&dir.0, "all");
    let k = || s.as_key(&all.key);
    for bad in ["0", "91", "seven", "1.5"] {
        for what in ["messages", "calls", "credits"] {
            k().get(&format!("/api/v1/stats/{what}?businessId={}&days={bad}", all.business)).assert_failure(400, "validation");
        }
    }
    assert_eq!(k().get(&format!("/api/v1/stats/calls?businessId={}&days=90", all.business)).assert_ok(200)["days"].as_array().unwrap().len(), 90);
    for (what, scope) in [("messages", "communications:read"), ("calls", "voice:read"), ("credits", "credits:read")] {
        let r = s.as_key(&t.key).get(&format!("/api/v1/stats/{what}?businessId={}", t.business));
        assert_eq!(r.status, 403, "{what}: {}", r.text);
        assert!(r.text.contains(scope), "{what}: {}", r.text);
    }
    // Another business's id is refused like any other operation's.
    let r = k().get(&format!("/api/v1/stats/messages?businessId={}", t.business));
    assert_eq!(r.status, 403, "{}", r.text);
}
