//! Businesses over several databases (issue 47): `admin database add`
//! and `list`, placement at `business create`, and a node that routes each
//! request, job and admin command to the business's own database: in the
//! local mode (a file of its own in the data dir) and on two real sqld
//! servers.

use crate::harness::*;
use crate::primary::Sqld;
use serde_json::{json, Value};
use std::path::Path;

/// `switchboard admin` that is expected to fail: its stderr.
fn admin_refused(dir: &Path, args: &[&str]) -> String {
    let mut command = std::process::Command::new(BIN);
    command.arg("admin").arg("--data-dir").arg(dir).env("SWITCHBOARD_SETTINGS_KEY", SETTINGS_KEY);
    if let Some(url) = primary_of(dir) {
        command.arg("--primary-url").arg(url);
    }
    let out = command.args(args).output().unwrap();
    assert!(!out.status.success(), "admin {args:?} should have failed");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A business placed in `database` (or by default) and a key for it.
pub(crate) fn tenant_in(dir: &Path, database: Option<&str>) -> (Tenant, String) {
    let mut args = vec!["business", "create", "--name", "Placed Co"];
    if let Some(d) = database {
        args.extend(["--database", d]);
    }
    let made = admin(dir, &args);
    let business = made["businessId"].as_str().unwrap().to_string();
    let placed = made["database"].as_str().unwrap().to_string();
    let k = admin(dir, &["key", "create", "--business", &business, "--scopes", "all"]);
    (Tenant { business, key: k["apiKey"].as_str().unwrap().into(), key_id: k["keyId"].as_str().unwrap().into() }, placed)
}

fn create_contact(s: &Server, t: &Tenant, mobile: &str, idem: &str) -> Value {
    // Creating an existing category name again returns the same category.
    let category = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"}));
    let category = category.data()["category"]["id"].as_str().expect("a category").to_string();
    s.as_key(&t.key).idem(idem).post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Ada", "mobile": mobile, "categoryIds": [category]})).assert_ok(201).clone()
}

/// Runs read-only SQL against a local database file of the data dir.
pub(crate) fn sql_file(file: &Path, query: &str) -> String {
    let script = "import sqlite3,sys\nc=sqlite3.connect('file:'+sys.argv[1]+'?mode=ro',uri=True)\nfor r in c.execute(sys.argv[2]): print('|'.join(str(x) for x in r))";
    let out = std::process::Command::new("python3").arg("-c").arg(script).arg(file).arg(query).output().expect("python3");
    assert!(out.status.success(), "sql failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Two real sqld servers: `main` (the first, the data dir's primary) and
/// `second`, registered; and the data dir of the admin commands.
pub(crate) fn two_servers() -> (Sqld, Sqld, DataDir) {
    let (first, second) = (Sqld::start(), Sqld::start());
    let admin_dir = DataDir::new();
    std::fs::write(admin_dir.0.join(PRIMARY_MARKER), &first.url).unwrap();
    admin(&admin_dir.0, &["database", "add", "--name", "second", "--url", &second.url]);
    (first, second, admin_dir)
}

/// Sends a chatapp text and waits until the sandbox messenger read it: the
/// send's job ran in the business's database.
fn message_is_delivered(s: &Server, dir: &Path, t: &Tenant, number: &str) {
    admin(dir, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", number]);
    let sent =
        s.as_key(&t.key).fresh().post("/api/v1/messages", &json!({"businessId": t.business, "phoneNumberId": number, "to": "+447700900123", "type": "text", "text": "Hello"})).assert_ok(202).clone();
    let id = sent["messageId"].as_str().unwrap().to_string();
    poll("the message read", || {
        let r = s.as_key(&t.key).get(&format!("/api/v1/messages/{id}?businessId={}", t.business));
        (r.status == 200 && r.data()["status"] == "read").then_some(())
    });
}

#[test]
fn local_databases_take_their_businesses_rows_jobs_and_replays() {
    let dir = DataDir::new();
    // Started before the database exists: the node opens it when it is
    // first asked for one of its businesses.
    let s = Server::start(&dir.0);
    // Beside a local main, a business gets a database of its own by
    // default: `b-` and the first 12 hex digits of its id.
    let (a, placed_a) = tenant_in(&dir.0, None);
    assert_eq!(placed_a, format!("b-{}", &a.business.replace('-', "")[..12]));
    let (m, placed_m) = tenant_in(&dir.0, Some("main"));
    assert_eq!(placed_m, "main");

    assert!(admin_refused(&dir.0, &["database", "add", "--name", "second", "--url", "http://127.0.0.1:9"]).contains("local"));
    assert!(admin_refused(&dir.0, &["database", "add", "--name", "Main!", "--url", "local"]).contains("--name"));
    assert_eq!(admin(&dir.0, &["database", "add", "--name", "second", "--url", "local"]), json!({"name": "second", "url": "local"}));
    assert!(admin_refused(&dir.0, &["database", "add", "--name", "second", "--url", "local"]).contains("registered already"));
    assert!(admin_refused(&dir.0, &["business", "create", "--name", "X", "--database", "third"]).contains("not registered"));
    // A database named takes the business.
    let (b, placed_b) = tenant_in(&dir.0, Some("second"));
    assert_eq!(placed_b, "second");
    let (b2, _) = tenant_in(&dir.0, Some("second"));
    assert_eq!(
        admin(&dir.0, &["database", "list"]),
        json!({"databases": [{"name": "main", "url": "local", "businesses": 1}, {"name": placed_a, "url": "local", "businesses": 1}, {"name": "second", "url": "local", "businesses": 2}]})
    );
    let listed = admin(&dir.0, &["business", "list"]);
    let of = |id: &str| listed["businesses"].as_array().unwrap().iter().find(|x| x["businessId"] == id).unwrap()["database"].clone();
    assert_eq!((of(&a.business), of(&m.business), of(&b.business)), (json!(placed_a), json!("main"), json!("second")));

    // Each business's rows are in its own database's file, and only there.
    let made_a = create_contact(&s, &a, "+447700900001", "c-a");
    let made_m = create_contact(&s, &m, "+447700900003", "c-m");
    let made_b = create_contact(&s, &b, "+447700900002", "c-b");
    let own = dir.0.join("databases").join(&placed_a).join("switchboard.db");
    let second = dir.0.join("databases/second/switchboard.db");
    let main = dir.0.join("switchboard.db");
    let count = |file: &Path, business: &str| sql_file(file, &format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{business}'"));
    assert_eq!((count(&own, &a.business), count(&main, &a.business), count(&second, &a.business)), ("1".into(), "0".into(), "0".into()));
    assert_eq!((count(&main, &m.business), count(&own, &m.business), count(&second, &m.business)), ("1".into(), "0".into(), "0".into()));
    assert_eq!((count(&main, &b.business), count(&own, &b.business), count(&second, &b.business)), ("0".into(), "0".into(), "1".into()));
    // Reads route as writes do; a replay answers from the business's own
    // database's record.
    let id_b = made_b["contact"]["id"].as_str().unwrap();
    s.as_key(&b.key).get(&format!("/api/v1/contacts/{id_b}?businessId={}", b.business)).assert_ok(200);
    assert_eq!(create_contact(&s, &b, "+447700900002", "c-b"), made_b);
    assert_eq!(create_contact(&s, &a, "+447700900001", "c-a"), made_a);
    assert_eq!(create_contact(&s, &m, "+447700900003", "c-m"), made_m);
    // Tenancy is unchanged: b's key reaches no business but its own.
    s.as_key(&b.key).get(&format!("/api/v1/contacts?businessId={}", b2.business)).assert_failure(403, "authorization");

    // Jobs run in every database (the send's delivery steps).
    message_is_delivered(&s, &dir.0, &m, "pn-main-1");
    message_is_delivered(&s, &dir.0, &a, "pn-own-1");
    message_is_delivered(&s, &dir.0, &b, "pn-second-1");
    assert_eq!(sql_file(&second, &format!("SELECT COUNT(*) FROM messages WHERE business_id = '{}'", b.business)), "1");
    assert_eq!(sql_file(&main, &format!("SELECT COUNT(*) FROM messages WHERE business_id = '{}'", b.business)), "0");

    // A restarted node opens the registered database at start.
    drop(s);
    let s = Server::start(&dir.0);
    s.as_key(&b.key).get(&format!("/api/v1/contacts/{id_b}?businessId={}", b.business)).assert_ok(200);
    let id_a = made_a["contact"]["id"].as_str().unwrap();
    s.as_key(&a.key).get(&format!("/api/v1/contacts/{id_a}?businessId={}", a.business)).assert_ok(200);
    // A revoked key (main keeps every key) is refused for a business of
    // any database.
    admin(&dir.0, &["key", "revoke", "--key-id", &b.key_id]);
    poll("the revocation seen", || (s.as_key(&b.key).get(&format!("/api/v1/contacts?businessId={}", b.business)).status == 401).then_some(()));
}

#[test]
fn two_sqld_servers_each_hold_their_businesses() {
    if edge_target() {
        return;
    }
    let (first, second) = (Sqld::start(), Sqld::start());
    let admin_dir = DataDir::new();
    std::fs::write(admin_dir.0.join(PRIMARY_MARKER), &first.url).unwrap();
    // The node starts before the second server is registered: its first
    // request of a business there opens it (off the request's worker).
    let node_dir = DataDir::new();
    let s = Server::start_with(&node_dir.0, &["--primary-url", &first.url, "--sync-interval-ms", "200"]);
    assert!(admin_refused(&admin_dir.0, &["database", "add", "--name", "second", "--url", "local"]).contains("libSQL server"));
    admin(&admin_dir.0, &["database", "add", "--name", "second", "--url", &second.url]);
    let (a, placed_a) = tenant_in(&admin_dir.0, Some("main"));
    let (b, placed_b) = tenant_in(&admin_dir.0, None);
    assert_eq!((placed_a.as_str(), placed_b.as_str()), ("main", "second"));
    let listed = admin(&admin_dir.0, &["database", "list"]);
    assert_eq!(listed["databases"][1], json!({"name": "second", "url": second.url, "businesses": 1}));

    poll("the key on the node", || (s.as_key(&b.key).get(&format!("/api/v1/contacts?businessId={}", b.business)).status == 200).then_some(()));
    let made_b = create_contact(&s, &b, "+447700900002", "c-b");
    create_contact(&s, &a, "+447700900001", "c-a");
    let contacts_of = |at: &Sqld, t: &Tenant| at.count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", t.business));
    assert_eq!((contacts_of(&first, &a), contacts_of(&second, &a)), (1, 0));
    assert_eq!((contacts_of(&first, &b), contacts_of(&second, &b)), (0, 1));
    // The keys are main's alone.
    assert_eq!(second.count("SELECT COUNT(*) FROM api_keys"), 0);
    assert_eq!(create_contact(&s, &b, "+447700900002", "c-b"), made_b);
    // A read right after the write sees it (the node's own replica of the
    // second server).
    let id_b = made_b["contact"]["id"].as_str().unwrap();
    s.as_key(&b.key).get(&format!("/api/v1/contacts/{id_b}?businessId={}", b.business)).assert_ok(200);
    // The second database's jobs run at the node (its own dispatcher lease).
    message_is_delivered(&s, &admin_dir.0, &b, "pn-second-1");
    assert_eq!(second.count(&format!("SELECT COUNT(*) FROM messages WHERE business_id = '{}' AND status = 'read'", b.business)), 1);
    assert!(second.count("SELECT COUNT(*) FROM leases") >= 1, "the second database holds its own dispatcher lease");
    // Revoked at main: refused for the business of the second server too.
    admin(&admin_dir.0, &["key", "revoke", "--key-id", &b.key_id]);
    poll("the revocation seen", || (s.as_key(&b.key).get(&format!("/api/v1/contacts?businessId={}", b.business)).status == 401).then_some(()));
}

/// A second database's dispatcher lease fails over like main's: the node
/// that ran its jobs is killed (-9), and the node left takes its lease
/// and delivers the business's next message.
#[test]
fn a_second_databases_jobs_fail_over_to_the_node_left() {
    if edge_target() {
        return;
    }
    let (first, second, admin_dir) = two_servers();
    let (b, _) = tenant_in(&admin_dir.0, Some("second"));
    let node = |dir: &Path| Server::start_with(dir, &["--primary-url", &first.url, "--sync-interval-ms", "200"]);
    let dirs = [DataDir::new(), DataDir::new()];
    // The first node alone takes the second database's lease.
    let mut a = node(&dirs[0].0);
    poll("the key on node a", || (a.as_key(&b.key).get(&format!("/api/v1/contacts?businessId={}", b.business)).status == 200).then_some(()));
    message_is_delivered(&a, &admin_dir.0, &b, "pn-failover-1");
    let leader = second.sql("SELECT owner FROM leases WHERE name = 'dispatcher'")[0][0].clone();
    let b_node = node(&dirs[1].0);
    poll("the key on node b", || (b_node.as_key(&b.key).get(&format!("/api/v1/contacts?businessId={}", b.business)).status == 200).then_some(()));
    let _ = std::process::Command::new("kill").arg("-KILL").arg(a.child.id().to_string()).status();
    let _ = a.child.wait();
    // The node left delivers the next message once the dead node's lease
    // (10 s) runs out.
    message_is_delivered(&b_node, &admin_dir.0, &b, "pn-failover-2");
    let now = second.sql("SELECT owner FROM leases WHERE name = 'dispatcher'")[0][0].clone();
    assert_ne!(now, leader, "the second database's lease changed hands");
}

/// A namespace of a sqld (`--enable-namespaces`) is a database too: main
/// is the server's `default` namespace, `?namespace=NAME` another; each
/// business's rows land in its own namespace, shipped with the header
/// that names it.
#[test]
fn a_namespace_of_one_sqld_is_a_database_of_its_own() {
    if edge_target() {
        return;
    }
    let server = Sqld::with_namespaces();
    server.create_namespace("eu1");
    let admin_dir = DataDir::new();
    std::fs::write(admin_dir.0.join(PRIMARY_MARKER), &server.url).unwrap();
    assert!(admin_refused(&admin_dir.0, &["database", "add", "--name", "eu", "--url", &format!("{}?namespace=a b", server.url)]).contains("namespace"));
    let url = format!("{}?namespace=eu1", server.url);
    assert_eq!(admin(&admin_dir.0, &["database", "add", "--name", "eu", "--url", &url]), json!({"name": "eu", "url": url}));
    let (a, _) = tenant_in(&admin_dir.0, Some("main"));
    let (b, _) = tenant_in(&admin_dir.0, Some("eu"));
    let node_dir = DataDir::new();
    let s = Server::start_with(&node_dir.0, &["--primary-url", &server.url, "--sync-interval-ms", "200"]);
    poll("the key on the node", || (s.as_key(&b.key).get(&format!("/api/v1/contacts?businessId={}", b.business)).status == 200).then_some(()));
    let made = create_contact(&s, &b, "+447700900002", "c-b");
    create_contact(&s, &a, "+447700900001", "c-a");
    let contacts = |ns: &str, t: &Tenant| server.in_namespace(ns).count(&format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", t.business));
    assert_eq!((contacts("default", &a), contacts("eu1", &a)), (1, 0));
    assert_eq!((contacts("default", &b), contacts("eu1", &b)), (0, 1));
    assert_eq!(create_contact(&s, &b, "+447700900002", "c-b"), made);
    message_is_delivered(&s, &admin_dir.0, &b, "pn-eu-1");
    assert_eq!(server.in_namespace("eu1").count(&format!("SELECT COUNT(*) FROM messages WHERE business_id = '{}' AND status = 'read'", b.business)), 1);
}
