//! A node far from its primary (issue 36): a real sqld, a write node beside
//! it, and a far node that reaches both through a delay proxy
//! (tests/far/delay_proxy.py: a fixed round trip added to every chunk,
//! since this kernel has no netem). The far node forwards each mutation
//! to the write node (`--write-node`) and reads from its own replica.
//!
//! Nothing here asserts a time: round trips are shown by what the far
//! node sent its primary (`switchboard_primary_calls_total`), guarantees
//! by what the API and the primary answer.

use crate::harness::*;
use crate::primary::Sqld;
use crate::scale_out::admin_at;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The far link's round trip in these tests.
const RTT_MS: &str = "20";

/// A delay proxy in front of `target` (`127.0.0.1:PORT`), stopped by pid on drop.
pub struct DelayProxy {
    child: Child,
    pub url: String,
}

impl DelayProxy {
    pub fn start(target: &str, rtt_ms: &str) -> DelayProxy {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/far/delay_proxy.py");
        let mut child = Command::new("python3").arg(script).args(["--target", target, "--rtt-ms", rtt_ms]).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("start the delay proxy");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("the proxy's port");
        let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("the proxy printed {line:?}"));
        DelayProxy { child, url: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn host_port(url: &str) -> &str {
    url.trim_start_matches("http://")
}

/// A primary, a write node beside it, and a far node behind delay proxies.
struct Far {
    far: Server,
    near: Server,
    primary: Sqld,
    admin: DataDir,
    _proxies: [DelayProxy; 2],
    _dirs: [DataDir; 2],
}

/// `extra_far`: more flags of the far node.
fn far_setup(extra_far: &[&str]) -> Far {
    let primary = Sqld::start();
    let (dirs, admin) = ([DataDir::new(), DataDir::new()], DataDir::new());
    let near = Server::start_logged(&dirs[0].0, &["--primary-url", &primary.url, "--sync-interval-ms", "200"], &admin.0.join("near.log"));
    let to_primary = DelayProxy::start(host_port(&primary.url), RTT_MS);
    let to_near = DelayProxy::start(host_port(&near.base), RTT_MS);
    // A long sync interval: what the far node reads of its own writes
    // comes from the pull after each write, not from the periodic sync.
    let mut args = vec!["--primary-url", to_primary.url.as_str(), "--write-node", to_near.url.as_str(), "--sync-interval-ms", "60000"];
    args.extend_from_slice(extra_far);
    let far = Server::start_logged(&dirs[1].0, &args, &admin.0.join("far.log"));
    Far { far, near, primary, admin, _proxies: [to_primary, to_near], _dirs: dirs }
}

impl Far {
    fn tenant(&self) -> Tenant {
        let business = admin_at(&self.primary, &self.admin.0, &["business", "create", "--name", "Far Co"])["businessId"].as_str().unwrap().to_string();
        let k = admin_at(&self.primary, &self.admin.0, &["key", "create", "--business", &business, "--scopes", "all"]);
        Tenant { business, key: k["apiKey"].as_str().unwrap().into(), key_id: k["keyId"].as_str().unwrap().into() }
    }

    /// What the far node has sent its primary, by kind of call.
    fn primary_calls(&self, call: &str) -> u64 {
        calls_of(&self.far, call)
    }
}

#[test]
fn a_far_node_forwards_writes_reads_them_back_and_knows_new_keys_at_once() {
    let f = far_setup(&[]);
    let t = f.tenant();
    // A key made a moment ago at the primary works on both nodes at once:
    // a node that does not know a key pulls from its primary before a 401
    // (the far node's next periodic sync is a minute away).
    let categories = format!("/api/v1/contacts/categories?businessId={}", t.business);
    f.far.as_key(&t.key).get(&categories).assert_ok(200);
    f.near.as_key(&t.key).get(&categories).assert_ok(200);
    // A key nobody made is still refused, after its pull.
    f.far.as_key("sbk_0000000000000000000000000000000000000000000000000000000000000000").get(&categories).assert_failure(401, "authentication");

    // A create at the far node runs at the write node: the far node sends
    // its primary no statement for it.
    let statements = f.primary_calls("statement");
    let category = f.far.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"}));
    let category = category.assert_ok(201)["category"]["id"].as_str().unwrap().to_string();
    let body = json!({"businessId": t.business, "name": "Far Person", "mobile": "+14155550101", "categoryIds": [category]});
    let created = f.far.as_key(&t.key).idem("far-1").post("/api/v1/contacts", &body);
    let contact = created.assert_ok(201)["contact"].clone();
    assert_eq!(f.primary_calls("statement"), statements, "the far node ran no statement at its primary");
    // One request id names it in the header, the envelope and both logs.
    let rid = created.header("x-request-id").to_string();
    assert_eq!(created.body["meta"]["requestId"], rid.as_str());
    assert!(log_containing(&f.admin.0.join("near.log"), &rid).contains(&rid));

    // Read your writes at the far node: at once, with no periodic sync.
    let id = contact["id"].as_str().unwrap();
    let read = f.far.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business));
    assert_eq!(read.assert_ok(200)["contact"], contact);

