//! The request path every operation shares: authentication, tenancy,
//! scopes, idempotency, validation, limits, the OpenAPI document, restarts.

use crate::harness::*;
use serde_json::json;

fn contact_body(business: &str, mobile: &str, category: &str) -> serde_json::Value {
    json!({"businessId": business, "name": "Ada", "mobile": mobile, "categoryIds": [category]})
}

fn category(s: &Server, t: &Tenant, name: &str) -> String {
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": name}));
    assert!(r.status == 201 || r.status == 200, "{}", r.text);
    r.data()["category"]["id"].as_str().unwrap().to_string()
}

#[test]
fn openapi_document_and_contract_are_public() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let doc = s.req().get("/api/v1/openapi.json");
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
    assert_eq!(doc.body["info"]["version"], "1.7.0");
    let mut ops = 0;
    for (_, item) in doc.body["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            ops += 1;
            assert!(op["operationId"].is_string());
            assert!(op["responses"]["default"].is_object());
            assert!(op["responses"]["4XX"].is_object());
            assert!(op["security"].is_array(), "every operation declares its security, [] when public");
        }
    }
    for (_, item) in doc.body["webhooks"].as_object().unwrap() {
        assert_eq!(item["post"]["security"], json!([]), "sent by the service, authenticated by its signature");
    }
    assert_eq!(
        ops, 80,
        "the contract's 54, ours (the webhook delivery log and redelivery, the console's three agent-test operations, credits, the inbox's five, three daily figures, the campaign admission preview, a photoapp private reply, the team inbox's six, a campaign iteration's recipients, many contacts at once, the business's settings read and changed)"
    );
    assert_eq!(doc.body["components"]["schemas"]["ContactCreate"]["type"], "object");

    let c = s.req().get("/api/v1/contracts/whatsapp-automation");
    let data = c.assert_ok(200);
    assert_eq!(data["contractVersion"], "1.1");
    let events = data["eventTypes"].as_array().unwrap();
    assert_eq!(events.len(), 14);
    assert!(events.contains(&json!("chatapp.message.received")));
    assert!(events.contains(&json!("photoapp.comment.failed")));
}

#[test]
fn authentication_is_required_and_revocation_is_immediate() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let path = format!("/api/v1/contacts?businessId={}", t.business);

    s.req().get(&path).assert_failure(401, "authentication");
    s.as_key("sbk_0000000000000000000000000000000000000000000000000000000000000000").get(&path).assert_failure(401, "authentication");
    s.as_key("not-even-a-key").get(&path).assert_failure(401, "authentication");
    s.as_key(&t.key).get(&path).assert_ok(200);

    // Revoked from the admin CLI while the server runs on the same data dir.
    let listed = s.admin(&["key", "list", "--business", &t.business]);
    assert_eq!(listed["keys"][0]["keyId"], json!(t.key_id));
    assert!(!listed.to_string().contains(&t.key), "the key itself is never listed");
    let unknown = s.as_key("sbk_0000000000000000000000000000000000000000000000000000000000000000").get(&path);
    s.admin(&["key", "revoke", "--key-id", &t.key_id]);
    let r = s.as_key(&t.key).get(&path);
    r.assert_failure(401, "authentication");
    // No oracle: a revoked key is answered exactly like one that never existed.
    assert_eq!((r.code(), r.message()), (unknown.code(), unknown.message()));
    assert!(!r.text.contains("revoked"), "{}", r.text);
}

#[test]
fn business_id_is_required_and_must_be_the_keys() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let a = tenant(&dir.0, "all");
    let b = tenant(&dir.0, "all");

    let r = s.as_key(&a.key).get("/api/v1/contacts");
    r.assert_failure(400, "validation");
    assert_eq!(r.code(), "business_id_required");
    s.as_key(&a.key).get("/api/v1/contacts?businessId=nope").assert_failure(400, "validation");
    let r = s.as_key(&a.key).get(&format!("/api/v1/contacts?businessId={}", b.business));
    r.assert_failure(403, "authorization");
    assert_eq!(r.code(), "business_mismatch");
    // In a body too.
    let r = s.as_key(&a.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": b.business, "name": "x"}));
    r.assert_failure(403, "authorization");
}

