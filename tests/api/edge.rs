//! The edge build (issue 17): the router and its storage half composed with
//! `wac plug`, run by `wasmtime serve` (a runtime we did not write) next to
//! a real sqld primary and one native `switchboard serve` node that holds
//! the dispatcher lease. [`start`] is also what every API test gets with
//! `SWITCHBOARD_TEST_EDGE=1` (`./dev test` runs the foundation's tests that
//! way); the tests here are the edge's own.

use crate::harness::*;
use crate::primary::Sqld;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// How often the dispatcher node pulls the primary's changes.
const SYNC_MS: &str = "200";
/// The edge's own deadline, below the runtime's limit (`TIMEOUT`).
const DEADLINE_MS: &str = "8000";
/// The instance bounds every edge node of the tests runs with.
const MAX_MEMORY: &str = "max-memory-size=134217728";
const TIMEOUT: &str = "timeout=10s";

/// `wasmtime` and `wac`, installed by tests/edge/ensure.sh when missing.
fn tools() -> &'static PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/edge/ensure.sh");
        let status = Command::new("bash").arg(script).stdout(Stdio::null()).status().expect("bash");
        assert!(status.success(), "tests/edge/ensure.sh could not install wasmtime-cli and wac-cli");
        let home = std::env::var("CARGO_HOME").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
        home.join("bin")
    })
}

/// The edge component: `wac plug` of the router with its storage half (once
/// per test run), the same command `./dev edge` runs.
pub fn component() -> &'static PathBuf {
    static WASM: OnceLock<PathBuf> = OnceLock::new();
    WASM.get_or_init(|| {
        let out = std::env::temp_dir().join(format!("switchboard-edge-{}.wasm", std::process::id()));
        let status = Command::new(tools().join("wac")).args(["plug", env!("SWITCHBOARD_EDGE_WASM"), "--plug", env!("SWITCHBOARD_EDGE_STORE_WASM"), "-o"]).arg(&out).status().expect("wac");
        assert!(status.success(), "wac plug failed");
        out
    })
}

/// `wasmtime serve` of the edge component on the primary at `url`.
pub fn edge_node(url: &str, dir: &Path, env: &[(&str, &str)]) -> Server {
    let port = free_port();
    let log = std::fs::File::create(dir.join("edge.log")).unwrap();
    let mut command = Command::new(tools().join("wasmtime"));
    command.args(["serve", "--addr", &format!("127.0.0.1:{port}"), "-S", "cli", "-W", MAX_MEMORY, "-W", TIMEOUT, "--env", &format!("SWITCHBOARD_PRIMARY_URL={url}")]);
    for (k, v) in env {
        command.args(["--env", &format!("{k}={v}")]);
    }
    let child = command.arg(component()).stdout(Stdio::null()).stderr(log).spawn().expect("start wasmtime serve");
    Server::attach(child, format!("http://127.0.0.1:{port}"), dir)
}

/// An edge node for an API test: a fresh sqld, a native node on it with
/// `extra` (it migrates the primary, runs the dispatcher and is the edge's
/// write node), and the edge node the test talks to. `dir` is the test's data dir: admin commands and
/// `sql()` on it go to the primary.
pub fn start(dir: &Path, extra: &[&str]) -> Server {
    let primary = Sqld::start();
    let node_dir = DataDir::new();
    let mut args = vec!["--primary-url", primary.url.as_str(), "--sync-interval-ms", SYNC_MS];
    args.extend_from_slice(extra);
    let node = Server::start_logged(&node_dir.0, &args, &dir.join("dispatcher.log"));
    std::fs::write(dir.join(PRIMARY_MARKER), &primary.url).unwrap();
    // Mutations go to the node; reads run at the edge (at the primary), so
    // the tests run the edge's own read path, and a write made by an admin
    // command is read at once.
    let mut edge = edge_node(
        &primary.url,
        dir,
        &[("SWITCHBOARD_EDGE_FAULT_ROUTES", "1"), ("SWITCHBOARD_WRITE_NODE", node.base.as_str()), ("SWITCHBOARD_EDGE_READS", "primary"), ("SWITCHBOARD_EDGE_DEADLINE_MS", DEADLINE_MS)],
    );
    // Dropped in this order: the edge node (by Server's drop), the native
    // node, its data dir, the primary.
    edge.companions.push(Box::new(node));
    edge.companions.push(Box::new(node_dir));
    edge.companions.push(Box::new(primary));
    edge
}