    // The same key again, at the far node and at the write node: the
    // replay of the one execution, everywhere.
    for n in [&f.far, &f.near] {
        let again = n.as_key(&t.key).idem("far-1").post("/api/v1/contacts", &body);
        assert_eq!(again.assert_ok(201)["contact"], contact);
        assert_eq!(again.header("idempotent-replayed"), "true");
    }
    let other = json!({"businessId": t.business, "name": "Someone Else", "mobile": "+14155550102", "categoryIds": [category]});
    f.far.as_key(&t.key).idem("far-1").post("/api/v1/contacts", &other).assert_failure(409, "conflict");
    assert_eq!(f.primary.count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", t.business)), 1);

    // A bad request is answered by the far node itself, in the envelope.
    let bad = f.far.as_key(&t.key).fresh().post("/api/v1/contacts", &json!({"businessId": t.business, "name": "No Mobile", "categoryIds": [category]}));
    bad.assert_failure(400, "validation");
    // Another business's id: refused at the far node (and would be at the write node).
    let stranger = f.tenant();
    f.far.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": stranger.business, "name": "X"})).assert_failure(403, "authorization");

    // The far node runs no background jobs: it never takes the dispatcher
    // lease (the write node has it).
    poll("the write node leading", || log_containing(&f.admin.0.join("near.log"), "runs the dispatcher").contains("runs the dispatcher").then_some(()));
    let far_log = std::fs::read_to_string(f.admin.0.join("far.log")).unwrap();
    assert!(!far_log.contains("dispatcher"), "{far_log}");
}

#[test]
fn sends_uploads_and_raw_files_at_a_far_node_run_at_the_write_node() {
    let f = far_setup(&[]);
    let t = f.tenant();
    admin_at(&f.primary, &f.admin.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "far-pnid"]);
    let k = || f.far.as_key(&t.key);
    // A message sent at the far node is stored at the primary and
    // delivered by the write node's dispatcher.
    let sent = k().fresh().post("/api/v1/messages", &json!({"businessId": t.business, "phoneNumberId": "far-pnid", "to": "+14155550123", "type": "text", "text": "hello from afar"}));
    let id = sent.assert_ok(202)["messageId"].as_str().unwrap().to_string();
    poll_within("the message delivered", Duration::from_secs(60), || {
        let m = k().get(&format!("/api/v1/messages/{id}?businessId={}", t.business));
        (m.status == 200 && m.data()["taskStatus"] == "done" && m.data()["status"] != "failed").then_some(())
    });

    // A raw upload streams through the far node to the write node.
    let source = k().fresh().post("/api/v1/data-sources", &json!({"businessId": t.business, "name": "Prices", "class": "structured", "kind": "table"}));
    let source = source.assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
    let mut csv = String::from("sku,price\n");
    for i in 0..2000 {
        csv.push_str(&format!("sku-{i},{}\n", i % 97));
    }
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let r = http
        .post(format!("{}/api/v1/data-sources/upload?businessId={}&dataSourceId={source}&fileName=p.csv&format=csv", f.far.base, t.business))
        .header("authorization", format!("Bearer {}", t.key))
        .header("idempotency-key", "far-raw-1")
        .header("content-type", "text/csv")
        .body(reqwest::blocking::Body::new(std::io::Cursor::new(csv.clone().into_bytes())))
        .send()
        .unwrap();
    let r = Resp::from(r);
    assert_eq!(r.assert_ok(202)["stage"], "received");
    // Nothing was staged on the far node's side: the write node staged it
    // at the primary and the primary holds one ingestion of this source.
    assert_eq!(f.primary.count(&format!("SELECT COUNT(*) FROM ingestion_versions WHERE data_source_id = '{source}'")), 1);
}