#[test]
fn every_scope_of_the_operation_is_required() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "contacts:read");
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "VIP"}));
    r.assert_failure(403, "authorization");
    assert_eq!(r.code(), "missing_scope");
    assert!(r.message().contains("contacts:write"), "{}", r.message());
    // Conditional scope: reading a contact with campaignId also needs communications:read.
    let id = uuid::Uuid::new_v4();
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}&campaignId={id}", t.business));
    assert_eq!(r.code(), "missing_scope");
    assert!(r.message().contains("communications:read"));
    // Without it, the same read is allowed (and the contact simply isn't there).
    s.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business)).assert_failure(404, "not_found");
    // A multi-scope operation names every missing scope.
    let r = s.as_key(&t.key).get(&format!("/api/v1/campaigns/{id}/exports?businessId={}&summaryRunId={id}", t.business));
    assert!(r.message().contains("campaigns:read") && r.message().contains("communications:read"), "{}", r.message());
}

#[test]
fn http_level_errors_use_the_envelope() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let k = s.as_key(&t.key);

    let r = k.get("/api/v1/nothing-here");
    r.assert_failure(404, "not_found");
    let r = k.send("PUT", "/api/v1/contacts", None);
    r.assert_failure(405, "validation");
    assert_eq!(r.code(), "method_not_allowed");
    let r = s.as_key(&t.key).fresh().send("POST", "/api/v1/contacts", Some("{\"businessId\": ".into()));
    r.assert_failure(400, "validation");
    assert_eq!(r.code(), "malformed_json");
    let big = format!("{{\"businessId\":\"{}\",\"csv\":\"{}\"}}", t.business, "a".repeat(11 << 20));
    let r = s.as_key(&t.key).fresh().send("POST", "/api/v1/contacts/imports", Some(big));
    r.assert_failure(413, "validation");
    // A resource that is not there (every contract operation is built: none answers 501).
    let r = s.as_key(&t.key).get(&format!("/api/v1/campaigns/{}/summary-runs?businessId={}", uuid::Uuid::new_v4(), t.business));
    r.assert_failure(404, "not_found");
    assert_eq!(r.code(), "campaign_not_found");
    // A path parameter that is not a uuid.
    k.get(&format!("/api/v1/contacts/abc/timeline?businessId={}", t.business)).assert_failure(400, "validation");
    // 405 lists exactly the methods of that path.
    let r = reqwest::blocking::Client::new().put(format!("{}/api/v1/contacts/categories", s.base)).bearer_auth(&t.key).send().unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "GET, POST, DELETE");
}

#[test]
fn validation_names_the_field_and_rule() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let cat = category(&s, &t, "Leads");
    let post = |body: serde_json::Value| s.as_key(&t.key).fresh().post("/api/v1/contacts", &body);

    let mut b = contact_body(&t.business, "+447700900123", &cat);
    b["nickname"] = json!("x");
    let r = post(b);
    r.assert_failure(400, "validation");
    assert!(r.message().contains("unknown property `nickname`"), "{}", r.message());
    assert_eq!(r.body["error"]["details"][0]["field"], "nickname");

    let r = post(contact_body(&t.business, "07700 900123", &cat));
    assert_eq!(r.body["error"]["details"][0]["field"], "mobile");
    assert_eq!(r.body["error"]["details"][0]["rule"], "pattern");

    let mut b = contact_body(&t.business, "+447700900123", &cat);
    b["categoryIds"] = json!([]);
    let r = post(b);
    assert_eq!(r.body["error"]["details"][0]["field"], "categoryIds");
    assert_eq!(r.body["error"]["details"][0]["rule"], "minItems");

    let mut b = contact_body(&t.business, "+447700900123", &cat);
    b["categoryIds"] = json!([cat, cat]);
    let r = post(b);
    assert_eq!(r.body["error"]["details"][0]["rule"], "uniqueItems");

    let mut b = contact_body(&t.business, "+447700900123", &cat);
    b.as_object_mut().unwrap().remove("name");
    let r = post(b);
    assert!(r.message().contains("`name` is required"), "{}", r.message());

    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&limit=0", t.business));
    r.assert_failure(400, "validation");
    assert!(r.message().contains("limit"), "{}", r.message());
}