fn contact(t: &Tenant, category: &str, mobile: &str) -> Value {
    json!({"businessId": t.business, "name": format!("Person {mobile}"), "mobile": mobile, "categoryIds": [category]})
}

fn category(s: &Server, t: &Tenant) -> String {
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"}));
    r.assert_ok(201)["category"]["id"].as_str().unwrap().to_string()
}

#[test]
fn a_panic_or_running_out_of_memory_answers_the_envelope_and_the_next_request_is_unaffected() {
    let dir = DataDir::new();
    let edge = start(&dir.0, &[]);
    let t = tenant(&dir.0, "all");
    let cat = category(&edge, &t);
    for fault in ["panic", "memory"] {
        let r = edge.req().get(&format!("/__edge/fault/{fault}"));
        r.assert_failure(500, "internal");
        assert!(!r.header("x-request-id").is_empty());
        assert_eq!(r.body["meta"]["requestId"], json!(r.header("x-request-id")));
        // The next request runs in a fresh instance.
        edge.as_key(&t.key).fresh().post("/api/v1/contacts", &contact(&t, &cat, &format!("+1555000{}", if fault == "panic" { "0001" } else { "0002" }))).assert_ok(201);
    }
    // A request that runs past the runtime's time limit is stopped (by
    // wasmtime serve, without our envelope: no guest code runs after it),
    // and the node goes on serving.
    let started = std::time::Instant::now();
    let r = edge.req().send("GET", "/__edge/fault/spin", None);
    assert!(r.status >= 500 || r.status == 0, "{} {}", r.status, r.text);
    assert!(started.elapsed() < Duration::from_secs(30));
    let list = edge.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business));
    assert_eq!(list.assert_ok(200)["contacts"].as_array().unwrap().len(), 2);
    // Without the setting the fault routes do not exist.
    let plain = edge_node(&primary_of(&dir.0).unwrap(), &dir.0, &[]);
    plain.req().get("/__edge/fault/panic").assert_failure(404, "not_found");
}

#[test]
fn one_idempotency_key_sent_to_an_edge_node_and_a_native_node_at_once_executes_once() {
    let dir = DataDir::new();
    let edge = start(&dir.0, &[]);
    let node: &Server = edge.companions[0].downcast_ref().unwrap();
    let t = tenant(&dir.0, "all");
    let cat = category(&edge, &t);
    poll("the key on the native node", || (node.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).status == 200).then_some(()));
    for round in 0..5 {
        let key = format!("edge-and-node-{round}");
        let body = contact(&t, &cat, &format!("+1555010{round:04}"));
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| edge.as_key(&t.key).idem(&key).post("/api/v1/contacts", &body));
            let b = s.spawn(|| node.as_key(&t.key).idem(&key).post("/api/v1/contacts", &body));
            (a.join().unwrap(), b.join().unwrap())
        });
        a.assert_ok(201);
        b.assert_ok(201);
        assert_eq!(a.data()["contact"]["id"], b.data()["contact"]["id"], "round {round}");
        let replayed = [&a, &b].iter().filter(|r| r.header("idempotent-replayed") == "true").count();
        assert_eq!(replayed, 1, "round {round}: exactly one executed");
    }
    let n = sql(&dir.0, &format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", t.business));
    assert_eq!(n.trim(), "5");
}

#[test]
fn a_subscription_made_at_the_edge_is_delivered_by_the_dispatcher_node() {
    let dir = DataDir::new();
    let edge = start(&dir.0, &["--webhook-retry-delays-ms", "100,150,200", "--webhook-timeout-ms", "2000"]);
    let url = primary_of(&dir.0).unwrap();
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-edge"]);
    let receiver = Receiver::start();
    let sub = edge.as_key(&t.key).fresh().post(
        "/api/v1/webhook-subscriptions",
        &json!({"businessId": t.business, "channel": "chatapp", "phoneNumberId": "pn-edge", "callbackUrl": receiver.url(),
                "events": ["chatapp.message.received"], "externalAutomation": true}),
    );
    let secret = sub.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();
    for i in 0..3 {
        admin(&dir.0, &["sandbox", "inbound", "--phone-number-id", "pn-edge", "--from", "+447700900300", "--text", &format!("hello {i}")]);
    }
    let got = receiver.wait_for(3);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(receiver.got().len(), 3, "each event once");
    for d in &got {
        assert!(verify(d, &secret), "signed with the secret the edge handed out");
        assert_eq!(d.json()["eventType"], "chatapp.message.received");
    }
    // The edge's read of the delivery log sees what the dispatcher wrote.
    let sub_id = sub.data()["subscription"]["id"].as_str().map(String::from).unwrap_or_default();
    assert!(!sub_id.is_empty(), "{}", sub.text);
    let leased = crate::primary::sql_at(&url, "SELECT COUNT(*) FROM jobs WHERE state = 'leased'");
    assert_eq!(leased.trim(), "0");
}