#[test]
fn a_raw_upload_a_far_node_cannot_forward_answers_as_the_edge_does() {
    // The write node is nowhere: a raw upload's body can go nowhere else,
    // so the far node answers the 503 the edge answers (the gateway's
    // write_node::unreachable), with its Retry-After.
    let primary = Sqld::start();
    let (dir, admin) = (DataDir::new(), DataDir::new());
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let far = Server::start_logged(&dir.0, &["--primary-url", &primary.url, "--write-node", &nowhere], &admin.0.join("far.log"));
    let business = admin_at(&primary, &admin.0, &["business", "create", "--name", "Far Co"])["businessId"].as_str().unwrap().to_string();
    let key = admin_at(&primary, &admin.0, &["key", "create", "--business", &business, "--scopes", "all"])["apiKey"].as_str().unwrap().to_string();
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/api/v1/data-sources/upload?businessId={business}&dataSourceId={}&fileName=p.csv&format=csv", far.base, uuid::Uuid::new_v4()))
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "text/csv")
        .body("sku,price\nsku-1,3\n")
        .send()
        .unwrap();
    let retry_after = r.headers().get("retry-after").map(|v| v.to_str().unwrap().to_string());
    let r = Resp::from(r);
    r.assert_failure(503, "upstream");
    assert_eq!(r.code(), "write_node_unavailable");
    assert_eq!(r.body["error"]["retryable"], json!(true));
    assert_eq!(retry_after.as_deref(), Some("1"));
}

#[test]
fn a_write_node_that_accepts_and_never_answers_gets_the_edges_504() {
    // The write node takes the connection and says nothing: past three
    // request deadlines the far node answers what the edge answers when its
    // deadline passes (the gateway's write_node::too_late), and does not run
    // the create itself: the client retries with its key.
    let primary = Sqld::start();
    let (dir, admin) = (DataDir::new(), DataDir::new());
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    let far = Server::start_logged(&dir.0, &["--primary-url", &primary.url, "--write-node", &silent_url, "--request-timeout-ms", "500"], &admin.0.join("far.log"));
    let business = admin_at(&primary, &admin.0, &["business", "create", "--name", "Far Co"])["businessId"].as_str().unwrap().to_string();
    let key = admin_at(&primary, &admin.0, &["key", "create", "--business", &business, "--scopes", "all"])["apiKey"].as_str().unwrap().to_string();
    for idem in ["silent-1", "silent-1", "silent-2"] {
        let r = far.as_key(&key).idem(idem).post("/api/v1/contacts/categories", &json!({"businessId": business, "name": "Leads"}));
        r.assert_failure(504, "upstream");
        assert_eq!(r.code(), "write_node_timeout", "key {idem}");
        assert_eq!(r.body["error"]["retryable"], json!(true));
    }
    assert_eq!(primary.count(&format!("SELECT COUNT(*) FROM categories WHERE business_id = '{business}'")), 0);
}