#[test]
fn idempotency_replays_conflicts_and_rejects_bad_keys() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let cat = category(&s, &t, "Leads");
    let body = contact_body(&t.business, "+447700900001", &cat);

    let first = s.as_key(&t.key).idem("create-ada-1").post("/api/v1/contacts", &body);
    let id = first.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
    // Same key, same body with other key order and spacing: the original answer.
    let reordered = format!("{{ \"categoryIds\": [\"{cat}\"],\n \"mobile\": \"+447700900001\", \"name\": \"Ada\", \"businessId\": \"{}\" }}", t.business);
    let again = s.as_key(&t.key).idem("create-ada-1").send("POST", "/api/v1/contacts", Some(reordered));
    assert_eq!(again.status, 201);
    assert!(again.replayed);
    assert_eq!(again.body, first.body, "the replay is the original body");
    // Same key, different body.
    let mut other = body.clone();
    other["name"] = json!("Grace");
    let r = s.as_key(&t.key).idem("create-ada-1").post("/api/v1/contacts", &other);
    r.assert_failure(409, "conflict");
    assert_eq!(r.code(), "idempotency_key_conflict");
    // Missing and malformed keys are rejected before anything happens.
    let fresh = contact_body(&t.business, "+447700900002", &cat);
    let r = s.as_key(&t.key).post("/api/v1/contacts", &fresh);
    r.assert_failure(400, "validation");
    assert_eq!(r.code(), "idempotency_key_required");
    for bad in ["has space", &"k".repeat(513), "tab\tkey"] {
        let r = s.as_key(&t.key).idem(bad).post("/api/v1/contacts", &fresh);
        r.assert_failure(400, "validation");
        assert_eq!(r.code(), "invalid_idempotency_key", "{bad:?}");
    }
    // The allowed punctuation, and exactly 512 characters, are fine.
    let ok_key = format!("a/b#c|d=e_f:g-h.{}", "x".repeat(512 - 16));
    s.as_key(&t.key).idem(&ok_key).post("/api/v1/contacts", &fresh).assert_ok(201);
    // Nothing was created by the rejected attempts: exactly two contacts.
    let list = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business));
    assert_eq!(list.data()["contacts"].as_array().unwrap().len(), 2);
    assert!(list.data()["contacts"].as_array().unwrap().iter().any(|c| c["id"] == json!(id)));
    // A key is scoped to its business: another business may use the same key text.
    let u = tenant(&dir.0, "all");
    let ucat = category(&s, &u, "Leads");
    s.as_key(&u.key).idem("create-ada-1").post("/api/v1/contacts", &contact_body(&u.business, "+447700900001", &ucat)).assert_ok(201);
}

