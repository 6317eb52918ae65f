//! The job runner across processes: two `serve` processes on one data dir
//! share the work queue, only the lease holder runs jobs, and no job step
//! ever runs twice.

use crate::harness::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn two_nodes_on_one_data_dir_never_double_run_a_job() {
    let dir = DataDir::new();
    let a = Server::start(&dir.0);
    let b = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let nodes = [&a, &b];

    // Four ingestions of several bounded steps each, uploaded through both nodes.
    let rows = 12_000usize;
    let mut ingestions = Vec::new();
    for n in 0..4 {
        let via = nodes[n % 2];
        let src = via.as_key(&t.key).fresh().post("/api/v1/data-sources", &json!({"businessId": t.business, "name": format!("Source {n}"), "class": "structured", "kind": "table"}));
        let src = src.assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
        let mut csv = String::from("id,label\n");
        for i in 0..rows {
            csv.push_str(&format!("{i},row {n}-{i}\n"));
        }
        let up = via
            .as_key(&t.key)
            .fresh()
            .post("/api/v1/data-sources/upload", &json!({"businessId": t.business, "dataSourceId": src, "fileName": "rows.csv", "format": "csv", "contentBase64": b64(csv.as_bytes())}));
        ingestions.push(up.assert_ok(202)["ingestionId"].as_str().unwrap().to_string());
    }

    // Every ingestion ends active with exactly its rows, whichever node asks.
    for (n, id) in ingestions.iter().enumerate() {
        let via = nodes[(n + 1) % 2];
        let started = Instant::now();
        let d = loop {
            let r = via.as_key(&t.key).get(&format!("/api/v1/data-sources/ingestions?businessId={}&ingestionId={id}", t.business));
            let d = r.assert_ok(200).clone();
            if matches!(d["ingestion"]["stage"].as_str(), Some("active" | "failed" | "needs_review")) {
                break d;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "ingestion stuck: {d}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(d["ingestion"]["stage"], "active", "{d}");
        assert_eq!(d["ingestion"]["rowCount"], rows as i64, "{d}");
    }

    // The audit of every run: each (job, fence) ran once (the primary key),
    // each job finished exactly once, nothing completed on a stale fence,
    // and every row was stored once.
    let per_job = sql(&dir.0, "SELECT job_id, SUM(outcome = 'done'), SUM(outcome IN ('stale', 'trapped')), COUNT(*) FROM job_runs GROUP BY job_id");
    let lines: Vec<&str> = per_job.lines().collect();
    assert_eq!(lines.len(), ingestions.len(), "one job per ingestion: {per_job}");
    for l in &lines {
        let cols: Vec<&str> = l.split('|').collect();
        assert_eq!(cols[1], "1", "finished exactly once: {l}");
        assert_eq!(cols[2], "0", "no failed or stale runs: {l}");
        assert!(cols[3].parse::<u32>().unwrap() > 1, "several bounded steps: {l}");
    }
    // No node died, so the first leader kept the lease: one node ran everything.
    assert_eq!(sql(&dir.0, "SELECT COUNT(DISTINCT node) FROM job_runs").trim(), "1");
    let stored = sql(&dir.0, "SELECT COUNT(*), COUNT(DISTINCT version_id || ':' || row_number) FROM ingestion_rows");
    let want = rows * ingestions.len();
    assert_eq!(stored.trim(), format!("{want}|{want}"));
    assert_eq!(sql(&dir.0, "SELECT COUNT(*) FROM jobs WHERE state <> 'done'").trim(), "0");
}

/// Issue 52: a job step's dispatcher instance runs the same business's
/// next step (as a request's instance answers its business's next
/// request), never another business's: each business's deliveries reach
/// its own receiver, B's first step gets a fresh instance although A's is
/// idle, and with warm instances off every step gets a fresh one.
#[test]
fn job_step_instances_are_reused_within_a_business_only() {
    let warm_steps = |s: &Server| s.metric(r#"switchboard_job_step_instances_total{origin="warm"}"#);
    let fresh_steps = |s: &Server| s.metric(r#"switchboard_job_step_instances_total{origin="fresh"}"#);
    for reuse in [true, false] {
        let dir = DataDir::new();
        let s = Server::start_with(&dir.0, if reuse { &[] } else { &["--warm-instances", "0"] });
        let (rx_a, rx_b) = (Receiver::start(), Receiver::start());
        let hook = |pnid: &str, url: &str| {
            let t = tenant(&dir.0, "all");
            admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", pnid]);
            let body = json!({"businessId": t.business, "channel": "chatapp", "phoneNumberId": pnid, "callbackUrl": url, "events": ["chatapp.message.received"], "externalAutomation": true});
            s.as_key(&t.key).post("/api/v1/webhook-subscriptions", &body).assert_ok(201);
            t
        };
        let (_a, _b) = (hook("pn-warm-a", &rx_a.url()), hook("pn-warm-b", &rx_b.url()));
        let inbound = |pnid: &str, from: &str| {
            admin(&dir.0, &["sandbox", "inbound", "--phone-number-id", pnid, "--from", from, "--text", "hello", "--name", "Ada"]);
        };
        // A's deliveries one after another: each is a step of its own.
        for n in 1..=3 {
            inbound("pn-warm-a", &format!("+1555000710{n}"));
            rx_a.wait_for(n);
        }
        let (warm, fresh) = (warm_steps(&s), fresh_steps(&s));
        assert!(fresh >= 1.0, "the first step makes its instance ({warm} warm, {fresh} fresh)");
        if reuse {
            assert!(warm >= 2.0, "A's later steps reuse its instance ({warm} warm, {fresh} fresh)");
        } else {
            assert_eq!(warm, 0.0, "off, no step reuses an instance");
        }
        // B's first delivery: a fresh instance, although A's is idle.
        inbound("pn-warm-b", "+15550007201");
        rx_b.wait_for(1);
        assert!(fresh_steps(&s) > fresh, "another business never gets A's instance");
        // Each receiver got its own business's deliveries only.
        let from = |rx: &Receiver| rx.got().iter().map(|d| d.json()["customer"]["mobileE164"].as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(from(&rx_a), ["+15550007101", "+15550007102", "+15550007103"]);
        assert_eq!(from(&rx_b), ["+15550007201"]);
    }
}