#[test]
fn without_a_write_node_operations_that_need_one_say_so_and_nothing_else_is_missing() {
    let dir = DataDir::new();
    let _stack = start(&dir.0, &[]);
    let edge = edge_node(&primary_of(&dir.0).unwrap(), &dir.0, &[]);
    let t = tenant(&dir.0, "all");
    let r = edge.as_key(&t.key).fresh().post("/api/v1/messages", &json!({"businessId": t.business, "channel": "chatapp", "to": "+15550000001", "type": "text", "text": {"body": "hi"}}));
    if r.status != 400 {
        r.assert_failure(501, "configuration");
        assert_eq!(r.code(), "not_served_at_edge");
        assert_eq!(r.body["error"]["retryable"], json!(false));
    }
    // A contact create runs at the primary: the key and its rate limit in
    // one round trip, the transaction's statements, the commit.
    let cat = category(&edge, &t);
    let created = edge.as_key(&t.key).fresh().post("/api/v1/contacts", &contact(&t, &cat, "+15550090001"));
    created.assert_ok(201);
    let (primary, node, _) = round_trips(&dir.0, &created);
    assert_eq!(node, 0);
    assert!(primary >= 3, "{primary}");
    // The contract and the document are the node's.
    let doc = edge.req().get("/api/v1/openapi.json");
    assert_eq!(doc.status, 200);
    assert!(doc.body["paths"].as_object().unwrap().len() > 30);
    edge.req().get("/api/v1/contracts/whatsapp-automation").assert_ok(200);
    edge.req().get("/readyz").assert_ok(200);
}

/// The round trips one request made, from the edge's access log: to the
/// primary before its answer, to the write node, to the primary after it.
fn round_trips(dir: &Path, r: &Resp) -> (u32, u32, u32) {
    let id = r.header("x-request-id").to_string();
    assert!(!id.is_empty(), "{}", r.text);
    let line = poll("the request's access-log line", || {
        std::fs::read_to_string(dir.join("edge.log")).ok()?.lines().find(|l| l.contains("msg=request") && l.contains(&format!("requestId={id}"))).map(String::from)
    });
    let field = |name: &str| -> u32 { line.split_whitespace().find_map(|w| w.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("{name} in {line}")).parse().unwrap() };
    (field("primaryRoundTrips"), field("nodeRoundTrips"), field("afterAnswerRoundTrips"))
}

/// Waits until the write node knows the tenant's key (its replica pulls
/// what an admin command made at the primary).
fn key_on_node(edge: &Server, t: &Tenant) {
    let node: &Server = edge.companions[0].downcast_ref().unwrap();
    poll("the key on the native node", || (node.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).status == 200).then_some(()));
}

