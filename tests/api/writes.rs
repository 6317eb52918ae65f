//! Concurrent mutations share write transactions (group commit) without
//! sharing fate: each request commits or fails on its own, an idempotent
//! retry that races its first attempt replays it, and every answered change
//! is there afterwards.

use crate::harness::*;
use serde_json::{json, Value};
use std::process::Command;
use std::sync::{Arc, Barrier};

/// Mobiles raced for; each by two keys, each key sent twice at once.
const MOBILES: usize = 24;

#[test]
fn concurrent_writes_commit_together_and_each_keeps_its_own_outcome() {
    let dir = DataDir::new();
    let log = dir.0.join("server.log");
    let mut command = Command::new(BIN);
    command.env("RUST_LOG", "info,switchboard::writer=debug");
    let server = Server::spawn_command(command, &dir.0, &[], std::fs::File::create(&log).unwrap().into());
    let t = tenant(&dir.0, "all");
    let category = server.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Race"})).assert_ok(201)["category"]["id"].as_str().unwrap().to_string();

    let requests: Vec<(String, String)> = (0..MOBILES).flat_map(|m| ["a", "b"].map(|k| (format!("+1555{m:07}"), format!("race-{m}-{k}")))).flat_map(|r| [r.clone(), r]).collect();
    let barrier = Arc::new(Barrier::new(requests.len()));
    let threads: Vec<_> = requests
        .into_iter()
        .map(|(mobile, key)| {
            let (base, api_key, business, category, barrier) = (server.base.clone(), t.key.clone(), t.business.clone(), category.clone(), barrier.clone());
            std::thread::spawn(move || {
                let body = json!({"businessId": business, "name": "Racer", "mobile": mobile, "categoryIds": [category]});
                let http = reqwest::blocking::Client::new();
                barrier.wait();
                let r = http.post(format!("{base}/api/v1/contacts")).bearer_auth(api_key).header("idempotency-key", &key).json(&body).send().expect("request");
                let status = r.status().as_u16();
                let body: Value = r.json().expect("json");
                (mobile, key, status, body)
            })
        })
        .collect();
    let answers: Vec<(String, String, u16, Value)> = threads.into_iter().map(|t| t.join().unwrap()).collect();

    for m in 0..MOBILES {
        let mobile = format!("+1555{m:07}");
        let mine: Vec<_> = answers.iter().filter(|a| a.0 == mobile).collect();
        // The two sends of one key got one answer: the change ran once.
        for key in ["a", "b"].map(|k| format!("race-{m}-{k}")) {
            let same: Vec<_> = mine.iter().filter(|a| a.1 == key).collect();
            assert_eq!(same.len(), 2);
            assert_eq!(same[0].2, same[1].2, "{key}: {} / {}", same[0].3, same[1].3);
            assert_eq!(same[0].3["data"], same[1].3["data"], "{key}");
        }
        // Of the two keys, one created the contact and the other found it.
        let mut statuses: Vec<u16> = mine.iter().map(|a| a.2).collect();
        statuses.sort();
        assert_eq!(statuses, vec![201, 201, 409, 409], "{mobile}: {mine:?}");
        for a in mine.iter().filter(|a| a.2 == 409) {
            assert_eq!(a.3["error"]["code"], "contact_mobile_exists", "{}", a.3);
        }
        // And the contact the 201 answered is there, with that id.
        let created = mine.iter().find(|a| a.2 == 201).unwrap();
        let id = created.3["data"]["id"].as_str().or(created.3["data"]["contact"]["id"].as_str()).expect("an id").to_string();
        let r = server.as_key(&t.key).get(&format!("/api/v1/contacts/{id}?businessId={}", t.business));
        let data = r.assert_ok(200);
        assert_eq!(data.get("contact").unwrap_or(data)["mobile"], mobile, "{data}");
    }
    let listed = server.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&limit=200", t.business));
    assert_eq!(listed.assert_ok(200)["contacts"].as_array().unwrap().len(), MOBILES);

    // The requests did share transactions: some batch held more than one.
    // Every batch ended before the reads above; its line follows shortly.
    log_containing(&log, "write batch committed");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let text = std::fs::read_to_string(&log).unwrap();
    let biggest = text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|v| v["message"] == "write batch committed").filter_map(|v| v["requests"].as_u64()).max().unwrap_or(0);
    assert!(biggest > 1, "no write batch held more than one request");
}
