//! Moving a business between databases while its clients write
//! (`admin business move`, issue 47): nothing acknowledged is lost or
//! made twice, keys replay after the move, jobs move with the business, a
//! killed move resumes, the old database keeps nothing and refuses the
//! business's writes, and a node started before the move follows it.

use crate::databases::{sql_file, tenant_in, two_servers};
use crate::harness::*;
use crate::primary::Sqld;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn category(s: &Server, t: &Tenant) -> String {
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Moved"}));
    r.data()["category"]["id"].as_str().expect("a category").to_string()
}

/// Creates contacts one after another, each with its own key, retrying a
/// 503 (the move's fence) with the same key until it is answered 201;
/// `(mobile, contact id)` of every acknowledged create.
fn writer(base: String, t: Tenant, cat: String, stop: Arc<AtomicBool>, acked: Arc<Mutex<Vec<(String, String)>>>, refused: Arc<Mutex<u32>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        for i in 0.. {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            let mobile = format!("+4477009{:05}", 50_000 + i);
            let body = json!({"businessId": t.business, "name": "During", "mobile": mobile, "categoryIds": [cat]});
            let started = Instant::now();
            loop {
                let r = http.post(format!("{base}/api/v1/contacts")).bearer_auth(&t.key).header("Idempotency-Key", format!("during-{i}")).json(&body).send().unwrap();
                let status = r.status().as_u16();
                let v: Value = r.json().unwrap();
                if status == 201 {
                    acked.lock().unwrap().push((mobile.clone(), v["data"]["contact"]["id"].as_str().unwrap().to_string()));
                    // Well under the key's rate limit.
                    std::thread::sleep(Duration::from_millis(15));
                    break;
                }
                assert_eq!(status, 503, "only the move's retryable refusal: {v}");
                assert_eq!(v["error"]["retryable"], true);
                *refused.lock().unwrap() += 1;
                assert!(started.elapsed() < Duration::from_secs(20), "a write waited more than 20 s for the move");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    })
}