#[test]
fn sends_media_calls_batches_and_raw_uploads_are_answered_through_the_write_node() {
    let dir = DataDir::new();
    let edge = start(&dir.0, &["--carrier-setting", "step-delay-ms=20"]);
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-edge"]);
    admin(&dir.0, &["voice", "configure", "--business", &t.business, "--lines", "2"]);
    admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", "100000000"]);
    key_on_node(&edge, &t);
    let k = || edge.as_key(&t.key);
    let forwarded = |r: &Resp| {
        let (primary, node, _) = round_trips(&dir.0, r);
        assert_eq!((primary, node), (0, 1), "one round trip, to the write node: {}", r.text);
    };

    let sent = k().fresh().post("/api/v1/messages", &json!({"businessId": t.business, "phoneNumberId": "pn-edge", "to": "+15550000001", "type": "text", "text": "hi"}));
    let message = sent.assert_ok(202)["messageId"].as_str().unwrap().to_string();
    forwarded(&sent);
    // A messaging read goes to the node too (the area is not linked here).
    let read = k().get(&format!("/api/v1/messages/{message}?businessId={}", t.business));
    read.assert_ok(200);
    forwarded(&read);

    let png = b64(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1F, 0x15, 0xC4, 0x89]);
    let media =
        k().fresh().post("/api/v1/media", &json!({"businessId": t.business, "phoneNumberId": "pn-edge", "mediaType": "image", "mimeType": "image/png", "fileName": "a.png", "contentBase64": png}));
    assert_ne!(media.status, 501, "{}", media.text);
    assert!(media.status == 201 || media.status == 400, "{}", media.text);
    forwarded(&media);

    let agent = k().fresh().post("/api/v1/agents", &json!({"businessId": t.business, "channel": "voice", "name": "Caller", "instructions": "Say hello."}));
    let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    let call = k().fresh().post("/api/v1/voice/calls", &json!({"businessId": t.business, "agentId": agent, "toNumber": "+15550001234"}));
    call.assert_ok(202);
    forwarded(&call);
    let cat = category(&edge, &t);
    let c = k().fresh().post("/api/v1/contacts", &contact(&t, &cat, "+15550005555"));
    let contact_id = c.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
    forwarded(&c);
    let batch = k().fresh().post("/api/v1/voice/calls/batch", &json!({"businessId": t.business, "agentId": agent, "contactIds": [contact_id]}));
    assert!(batch.status < 300, "{}", batch.text);
    forwarded(&batch);

    // A raw upload streams through (sent chunked: no length known ahead).
    let source = k().fresh().post("/api/v1/data-sources", &json!({"businessId": t.business, "name": "Prices", "class": "structured", "kind": "table"}));
    let source = source.assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
    let mut csv = String::from("sku,price\n");
    for i in 0..20_000 {
        csv.push_str(&format!("S{i},{i}\n"));
    }
    let http = reqwest::blocking::Client::new();
    let raw = http
        .post(format!("{}/api/v1/data-sources/upload?businessId={}&dataSourceId={source}&fileName=p.csv&format=csv", edge.base, t.business))
        .header("authorization", format!("Bearer {}", t.key))
        .header("idempotency-key", "raw-1")
        .header("content-type", "text/csv")
        .body(reqwest::blocking::Body::new(std::io::Cursor::new(csv.clone().into_bytes())))
        .send()
        .unwrap();
    let raw = Resp::from(raw);
    assert_eq!(raw.assert_ok(202)["stage"], "received", "{}", raw.text);
    forwarded(&raw);
    // The same key again: the node's replay, through the edge.
    let again = Resp::from(
        http.post(format!("{}/api/v1/data-sources/upload?businessId={}&dataSourceId={source}&fileName=p.csv&format=csv", edge.base, t.business))
            .header("authorization", format!("Bearer {}", t.key))
            .header("idempotency-key", "raw-1")
            .header("content-type", "text/csv")
            .body(csv.into_bytes())
            .send()
            .unwrap(),
    );
    again.assert_ok(202);
    assert_eq!(again.header("idempotent-replayed"), "true");
    assert_eq!(again.data()["ingestionId"], raw.data()["ingestionId"]);
}

