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
/// The instance bounds every edge node of the tests runs with.
const MAX_MEMORY: &str = "max-memory-size=134217728";
const TIMEOUT: &str = "timeout=5s";

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
        let status = Command::new(tools().join("wac"))
            .args(["plug", env!("SWITCHBOARD_EDGE_WASM"), "--plug", env!("SWITCHBOARD_EDGE_STORE_WASM"), "-o"])
            .arg(&out)
            .status()
            .expect("wac");
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
/// `extra` (it migrates the primary and runs the dispatcher), and the edge
/// node the test talks to. `dir` is the test's data dir: admin commands and
/// `sql()` on it go to the primary.
pub fn start(dir: &Path, extra: &[&str]) -> Server {
    let primary = Sqld::start();
    let node_dir = DataDir::new();
    let mut args = vec!["--primary-url", primary.url.as_str(), "--sync-interval-ms", SYNC_MS];
    args.extend_from_slice(extra);
    let node = Server::start_logged(&node_dir.0, &args, &dir.join("dispatcher.log"));
    std::fs::write(dir.join(PRIMARY_MARKER), &primary.url).unwrap();
    let mut edge = edge_node(&primary.url, dir, &[("SWITCHBOARD_EDGE_FAULT_ROUTES", "1")]);
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
fn operations_that_need_a_node_say_so_and_nothing_else_is_missing() {
    let dir = DataDir::new();
    let edge = start(&dir.0, &[]);
    let t = tenant(&dir.0, "all");
    let r = edge.as_key(&t.key).fresh().post("/api/v1/messages", &json!({"businessId": t.business, "channel": "chatapp", "to": "+15550000001", "type": "text", "text": {"body": "hi"}}));
    if r.status != 400 {
        r.assert_failure(501, "configuration");
        assert_eq!(r.code(), "not_served_at_edge");
        assert_eq!(r.body["error"]["retryable"], json!(false));
    }
    // The contract and the document are the node's.
    let doc = edge.req().get("/api/v1/openapi.json");
    assert_eq!(doc.status, 200);
    assert!(doc.body["paths"].as_object().unwrap().len() > 30);
    edge.req().get("/api/v1/contracts/whatsapp-automation").assert_ok(200);
    edge.req().get("/readyz").assert_ok(200);
}

#[test]
fn spin_manifest_follows_spin_manifest_version_2() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../spin.toml")).expect("spin.toml at the top");
    let m = toml::Value::Table(toml::from_str(&text).expect("spin.toml is TOML"));
    crate::edge_manifest::check(&m).unwrap();
}