#[test]
fn killing_the_write_node_mid_request_runs_each_key_once() {
    let mut f = far_setup(&[]);
    let t = f.tenant();
    let category = f.far.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"}));
    let category = category.assert_ok(201)["category"]["id"].as_str().unwrap().to_string();
    // Creates through the far node from four clients; the write node is
    // killed (-9) while they run.
    let keys: Vec<String> = (0..100).map(|i| format!("kill-{i}")).collect();
    let body = |i: usize| json!({"businessId": t.business, "name": format!("Person {i}"), "mobile": format!("+1415555{:04}", 2000 + i), "categoryIds": [category]});
    let outcomes: Vec<(usize, u16, String)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (far, keys, t, body) = (&f.far, &keys, &t, &body);
                s.spawn(move || {
                    (w..keys.len())
                        .step_by(4)
                        .map(|i| {
                            let r = far.as_key(&t.key).idem(&keys[i]).post("/api/v1/contacts", &body(i));
                            (i, r.status, r.code().to_string())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(250));
        let _ = f.near.child.kill();
        let _ = f.near.child.wait();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    for (i, status, code) in &outcomes {
        // Answered by the write node, by the far node's own run at the
        // primary once the write node was unreachable, or refused as
        // retryable: never a 500.
        assert!(matches!(status, 201 | 503), "request {i}: {status} {code}");
    }
    // Every client retries what was not answered with its same key, until
    // each is answered (a node killed inside a transaction holds the
    // primary's write lock until sqld drops its connection: up to a minute).
    for (i, status, _) in &outcomes {
        if *status == 201 {
            continue;
        }
        poll_within("a retried create", Duration::from_secs(150), || {
            let r = f.far.as_key(&t.key).idem(&keys[*i]).post("/api/v1/contacts", &body(*i));
            (r.status == 201).then_some(())
        });
    }
    // One contact per key: none lost, none twice.
    assert_eq!(f.primary.count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", t.business)), keys.len() as i64);
}

/// What a node has sent its primary, by kind of call.
fn calls_of(node: &Server, call: &str) -> u64 {
    let text = reqwest::blocking::get(format!("{}/metrics", node.base)).unwrap().text().unwrap();
    let needle = format!("switchboard_primary_calls_total{{call=\"{call}\"}}");
    text.lines().find(|l| l.starts_with(&needle)).and_then(|l| l.rsplit(' ').next()).map_or(0, |n| n.parse::<f64>().unwrap() as u64)
}

#[test]
fn a_node_behind_its_primary_meets_a_conflict_pulls_and_writes_once() {
    // Two nodes that ship their transactions; b pulls only when it must.
    let primary = Sqld::start();
    let (da, db, admin) = (DataDir::new(), DataDir::new(), DataDir::new());
    let a = Server::start_logged(&da.0, &["--primary-url", &primary.url, "--sync-interval-ms", "60000"], &admin.0.join("a.log"));
    let b = Server::start_logged(&db.0, &["--primary-url", &primary.url, "--sync-interval-ms", "60000"], &admin.0.join("b.log"));
    let business = admin_at(&primary, &admin.0, &["business", "create", "--name", "Race Co"])["businessId"].as_str().unwrap().to_string();
    let key = admin_at(&primary, &admin.0, &["key", "create", "--business", &business, "--scopes", "all"])["apiKey"].as_str().unwrap().to_string();
    // b knows the key (and pulled the primary for it) before a writes.
    b.as_key(&key).get(&format!("/api/v1/contacts?businessId={business}")).assert_ok(200);
    let category = a.as_key(&key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": business, "name": "Leads"}));
    let category = category.assert_ok(201)["category"]["id"].as_str().unwrap().to_string();
    // b has not seen the category: its transaction runs against an older
    // view, the guard refuses it at the primary, b pulls and runs it again.
    let conflicts = calls_of(&b, "conflict");
    let body = json!({"businessId": business, "name": "Raced", "mobile": "+14155550177", "categoryIds": [category]});
    let created = b.as_key(&key).idem("race-1").post("/api/v1/contacts", &body);
    let contact = created.assert_ok(201)["contact"].clone();
    assert_eq!(contact["categories"][0]["id"], category.as_str(), "{contact}");
    assert!(calls_of(&b, "conflict") > conflicts, "b met the conflict");
    // The statements ran once at the primary (one contact, one record),
    // and a replay at a reads the one execution.
    assert_eq!(primary.count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{business}'")), 1);
    let again = a.as_key(&key).idem("race-1").post("/api/v1/contacts", &body);
    assert_eq!(again.assert_ok(201)["contact"], contact);
    // What b's replica lacks must not decide an answer that writes
    // nothing either: a chatapp number connected a moment ago at the
    // primary is found by b (its would-be 404 meets the guard, b pulls and
    // runs the request again).
    admin_at(&primary, &admin.0, &["channel", "connect", "--business", &business, "--channel", "chatapp", "--phone-number-id", "pn-new"]);
    let sent = b.as_key(&key).fresh().post("/api/v1/messages", &json!({"businessId": business, "phoneNumberId": "pn-new", "to": "+14155550123", "type": "text", "text": "hi"}));
    sent.assert_ok(202);
    // Many writes at once on both nodes: each lands once.
    std::thread::scope(|s| {
        for (n, node) in [&a, &b].into_iter().enumerate() {
            let (key, business, category) = (&key, &business, &category);
            s.spawn(move || {
                for i in 0..25 {
                    let body = json!({"businessId": business, "name": format!("P{n}-{i}"), "mobile": format!("+1415556{n}{i:03}"), "categoryIds": [category]});
                    node.as_key(key).idem(&format!("many-{n}-{i}")).post("/api/v1/contacts", &body).assert_ok(201);
                }
            });
        }
    });
    // 1 + 50, and the contact the send made for its recipient.
    assert_eq!(primary.count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{business}'")), 52);
    // The guard counted every write at the primary.
    assert!(primary.count("SELECT n FROM switchboard_write_epoch") > 52);
}

/// Issue 47: at a node whose primary is a link away, a job step that calls
/// out holds the write gate across its locked write (the primary's lock, a
/// pull and the shipped commit: three round trips). A request's write that
/// arrives while such steps wait for the gate goes before them, so it waits
/// for the one step holding the gate, not for every step queued
/// (`SWITCHBOARD_WRITE_PRIORITY=0` in the test's environment serves them in
/// arrival order, and this fails).
#[test]
fn a_requests_write_goes_before_the_job_steps_waiting_for_the_gate() {
    let primary = Sqld::start();
    let (dir, admin) = (DataDir::new(), DataDir::new());
    let to_primary = DelayProxy::start(host_port(&primary.url), "30");
    let node = Server::start_logged(&dir.0, &["--primary-url", &to_primary.url, "--rate-limit-key", "0", "--rate-limit-business", "0"], &admin.0.join("node.log"));
    let business = admin_at(&primary, &admin.0, &["business", "create", "--name", "Busy Co"])["businessId"].as_str().unwrap().to_string();
    let key = admin_at(&primary, &admin.0, &["key", "create", "--business", &business, "--scopes", "all"])["apiKey"].as_str().unwrap().to_string();
    admin_at(&primary, &admin.0, &["channel", "connect", "--business", &business, "--channel", "chatapp", "--phone-number-id", "busy-pnid"]);
    let k = || node.as_key(&key);
    poll("the key on the node", || (k().get(&format!("/api/v1/contacts?businessId={business}")).status == 200).then_some(()));
    let category = k().fresh().post("/api/v1/contacts/categories", &json!({"businessId": business, "name": "All"})).data()["category"]["id"].as_str().unwrap().to_string();
    let create = |i: usize| {
        let asked = std::time::Instant::now();
        let r = k().fresh().post("/api/v1/contacts", &json!({"businessId": business, "name": format!("C{i}"), "mobile": format!("+1415555{i:04}"), "categoryIds": [category]}));
        r.assert_ok(201);
        asked.elapsed()
    };
    let alone: Vec<Duration> = (0..5).map(create).collect();
    // Sends whose deliveries' steps (up to eight at once for a business)
    // queue for the gate while the creates below arrive.
    std::thread::scope(|s| {
        for i in 0..48 {
            let k = &k;
            let business = &business;
            s.spawn(move || {
                let r = k().fresh().post("/api/v1/messages", &json!({"businessId": business, "phoneNumberId": "busy-pnid", "to": format!("+1415556{i:04}"), "type": "text", "text": "hi"}));
                r.assert_ok(202);
            });
        }
    });
    let mut busy: Vec<Duration> = (10..30).map(create).collect();
    busy.sort();
    let median = busy[busy.len() / 2];
    eprintln!("creates alone {alone:?}; while steps run: median {median:?}, worst {:?}", busy.last().unwrap());
    assert!(median < Duration::from_millis(400), "a create waited for the queued job steps: median {median:?} ({busy:?})");
}
