//! `admin backup`, `admin restore` and `admin check` (issue 51): a backup
//! taken while clients write holds every row acknowledged before it began,
//! and its restore serves them; a damaged file or a bad backup is refused
//! with its reason.

use crate::harness::*;
use serde_json::json;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// `switchboard admin --data-dir DIR ARGS…`, which must fail: its stderr.
fn admin_fails(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("admin").arg("--data-dir").arg(dir).args(args).output().unwrap();
    assert!(!out.status.success(), "admin {args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "an error, not a crash");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_backup_taken_during_writes_restores_every_acknowledged_row() {
    let dir = DataDir::new();
    // Each client creates as fast as the server answers: the key's rate
    // limit (100 a second) would refuse a fast build's creates, and a 429
    // says nothing of the backup.
    let s = Server::start_with(&dir.0, &["--rate-limit-key", "0"]);
    // Two businesses in databases of their own (the local default) and one
    // in main: the backup copies every database.
    let mut tenants = vec![tenant(&dir.0, "all"), tenant(&dir.0, "all")];
    let in_main = admin(&dir.0, &["business", "create", "--name", "Main Co", "--database", "main"])["businessId"].as_str().unwrap().to_string();
    let key = admin(&dir.0, &["key", "create", "--business", &in_main, "--scopes", "all"])["apiKey"].as_str().unwrap().to_string();
    tenants.push(Tenant { business: in_main, key, key_id: String::new() });
    let categories: Vec<String> = tenants
        .iter()
        .map(|t| s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"})).assert_ok(201)["category"]["id"].as_str().unwrap().to_string())
        .collect();

    // Each business's client creates contacts one after another; every
    // acknowledged one is noted with when its answer came.
    let stop = AtomicBool::new(false);
    let acked: Mutex<Vec<(usize, String, Instant)>> = Mutex::new(Vec::new());
    let backup = dir.0.join("backup.tar");
    let (began, answer) = std::thread::scope(|scope| {
        for (i, t) in tenants.iter().enumerate() {
            let (s, stop, acked, category) = (&s, &stop, &acked, &categories[i]);
            scope.spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let body = json!({"businessId": t.business, "name": format!("P{n}"), "mobile": format!("+1555{i}{n:06}"), "categoryIds": [category]});
                    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts", &body);
                    let id = r.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
                    acked.lock().unwrap().push((i, id, Instant::now()));
                }
            });
        }
        poll("some contacts written", || (acked.lock().unwrap().len() >= 30).then_some(()));
        let began = Instant::now();
        let answer = admin(&dir.0, &["backup", "--to", backup.to_str().unwrap()]);
        // The writes go on a moment after the backup.
        let after = acked.lock().unwrap().len() + 6;
        poll("contacts written after the backup", || (acked.lock().unwrap().len() >= after).then_some(()));
        stop.store(true, Ordering::Relaxed);
        (began, answer)
    });
    assert_eq!(answer["businesses"], json!(3), "{answer}");
    let databases = answer["databases"].as_array().unwrap();
    assert_eq!(databases.len(), 3, "main and the two businesses' own: {answer}");
    assert!(databases.iter().all(|d| d["sha256"].as_str().unwrap().len() == 64 && d["bytes"].as_u64().unwrap() > 0), "{answer}");
    drop(s);

    // Restored into a new data dir, checked, and served: every contact
    // acknowledged before the backup began is there, each in its business.
    let restored = DataDir::new();
    let out = admin(&restored.0, &["restore", "--from", backup.to_str().unwrap()]);
    assert_eq!(out["businesses"], json!(3), "{out}");
    let check = admin(&restored.0, &["check"]);
    assert_eq!(check["ok"], json!(true), "{check}");
    assert_eq!(check["databases"].as_array().unwrap().len(), 3, "{check}");
    let s = Server::start(&restored.0);
    let acked = acked.into_inner().unwrap();
    let before: Vec<_> = acked.iter().filter(|(_, _, at)| *at < began).collect();
    let during = acked.len() - before.len();
    assert!(before.len() >= 30 && during > 0, "{} before, {during} during or after", before.len());
    for (i, id, _) in &before {
        let t = &tenants[*i];
        s.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business)).assert_ok(200);
    }
    // And the restored server takes writes as before.
    let t = &tenants[0];
    s.as_key(&t.key).fresh().post("/api/v1/contacts", &json!({"businessId": t.business, "name": "After", "mobile": "+15559999999", "categoryIds": [categories[0]]})).assert_ok(201);
}