#[test]
fn fifty_parallel_identical_requests_create_one_contact() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let cat = category(&s, &t, "Leads");
    let body = contact_body(&t.business, "+447700900777", &cat);
    let results: Vec<Resp> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..50).map(|_| scope.spawn(|| s.as_key(&t.key).idem("same-key-50").post("/api/v1/contacts", &body))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ids: std::collections::HashSet<String> = results
        .iter()
        .map(|r| {
            assert_eq!(r.status, 201, "{}", r.text);
            r.data()["contact"]["id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(ids.len(), 1, "every answer names the same contact");
    assert_eq!(results.iter().filter(|r| !r.replayed).count(), 1, "exactly one execution");
    let list = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business));
    assert_eq!(list.data()["contacts"].as_array().unwrap().len(), 1);
}

#[test]
fn data_and_idempotency_records_survive_a_restart() {
    let dir = DataDir::new();
    let t;
    let first;
    let body;
    {
        let mut s = Server::start(&dir.0);
        t = tenant(&dir.0, "all");
        let cat = category(&s, &t, "Leads");
        body = contact_body(&t.business, "+447700900555", &cat);
        first = s.as_key(&t.key).idem("before-restart").post("/api/v1/contacts", &body);
        first.assert_ok(201);
        assert!(s.terminate().success(), "graceful exit on SIGTERM");
    }
    // A graceful stop gives the dispatcher lease up (every database's: the
    // business has one of its own): the next server on this data runs jobs
    // at once instead of waiting for the lease to run out.
    assert_eq!(sql(&dir.0, "SELECT MAX(expires_at_ms) FROM leases WHERE name = 'dispatcher'").trim(), "0");
    let s = Server::start(&dir.0);
    let id = first.data()["contact"]["id"].as_str().unwrap();
    let read = s.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business));
    assert_eq!(read.assert_ok(200)["contact"]["mobile"], "+447700900555");
    let replay = s.as_key(&t.key).idem("before-restart").post("/api/v1/contacts", &body);
    assert!(replay.replayed);
    assert_eq!(replay.body, first.body);
}

#[test]
fn a_newer_database_is_refused() {
    let dir = DataDir::new();
    {
        let _s = Server::start(&dir.0);
    }
    // Pretend a newer binary applied a migration this one does not know.
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"INSERT INTO schema_migrations VALUES ('9999_future.sql', 'now')\"); c.commit()")
        .arg(dir.0.join("switchboard.db"))
        .status()
        .unwrap();
    assert!(out.success());
    let out = std::process::Command::new(BIN).args(["serve", "--listen", "127.0.0.1:0", "--data-dir"]).arg(&dir.0).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("newer Switchboard") && err.contains("9999_future.sql"), "{err}");
}

#[test]
fn sigterm_lets_an_in_flight_request_finish() {
    let dir = DataDir::new();
    let mut s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let cat = category(&s, &t, "Bulk");
    let mut csv = String::from("mobile,name\n");
    for i in 0..60_000 {
        csv.push_str(&format!("+1555{:07},Person {i}\n", i));
    }
    let body = json!({"businessId": t.business, "categoryIds": [cat], "csv": csv});
    let resp = std::thread::scope(|scope| {
        let h = scope.spawn(|| s.as_key(&t.key).fresh().post("/api/v1/contacts/imports", &body));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let pid = s.child.id();
        let _ = std::process::Command::new("kill").arg("-TERM").arg(pid.to_string()).status();
        h.join().unwrap()
    });
    let data = resp.assert_ok(200);
    assert_eq!(data["created"], 60_000);
    assert!(s.terminate().success());
}

#[test]
fn without_a_valid_key_every_path_answers_401_before_its_syntax_is_checked() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let path = format!("/api/v1/contacts/not-a-uuid?businessId={}", t.business);
    // No key, or a wrong one: 401, not a hint about the path.
    s.req().get(&path).assert_failure(401, "authentication");
    s.as_key("sbk_0000000000000000000000000000000000000000000000000000000000000000").get(&path).assert_failure(401, "authentication");
    // With a valid key the path parameter's syntax is checked.
    let r = s.as_key(&t.key).get(&path);
    r.assert_failure(400, "validation");
    assert_eq!(r.code(), "invalid_path_parameter");
}

#[test]
fn a_replay_names_the_first_attempt_in_its_body_and_itself_in_its_header() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let body = json!({"businessId": t.business, "name": "Replayed"});
    let first = s.as_key(&t.key).idem("replay-ids").post("/api/v1/contacts/categories", &body);
    first.assert_ok(201);
    let first_id = first.request_id.clone().unwrap();
    assert_eq!(first.body["meta"]["requestId"], first_id.as_str(), "a first answer's header and body agree");
    let again = s.as_key(&t.key).idem("replay-ids").post("/api/v1/contacts/categories", &body);
    assert!(again.replayed);
    assert_eq!(again.body, first.body, "the original body, byte for byte in meaning");
    assert_eq!(again.body["meta"]["requestId"], first_id.as_str(), "the body names the attempt that made the change");
    assert_ne!(again.request_id.as_deref(), Some(first_id.as_str()), "the header names the replay");
}

