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