#[test]
fn check_names_a_damaged_database_and_restore_refuses_what_it_cannot_lay_out() {
    let dir = DataDir::new();
    let t = {
        let mut s = Server::start(&dir.0);
        let t = tenant(&dir.0, "all");
        s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"})).assert_ok(201);
        s.terminate();
        t
    };
    // Stopped: the check passes, and knows the vector index (every
    // database has one) that the stock sqlite3 cannot read.
    let check = admin(&dir.0, &["check"]);
    assert_eq!(check["ok"], json!(true), "{check}");
    let backup = dir.0.join("b.tar");
    admin(&dir.0, &["backup", "--to", backup.to_str().unwrap()]);

    // Restore: never over a data dir that holds files, never a file that
    // is not a backup, never a backup whose file changed.
    let holds = admin_fails(&dir.0, &["restore", "--from", backup.to_str().unwrap()]);
    assert!(holds.contains("is not empty"), "{holds}");
    let other = DataDir::new();
    let not_tar = dir.0.join("not.tar");
    std::fs::write(&not_tar, b"hello").unwrap();
    let refused = admin_fails(&other.0, &["restore", "--from", not_tar.to_str().unwrap()]);
    assert!(refused.contains("not a switchboard backup"), "{refused}");
    let mut bytes = std::fs::read(&backup).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    let damaged = dir.0.join("damaged.tar");
    std::fs::write(&damaged, &bytes).unwrap();
    let refused = admin_fails(&other.0, &["restore", "--from", damaged.to_str().unwrap()]);
    assert!(refused.contains("SHA-256") || refused.contains("integrity"), "{refused}");
    assert_eq!(std::fs::read_dir(&other.0).unwrap().count(), 0, "nothing is left of a refused restore");

    // A database file damaged in place: check names it and exits 1.
    let own = dir.0.join("databases").join(switchboard_storage::databases::own_database_name(&t.business)).join("switchboard.db");
    let mut file = std::fs::read(&own).unwrap();
    let page = 4096;
    assert!(file.len() > 4 * page);
    // The b-tree page headers of pages 2 to 4: not a page type.
    for p in 1..4 {
        file[p * page..p * page + 8].fill(0x5a);
    }
    std::fs::write(&own, &file).unwrap();
    let found = admin_fails(&dir.0, &["check"]);
    assert!(found.contains("problems"), "{found}");
}

/// On a node of a libSQL server: the backup is the primary's data, every
/// database of the deployment (main and a second sqld), and it restores
/// as a local data dir that serves it.
#[test]
fn a_backup_beside_a_libsql_server_restores_as_a_local_data_dir() {
    let (first, _second, admin_dir) = crate::databases::two_servers();
    let node_dir = DataDir::new();
    let s = Server::start_with(&node_dir.0, &["--primary-url", &first.url, "--sync-interval-ms", "200"]);
    let mut contacts = Vec::new();
    for database in ["main", "second"] {
        let (t, placed) = crate::databases::tenant_in(&admin_dir.0, Some(database));
        assert_eq!(placed, database);
        poll("the key at the node", || (s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).status == 200).then_some(()));
        let cat = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"})).assert_ok(201)["category"]["id"].clone();
        let body = json!({"businessId": t.business, "name": "Ada", "mobile": "+447700900123", "categoryIds": [cat]});
        let id = s.as_key(&t.key).fresh().post("/api/v1/contacts", &body).assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();
        contacts.push((t, id));
    }
    // The admin command's own replicas, pulled first (the marker file
    // gives the harness's admin commands --primary-url).
    let backup = admin_dir.0.join("backup.tar");
    let out = admin(&admin_dir.0, &["backup", "--to", backup.to_str().unwrap()]);
    assert_eq!(out["businesses"], json!(2), "{out}");
    assert_eq!(out["databases"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect::<Vec<_>>(), vec!["main", "second"], "{out}");
    assert_eq!(admin(&admin_dir.0, &["check"])["ok"], json!(true));
    drop(s);

    let restored = DataDir::new();
    admin(&restored.0, &["restore", "--from", backup.to_str().unwrap()]);
    let list = admin(&restored.0, &["database", "list"]);
    assert_eq!(list["databases"][1], json!({"name": "second", "url": "local", "businesses": 1}), "{list}");
    let s = Server::start(&restored.0);
    for (t, id) in &contacts {
        s.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business)).assert_ok(200);
    }
}

/// A business moved between main's copy and its database's: the backup
/// sees main's placement change and copies again, so the business's rows
/// are where the backup places it.
#[test]
fn a_move_during_the_backup_makes_it_copy_again() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    admin(&dir.0, &["database", "add", "--name", "spare", "--url", "local"]);
    let t = tenant(&dir.0, "all");
    let cat = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"})).assert_ok(201)["category"]["id"].clone();
    let body = json!({"businessId": t.business, "name": "Ada", "mobile": "+447700900123", "categoryIds": [cat]});
    let id = s.as_key(&t.key).fresh().post("/api/v1/contacts", &body).assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();

    // The backup holds once main is copied; the business moves meanwhile.
    let hold = dir.0.join("hold");
    let backup = dir.0.join("backup.tar");
    let taking = Command::new(BIN)
        .args(["admin", "--data-dir"])
        .arg(&dir.0)
        .args(["backup", "--to"])
        .arg(&backup)
        .env("SWITCHBOARD_BACKUP_HOLD", &hold)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    poll("main copied", || hold.exists().then_some(()));
    let moved = admin(&dir.0, &["business", "move", "--business", &t.business, "--to", "spare"]);
    assert_eq!(moved["database"], json!("spare"), "{moved}");
    std::fs::remove_file(&hold).unwrap();
    let out = taking.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("copying again"), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["attempts"], json!(2), "{answer}");
    drop(s);

    let restored = DataDir::new();
    admin(&restored.0, &["restore", "--from", backup.to_str().unwrap()]);
    let s = Server::start(&restored.0);
    s.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business)).assert_ok(200);
    let placed = admin(&restored.0, &["business", "list"]);
    assert_eq!(placed["businesses"][0]["database"], json!("spare"), "{placed}");
}