#[test]
fn reads_at_the_primary_take_one_round_trip_per_dependent_statement_and_at_the_node_one() {
    let dir = DataDir::new();
    let edge = start(&dir.0, &[]);
    let t = tenant(&dir.0, "all");
    let cat = category(&edge, &t);
    let created = edge.as_key(&t.key).fresh().post("/api/v1/contacts", &contact(&t, &cat, "+15550020001"));
    let id = created.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
    assert_eq!(round_trips(&dir.0, &created), (0, 1, 0), "a write: one round trip, to the write node");
    // At the primary: the key lookup and the rate limit ride with BEGIN and
    // the first of getContact's three statements; the transaction ends
    // after the answer.
    let url = format!("/api/v1/contacts/{id}?businessId={}", t.business);
    // The first read at the primary makes the rate-limit table after its answer.
    edge.as_key(&t.key).get(&url).assert_ok(200);
    poll("the rate-limit table", || (sql(&dir.0, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'edge_rate_limits'").trim() == "1").then_some(()));
    let read = edge.as_key(&t.key).get(&url);
    assert_eq!(read.assert_ok(200)["contact"]["id"], json!(id));
    assert_eq!(round_trips(&dir.0, &read), (3, 0, 1));
    assert!(!read.header("ratelimit-remaining").is_empty(), "the edge's rate-limit headers");
    // A key refused after the read ran speculatively: the answer is the
    // key's (never the data), and a key of another business is refused.
    edge.as_key(&unknown_key()).get(&url).assert_failure(401, "authentication");
    let other = tenant(&dir.0, "all");
    edge.as_key(&other.key).get(&url).assert_failure(403, "authorization");
    let reader = tenant_key(&dir.0, &t.business, "webhooks:read");
    edge.as_key(&reader).get(&url).assert_failure(403, "authorization");
    admin(&dir.0, &["key", "revoke", "--key-id", &t.key_id]);
    edge.as_key(&t.key).get(&url).assert_failure(401, "authentication");

    // With reads at the node (the default with a write node): one round trip.
    let t2 = tenant(&dir.0, "all");
    let node: &Server = edge.companions[0].downcast_ref().unwrap();
    let at_node = edge_node(&primary_of(&dir.0).unwrap(), &dir.0, &[("SWITCHBOARD_WRITE_NODE", node.base.as_str())]);
    key_on_node(&edge, &t2);
    let cat2 = category(&at_node, &t2);
    let c2 = at_node.as_key(&t2.key).fresh().post("/api/v1/contacts", &contact(&t2, &cat2, "+15550020002"));
    let id2 = c2.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
    // Read your writes: the write node pulled its write before answering.
    let read = at_node.as_key(&t2.key).get(&format!("/api/v1/contacts/{id2}?businessId={}", t2.business));
    assert_eq!(read.assert_ok(200)["contact"]["id"], json!(id2));
    assert_eq!(round_trips(&dir.0, &read), (0, 1, 0));
}

/// A key in the right form that no one holds.
fn unknown_key() -> String {
    format!("sbk_{}", "0".repeat(64))
}

fn tenant_key(dir: &Path, business: &str, scopes: &str) -> String {
    admin(dir, &["key", "create", "--business", business, "--scopes", scopes])["apiKey"].as_str().unwrap().to_string()
}

#[test]
fn rate_limits_at_the_edge_are_shared_by_every_instance_at_the_primary() {
    let dir = DataDir::new();
    let _stack = start(&dir.0, &[]);
    let edge = edge_node(&primary_of(&dir.0).unwrap(), &dir.0, &[("SWITCHBOARD_RATE_LIMIT_BUSINESS", "2"), ("SWITCHBOARD_RATE_LIMIT_KEY", "1000")]);
    let t = tenant(&dir.0, "all");
    let url = format!("/api/v1/contacts?businessId={}", t.business);
    // The first request makes the table (and is not limited); then a burst
    // of 4 (twice the rate), each from a fresh instance.
    edge.as_key(&t.key).get(&url).assert_ok(200);
    poll("the rate-limit table", || (sql(&dir.0, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'edge_rate_limits'").trim() == "1").then_some(()));
    std::thread::sleep(Duration::from_millis(2_100));
    let mut remaining = Vec::new();
    let mut refused = None;
    for _ in 0..8 {
        let r = edge.as_key(&t.key).get(&url);
        if r.status == 429 {
            refused = Some(r);
            break;
        }
        r.assert_ok(200);
        assert_eq!(r.header("ratelimit-limit"), "4");
        let left = r.header("ratelimit-remaining").parse::<u32>().unwrap();
        // Seconds until full again: ⌈(Limit − Remaining) / rate⌉, as a node answers (tests/api/limits.rs).
        assert_eq!(r.header("ratelimit-reset"), (4 - left).div_ceil(2).to_string());
        remaining.push(left);
    }
    let refused = refused.expect("the business's bucket runs dry");
    assert!(remaining.len() >= 4 && remaining[0] == 3, "{remaining:?}");
    refused.assert_failure(429, "rate_limit");
    assert_eq!(refused.code(), "rate_limited");
    assert_eq!(refused.body["error"]["retryable"], json!(true));
    assert!(refused.header("retry-after").parse::<u32>().unwrap() >= 1);
    assert_eq!(refused.header("ratelimit-remaining"), "0");
    // An unknown key takes no token and is refused as ever.
    edge.as_key(&unknown_key()).get(&url).assert_failure(401, "authentication");
}

#[test]
fn a_write_node_down_or_silent_answers_our_envelope_in_time() {
    let dir = DataDir::new();
    let _stack = start(&dir.0, &[]);
    let t = tenant(&dir.0, "all");
    let url = primary_of(&dir.0).unwrap();
    let body = json!({"businessId": t.business, "name": "Leads"});
    // Nothing listens: 503 at once, nothing done.
    let closed = format!("http://127.0.0.1:{}", free_port());
    let down = edge_node(&url, &dir.0, &[("SWITCHBOARD_WRITE_NODE", closed.as_str())]);
    let started = std::time::Instant::now();
    let r = down.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &body);
    r.assert_failure(503, "upstream");
    assert_eq!(r.code(), "write_node_unavailable");
    assert_eq!(r.body["error"]["retryable"], json!(true));
    assert_eq!(r.header("retry-after"), "1", "as a far node answers (tests/api/far.rs)");
    assert!(started.elapsed() < Duration::from_secs(4));
    // Accepts and never answers: the edge's deadline answers 504, before
    // the runtime's own limit would.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for s in silent.incoming().flatten() {
            keep.lock().unwrap().push(s);
        }
    });
    let slow = edge_node(&url, &dir.0, &[("SWITCHBOARD_WRITE_NODE", silent_url.as_str()), ("SWITCHBOARD_EDGE_DEADLINE_MS", "1500")]);
    let started = std::time::Instant::now();
    let r = slow.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &body);
    r.assert_failure(504, "upstream");
    assert_eq!(r.code(), "write_node_timeout");
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM categories WHERE business_id = '{}'", t.business)).trim(), "0");
    // /metrics is the write node's.
    let m = slow.req().get("/metrics");
    assert_eq!(m.status, 504);
    let edge_metrics = _stack.req().get("/metrics");
    assert_eq!(edge_metrics.status, 200, "{}", edge_metrics.text);
    assert!(edge_metrics.text.contains("switchboard_"), "the node's metrics");
}

/// A business and a key, placed in `database` (issue 47).
fn tenant_placed(dir: &Path, database: &str) -> Tenant {
    let made = admin(dir, &["business", "create", "--name", "Placed Co", "--database", database]);
    assert_eq!(made["database"], json!(database));
    let business = made["businessId"].as_str().unwrap().to_string();
    let k = admin(dir, &["key", "create", "--business", &business, "--scopes", "all"]);
    Tenant { business, key: k["apiKey"].as_str().unwrap().into(), key_id: k["keyId"].as_str().unwrap().into() }
}

#[test]
fn a_business_of_a_second_sqld_server_is_served_from_it_at_the_edge() {
    let dir = DataDir::new();
    let edge = start(&dir.0, &[]);
    let main_url = primary_of(&dir.0).unwrap();
    let second = Sqld::start();
    admin(&dir.0, &["database", "add", "--name", "second", "--url", &second.url]);
    let t = tenant_placed(&dir.0, "second");
    let m = tenant_placed(&dir.0, "main");
    let main: &Sqld = edge.companions[2].downcast_ref().unwrap();
    let contacts = |at: &Sqld, t: &Tenant| at.count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", t.business));

    // Written through the write node (forwarded: the node routes it), read
    // at the edge: from the second server, never from main. The node
    // opens the database it was started without on its own look-up.
    poll("the second database open at the write node", || log_events(&dir.0.join("dispatcher.log")).iter().any(|v| v["message"] == "opened database" && v["database"] == "second").then_some(()));
    key_on_node(&edge, &t);
    let cat = category(&edge, &t);
    let body = contact(&t, &cat, "+15550470001");
    let made = edge.as_key(&t.key).idem("edge-47-forwarded").post("/api/v1/contacts", &body);
    let id = made.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
    assert_eq!((contacts(&second, &t), contacts(main, &t)), (1, 0));
    let url = format!("/api/v1/contacts/{id}?businessId={}", t.business);
    // The first read at the primary makes the rate-limit table (at main).
    edge.as_key(&t.key).get(&url).assert_ok(200);
    poll("the rate-limit table", || (sql(&dir.0, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'edge_rate_limits'").trim() == "1").then_some(()));
    let read = edge.as_key(&t.key).get(&url);
    assert_eq!(read.assert_ok(200)["contact"]["id"], json!(id));
    // Main carries the key, the rate limit, the placement and the first
    // statement; the read runs at the second server (its first statement
    // again, then two); after the answer both read transactions end.
    assert_eq!(round_trips(&dir.0, &read), (4, 0, 2));
    let list = edge.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business));
    assert_eq!(list.assert_ok(200)["contacts"].as_array().unwrap().len(), 1);
    let again = edge.as_key(&t.key).idem("edge-47-forwarded").post("/api/v1/contacts", &body);
    assert_eq!(again.assert_ok(201), made.data());
    assert_eq!(again.header("idempotent-replayed"), "true");

    // Without a write node the edge writes itself: in the second server,
    // its idempotency record there too (a key the node executed replays).
    let alone = edge_node(&main_url, &dir.0, &[]);
    let body2 = contact(&t, &cat, "+15550470002");
    let made2 = alone.as_key(&t.key).idem("edge-47-here").post("/api/v1/contacts", &body2);
    let id2 = made2.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
    assert_eq!((contacts(&second, &t), contacts(main, &t)), (2, 0));
    let again2 = alone.as_key(&t.key).idem("edge-47-here").post("/api/v1/contacts", &body2);
    assert_eq!(again2.assert_ok(201), made2.data());
    assert_eq!(again2.header("idempotent-replayed"), "true");
    let replayed = alone.as_key(&t.key).idem("edge-47-forwarded").post("/api/v1/contacts", &body);
    assert_eq!(replayed.assert_ok(201), made.data());
    assert_eq!((contacts(&second, &t), contacts(main, &t)), (2, 0));
    alone.as_key(&t.key).get(&format!("/api/v1/contacts/{id2}?businessId={}", t.business)).assert_ok(200);
    // Keys, rate limits and placement stay main's.
    assert_eq!(second.count("SELECT COUNT(*) FROM api_keys"), 0);
    assert_eq!(second.count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'edge_rate_limits'"), 0);

    // A business of main is served from main, by both edges.
    let cat_m = category(&alone, &m);
    alone.as_key(&m.key).fresh().post("/api/v1/contacts", &contact(&m, &cat_m, "+15550470003")).assert_ok(201);
    assert_eq!((contacts(main, &m), contacts(&second, &m)), (1, 0));
    let listed = edge.as_key(&m.key).get(&format!("/api/v1/contacts?businessId={}", m.business));
    assert_eq!(listed.assert_ok(200)["contacts"].as_array().unwrap().len(), 1);

    // A namespace of a sqld started with --enable-namespaces is a database
    // too: every request the edge sends there names it.
    let spaced = Sqld::with_namespaces();
    spaced.create_namespace("eu1");
    admin(&dir.0, &["database", "add", "--name", "eu", "--url", &format!("{}?namespace=eu1", spaced.url)]);
    let e = tenant_placed(&dir.0, "eu");
    let cat_e = category(&alone, &e);
    let made_e = alone.as_key(&e.key).fresh().post("/api/v1/contacts", &contact(&e, &cat_e, "+15550470004"));
    let id_e = made_e.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
    edge.as_key(&e.key).get(&format!("/api/v1/contacts/{id_e}?businessId={}", e.business)).assert_ok(200);
    assert_eq!(spaced.in_namespace("eu1").count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", e.business)), 1);
    assert_eq!(contacts(main, &e), 0);
    // The server's default namespace was never written (nor migrated).
    assert_eq!(spaced.in_namespace("default").count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'contacts'"), 0);

    // Tenancy as ever: another business's key, an unknown one.
    edge.as_key(&m.key).get(&url).assert_failure(403, "authorization");
    edge.as_key(&unknown_key()).get(&url).assert_failure(401, "authentication");

    // A placement that names no registered database answers 503, never
    // main's rows, and writes nothing anywhere.
    let lost = tenant_placed(&dir.0, "second");
    crate::primary::sql_at(&main_url, &format!("UPDATE businesses SET database = 'gone' WHERE id = '{}'", lost.business));
    let r = edge.as_key(&lost.key).get(&format!("/api/v1/contacts?businessId={}", lost.business));
    r.assert_failure(503, "upstream");
    let w = alone.as_key(&lost.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": lost.business, "name": "Leads"}));
    w.assert_failure(503, "upstream");
    assert_eq!(main.count(&format!("SELECT COUNT(*) FROM categories WHERE business_id = '{}'", lost.business)), 0);
    assert_eq!(second.count(&format!("SELECT COUNT(*) FROM categories WHERE business_id = '{}'", lost.business)), 0);
}

#[test]
fn spin_manifest_follows_spin_manifest_version_2() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../spin.toml")).expect("spin.toml at the top");
    let m = toml::Value::Table(toml::from_str(&text).expect("spin.toml is TOML"));
    crate::edge_manifest::check(&m).unwrap();
}