/// `admin business move`, as a process of its own.
fn mover(dir: &Path, business: &str, to: &str) -> std::process::Child {
    let mut command = Command::new(BIN);
    command.arg("admin").arg("--data-dir").arg(dir).env("SWITCHBOARD_SETTINGS_KEY", SETTINGS_KEY);
    if let Some(url) = primary_of(dir) {
        command.arg("--primary-url").arg(url);
    }
    command.args(["business", "move", "--business", business, "--to", to]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

#[test]
fn a_business_moves_under_writes_and_a_killed_move_resumes_losing_nothing() {
    if edge_target() {
        return;
    }
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    admin(&dir.0, &["database", "add", "--name", "second", "--url", "local"]);
    let t = tenant_in(&dir.0, Some("main")).0;
    let other = tenant_in(&dir.0, Some("main")).0;
    let cat = category(&s, &t);
    // Enough rows that the copy takes a while: 100,000 imported contacts.
    let mut csv = String::from("mobile,name,city\n");
    for i in 0..100_000 {
        csv.push_str(&format!("+4477001{i:05},Imported {i},Leeds\n"));
    }
    s.as_key(&t.key).idem("import-1").post("/api/v1/contacts/imports", &json!({"businessId": t.business, "categoryIds": [cat], "csv": csv})).assert_ok(200);
    let before = s.as_key(&t.key).idem("before").post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Before", "mobile": "+447700900001", "categoryIds": [cat]})).assert_ok(201).clone();
    // Jobs that move with the business: a message on its way.
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-moving"]);
    let msg = s
        .as_key(&t.key)
        .idem("msg-1")
        .post("/api/v1/messages", &json!({"businessId": t.business, "phoneNumberId": "pn-moving", "to": "+447700900002", "type": "text", "text": "Hello"}))
        .assert_ok(202)["messageId"]
        .as_str()
        .unwrap()
        .to_string();

    let (stop, acked, refused) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(0u32)));
    let writing = writer(s.base.clone(), Tenant { business: t.business.clone(), key: t.key.clone(), key_id: String::new() }, cat.clone(), stop.clone(), acked.clone(), refused.clone());
    std::thread::sleep(Duration::from_millis(300));

    // The first move is killed (-9) in its copy: once the target shows
    // some of the business's rows (the copy of 100,000 contacts and their
    // categories takes many transactions).
    let main_file = dir.0.join("switchboard.db");
    let second = dir.0.join("databases/second/switchboard.db");
    let mut first = mover(&dir.0, &t.business, "second");
    let phase = || sql_file(&main_file, &format!("SELECT phase FROM business_moves WHERE business_id = '{}'", t.business));
    poll_within("the move in its copy", Duration::from_secs(60), || {
        if let Some(status) = first.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(first.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("the move ended before it was killed ({status}): {err}");
        }
        let copied = sql_file(&second, &format!("SELECT COUNT(*) FROM contact_categories WHERE business_id = '{}'", t.business));
        (copied != "0").then_some(())
    });
    let _ = first.kill();
    let _ = first.wait();
    assert_eq!(phase(), "fenced", "the killed move stopped in its copy");
    // Killed mid-way: still placed at main, writes refused (retryable).
    assert_eq!(sql_file(&main_file, &format!("SELECT database FROM businesses WHERE id = '{}'", t.business)), "main");
    // Another business of main writes on.
    s.as_key(&other.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": other.business, "name": "Unmoved"})).assert_ok(201);
    // Run again: it resumes and finishes.
    let out = mover(&dir.0, &t.business, "second").wait_with_output().unwrap();
    assert!(out.status.success(), "the resumed move failed: {}", String::from_utf8_lossy(&out.stderr));
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((done["database"].as_str(), done["moved"].as_bool()), (Some("second"), Some(true)), "{done}");
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::SeqCst);
    writing.join().unwrap();

    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 5, "the writer went on: {} creates", acked.len());
    assert!(*refused.lock().unwrap() > 0, "writes were refused while the business moved");
    let count = |file: &Path, q: &str| sql_file(file, &q.replace("{b}", &t.business)).parse::<i64>().unwrap();
    // Every acknowledged write is at the target, once; nothing is left at main.
    // The import's, "Before", the message's recipient and the writer's.
    let total = 100_002 + acked.len() as i64;
    assert_eq!(count(&second, "SELECT COUNT(*) FROM contacts WHERE business_id = '{b}'"), total);
    for (mobile, id) in &acked {
        assert_eq!(sql_file(&second, &format!("SELECT id FROM contacts WHERE business_id = '{}' AND mobile = '{mobile}'", t.business)), *id);
    }
    for table in ["contacts", "contact_categories", "categories", "idempotency_records", "jobs", "messages", "conversations", "data_sources", "timeline_entries"] {
        assert_eq!(count(&main_file, &format!("SELECT COUNT(*) FROM {table} WHERE business_id = '{{b}}'")), 0, "{table} left at main");
    }
    assert_eq!(count(&main_file, "SELECT COUNT(*) FROM api_keys WHERE business_id = '{b}'"), 1, "keys stay in main");
    // Keys used before the move replay after it.
    let again = s.as_key(&t.key).idem("before").post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Before", "mobile": "+447700900001", "categoryIds": [cat]}));
    assert_eq!(again.assert_ok(201), &before);
    let (mobile, id) = &acked[0];
    let replay = s.as_key(&t.key).idem("during-0").post("/api/v1/contacts", &json!({"businessId": t.business, "name": "During", "mobile": mobile, "categoryIds": [cat]}));
    assert_eq!(replay.assert_ok(201)["contact"]["id"], json!(id));
    // The message's job moved with the business and finished there.
    poll_within("the moved message read", Duration::from_secs(60), || {
        let r = s.as_key(&t.key).get(&format!("/api/v1/messages/{msg}?businessId={}", t.business));
        (r.status == 200 && r.data()["status"] == "read").then_some(())
    });
    // Reads and writes go to the target; the old database refuses the
    // business's rows (the tombstone's triggers).
    s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search=%2B447700900001", t.business)).assert_ok(200);
    let refused_insert = Command::new("python3")
        .arg("-c")
        .arg("import sqlite3,sys\nc=sqlite3.connect(sys.argv[1])\ntry:\n  c.execute(\"INSERT INTO categories (id, business_id, name, created_at) VALUES ('x', ?, 'stale', '')\", (sys.argv[2],)); c.commit(); print('written')\nexcept Exception as e: print(e)")
        .arg(&main_file)
        .arg(&t.business)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&refused_insert.stdout).trim(), "business_moving");
    let listed = admin(&dir.0, &["database", "list"]);
    assert_eq!(listed["databases"][1]["businesses"], 1, "{listed}");
    // And back again.
    let back = admin(&dir.0, &["business", "move", "--business", &t.business, "--to", "main"]);
    assert_eq!(back["database"], "main");
    assert_eq!(count(&main_file, "SELECT COUNT(*) FROM contacts WHERE business_id = '{b}'"), total);
    assert_eq!(count(&second, "SELECT COUNT(*) FROM contacts WHERE business_id = '{b}'"), 0);
    // The server still placed it at second: one retryable refusal there,
    // then the write lands at main.
    let home = json!({"businessId": t.business, "name": "Home", "mobile": "+447700900003", "categoryIds": [cat]});
    let r = s.as_key(&t.key).idem("home").post("/api/v1/contacts", &home);
    if r.status == 503 {
        assert_eq!(r.code(), "business_moving");
        s.as_key(&t.key).idem("home").post("/api/v1/contacts", &home).assert_ok(201);
    } else {
        r.assert_ok(201);
    }
    assert_eq!(count(&main_file, "SELECT COUNT(*) FROM contacts WHERE business_id = '{b}'"), total + 1);
}