#[test]
fn health_probes_need_no_key_and_readiness_follows_storage() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    for path in ["/healthz", "/readyz"] {
        let r = s.req().get(path);
        assert_eq!(r.assert_ok(200)["status"], "ok", "{path}");
    }
    // Another process holds the database's write lock: not ready (503,
    // retryable, naming storage), while the process itself is alive.
    let mut holder = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(8)")
        .arg(dir.0.join("switchboard.db"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    let r = s.req().get("/readyz");
    r.assert_failure(503, "capacity");
    assert_eq!(r.code(), "not_ready");
    assert_eq!(r.body["error"]["retryable"], true);
    assert!(r.message().contains("storage"), "{}", r.text);
    assert_eq!(s.req().get("/healthz").status, 200);
    // Once the lock is gone, ready again.
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(s.req().get("/readyz").assert_ok(200)["status"], "ok");
}

#[test]
fn metrics_count_requests_and_job_steps_without_tenant_data() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).assert_ok(200);
    assert_eq!(s.req().get(&format!("/api/v1/contacts?businessId={}", t.business)).status, 401);
    s.admin(&["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-metrics"]);
    s.admin(&["sandbox", "inbound", "--phone-number-id", "pn-metrics", "--from", "+15550001111", "--text", "hello", "--name", "Ada"]);

    // The inbound message is a job; its step shows up once it ran.
    let started = std::time::Instant::now();
    let text = loop {
        let r = s.req().get("/metrics");
        assert_eq!(r.status, 200);
        if r.text.contains(r#"switchboard_job_steps_total{kind="messaging.inbound",outcome="done"} 1"#) || started.elapsed().as_secs() > 30 {
            break r.text;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(text.contains(r#"switchboard_job_steps_total{kind="messaging.inbound",outcome="done"} 1"#), "{text}");
    assert!(text.contains(r#"switchboard_requests_total{operation="listContacts",status="200"} 1"#), "{text}");
    assert!(text.contains(r#"status="401""#), "{text}");
    assert!(text.contains("switchboard_request_duration_seconds_bucket{operation=\"listContacts\""), "{text}");
    assert!(text.contains("switchboard_write_gate_wait_seconds_count{outcome=\"taken\"}"), "{text}");
    assert!(text.contains("switchboard_ingestion_rows 0"), "{text}");
    // Nothing that names a tenant, a key or a number.
    for secret in [t.business.as_str(), t.key.as_str(), t.key_id.as_str(), "15550001111", "pn-metrics"] {
        assert!(!text.contains(secret), "{secret} in metrics");
    }
}

/// `--metrics-listen` moves /metrics off the public listener; webhook
/// attempts are counted by outcome and ingestion rows are shown.
#[test]
fn metrics_on_their_own_listener_with_webhook_outcomes_and_ingestion_rows() {
    let dir = DataDir::new();
    let port = free_port();
    let s = Server::start_with(&dir.0, &["--metrics-listen", &format!("127.0.0.1:{port}"), "--webhook-retry-delays-ms", "100"]);
    let t = tenant(&dir.0, "all");
    assert_eq!(s.req().get("/metrics").status, 404, "not on the public listener");
    let scrape = || reqwest::blocking::get(format!("http://127.0.0.1:{port}/metrics")).unwrap().text().unwrap();
    assert!(scrape().contains("switchboard_requests_total"));
    assert_eq!(reqwest::blocking::get(format!("http://127.0.0.1:{port}/api/v1/openapi.json")).unwrap().status(), 404, "only /metrics there");

    // A webhook answered 500 then 200; a data source of three rows.
    s.admin(&["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-m2"]);
    let rx = Receiver::start();
    rx.script(vec![Reply::Status(500)]);
    s.as_key(&t.key)
        .post(
            "/api/v1/webhook-subscriptions",
            &json!({"businessId": t.business, "channel": "chatapp", "phoneNumberId": "pn-m2",
        "callbackUrl": rx.url(), "events": ["chatapp.message.received"], "externalAutomation": true}),
        )
        .assert_ok(201);
    s.admin(&["sandbox", "inbound", "--phone-number-id", "pn-m2", "--from", "+15550002222", "--text", "hi"]);
    rx.wait_for(2);
    let src = s.as_key(&t.key).fresh().post("/api/v1/data-sources", &json!({"businessId": t.business, "name": "P", "class": "structured", "kind": "table"}));
    let src = src.assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
    s.as_key(&t.key)
        .fresh()
        .post(
            "/api/v1/data-sources/upload",
            &json!({"businessId": t.business, "dataSourceId": src, "fileName": "p.csv",
        "format": "csv", "contentBase64": b64(b"sku,price\nA,1\nB,2\nC,3\n")}),
        )
        .assert_ok(202);
    let text = poll("webhook outcomes and ingestion rows", || {
        let text = scrape();
        (text.contains("switchboard_webhook_attempts_total{outcome=\"5xx\"} 1")
            && text.contains("switchboard_webhook_attempts_total{outcome=\"2xx\"} 1")
            && text.contains("switchboard_ingestion_rows 3"))
        .then_some(text)
    });
    assert!(text.contains("switchboard_webhook_attempt_duration_seconds_count 2"), "{text}");
}

#[test]
fn text_with_a_nul_character_is_refused_never_shortened() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "ab\u{0}cd"}));
    r.assert_failure(400, "validation");
    assert_eq!(r.code(), "nul_character");
    assert!(r.message().contains("`name`"), "{}", r.text);
    // Nothing was stored under a shortened name.
    let listed = s.as_key(&t.key).get(&format!("/api/v1/contacts/categories?businessId={}", t.business));
    assert_eq!(listed.assert_ok(200)["categories"], json!([]));
    // Nested fields and query parameters alike.
    let cat = category(&s, &t, "Plain");
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Ada", "mobile": "+15550009999", "categoryIds": [cat], "fields": {"note": "x\u{0}y"}}));
    assert_eq!((r.status, r.code()), (400, "nul_character"), "{}", r.text);
    assert!(r.message().contains("`fields.note`"), "{}", r.text);
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search=%00", t.business));
    assert_eq!((r.status, r.code()), (400, "nul_character"), "{}", r.text);
}

/// Issue 38: a request's component instance is reused for the same
/// business's next request (no instantiation, no memory reset), never for
/// another business's: a second business's first call gets a fresh one.
#[test]
fn instances_are_reused_within_a_business_only() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let a = tenant(&dir.0, "all");
    let b = tenant(&dir.0, "all");
    let metric = |origin: &str| s.metric(&format!("switchboard_component_instances_total{{origin=\"{origin}\"}}"));
    let list = |t: &Tenant| s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).assert_ok(200).clone();
    list(&a);
    list(&a);
    let (warm, fresh) = (metric("warm"), metric("fresh"));
    assert!(warm >= 1.0, "the same business's second read reuses the first's instance ({warm} warm, {fresh} fresh)");
    // B's first read: a fresh instance, although A's is idle.
    list(&b);
    assert_eq!((metric("warm"), metric("fresh")), (warm, fresh + 1.0), "another business never gets A's instance");
    // B's second read reuses B's own.
    list(&b);
    assert_eq!((metric("warm"), metric("fresh")), (warm + 1.0, fresh + 1.0));
    // Each answers its own data: a contact made by A is not in B's list.
    let cat = category(&s, &a, "Regulars");
    s.as_key(&a.key).fresh().post("/api/v1/contacts", &contact_body(&a.business, "+15550100001", &cat)).assert_ok(201);
    assert_eq!(list(&a)["contacts"].as_array().unwrap().len(), 1);
    assert_eq!(list(&b)["contacts"].as_array().unwrap().len(), 0);
}