#[test]
fn a_node_started_before_a_move_follows_it_and_the_old_server_refuses_the_business() {
    if edge_target() {
        return;
    }
    let (first, second, admin_dir) = two_servers();
    let t = tenant_in(&admin_dir.0, Some("main")).0;
    let node_dir = DataDir::new();
    let s = Server::start_with(&node_dir.0, &["--primary-url", &first.url, "--sync-interval-ms", "200"]);
    poll("the key on the node", || (s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).status == 200).then_some(()));
    let cat = category(&s, &t);
    let made = s.as_key(&t.key).idem("c-1").post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Ada", "mobile": "+447700900001", "categoryIds": [cat]})).assert_ok(201).clone();
    let id = made["contact"]["id"].as_str().unwrap().to_string();

    // Moved by another process: the node still holds the old placement.
    let moved = admin(&admin_dir.0, &["business", "move", "--business", &t.business, "--to", "second"]);
    assert_eq!(moved["database"], "second");
    // Its next write is refused at the old database at most once (503,
    // retryable), then lands at the new one; a read follows too.
    let mut refusals = 0;
    let r = loop {
        let r = s.as_key(&t.key).idem("c-2").post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Bea", "mobile": "+447700900002", "categoryIds": [cat]}));
        if r.status != 503 {
            break r;
        }
        assert_eq!(r.code(), "business_moving");
        refusals += 1;
        assert!(refusals < 50, "the node never followed the move");
        std::thread::sleep(Duration::from_millis(100));
    };
    r.assert_ok(201);
    poll("the read follows the move", || (s.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business)).status == 200).then_some(()));
    let contacts = |at: &Sqld| at.count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", t.business));
    assert_eq!((contacts(&first), contacts(&second)), (0, 2));
    // The replay of a key used before the move answers from the moved record.
    assert_eq!(s.as_key(&t.key).idem("c-1").post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Ada", "mobile": "+447700900001", "categoryIds": [cat]})).assert_ok(201), &made);
    // A stale writer at the old server is refused by the database itself.
    let body = json!({"requests": [{"type": "execute", "stmt": {"sql": format!("INSERT INTO categories (id, business_id, name, created_at) VALUES ('x', '{}', 'stale', '')", t.business)}}, {"type": "close"}]});
    let answer: Value = reqwest::blocking::Client::new().post(format!("{}/v2/pipeline", first.url)).json(&body).send().unwrap().json().unwrap();
    assert_eq!(answer["results"][0]["type"], "error", "{answer}");
    assert!(answer["results"][0]["error"]["message"].as_str().unwrap_or_default().contains("business_moving"), "{answer}");
    // Revoking its key (at main) still works for the moved business.
    admin(&admin_dir.0, &["key", "revoke", "--key-id", &t.key_id]);
    poll("the revocation seen", || (s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).status == 401).then_some(()));
}
