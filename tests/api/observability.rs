//! Honest metrics (issue 51): every series docs/operations.md names is on
//! a fresh server's `/metrics`, with its `# HELP` and `# TYPE` lines and at
//! 0 where nothing happened yet, and every series there is named in the doc.

use crate::harness::*;
use std::collections::BTreeSet;

/// The `switchboard_*` names in docs/operations.md's "Health and metrics".
fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(format!("{}/../docs/operations.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let start = doc.find("## Health and metrics").expect("the metrics section");
    let section = &doc[start..];
    let section = &section[..section[3..].find("\n## ").map(|i| i + 3).unwrap_or(section.len())];
    let mut names = BTreeSet::new();
    for (i, _) in section.match_indices("switchboard_") {
        let name: String = section[i..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
        names.insert(name);
    }
    names
}

/// The value of the sample line `series` (name and labels as rendered).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).map(|v| v.trim().parse().unwrap()))
}

#[test]
fn every_series_docs_operations_names_is_on_a_fresh_servers_metrics() {
    let names = documented();
    assert!(names.len() >= 20, "the doc names the series: {names:?}");
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let r = s.req().get("/metrics");
    assert_eq!(r.status, 200);
    let text = r.text;

    let mut missing = Vec::new();
    for name in &names {
        let kind = text.lines().find_map(|l| l.strip_prefix(&format!("# TYPE {name} ")).map(str::to_string));
        let help = text.lines().any(|l| l.starts_with(&format!("# HELP {name} ")) && l.len() > name.len() + 8);
        let samples = match kind.as_deref() {
            // A histogram's series are its buckets, sum and count.
            Some("histogram") => text.lines().filter(|l| l.starts_with(&format!("{name}_count"))).count(),
            Some(_) => text.lines().filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} "))).count(),
            None => 0,
        };
        if kind.is_none() || !help || samples == 0 {
            missing.push(format!("{name} (type {kind:?}, help {help}, {samples} series)"));
        }
    }
    assert!(missing.is_empty(), "not on a fresh server's /metrics: {missing:?}\n{text}");

    // The three that appeared only after their first event: there at 0.
    let queued: Vec<&str> = text.lines().filter(|l| l.starts_with("switchboard_jobs_queued{")).collect();
    assert!(queued.iter().any(|l| l.contains("kind=\"webhooks.deliver\"") && l.contains("state=\"pending\"")), "{queued:?}");
    assert!(queued.iter().all(|l| l.ends_with(" 0")), "{queued:?}");
    assert_eq!(sample(&text, "switchboard_jobs_oldest_due_age_seconds{kind=\"messaging.deliver\",state=\"pending\"}"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "switchboard_prepare_seconds_count{operation=\"importContacts\"}"), Some(0.0), "{text}");
    // A counter with a closed label set: every value, at 0.
    for outcome in ["2xx", "3xx", "4xx", "5xx", "timeout", "connection", "refused", "other"] {
        assert_eq!(sample(&text, &format!("switchboard_webhook_attempts_total{{outcome=\"{outcome}\"}}")), Some(0.0), "{outcome}");
    }
    // An operation nobody called yet, at its usual success status.
    assert_eq!(sample(&text, "switchboard_requests_total{operation=\"createContact\",status=\"201\"}"), Some(0.0), "{text}");

    // And the other way: every series on /metrics is named in the doc.
    let served: BTreeSet<String> = text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).map(str::to_string).collect();
    let undocumented: Vec<&String> = served.difference(&names).collect();
    assert!(undocumented.is_empty(), "on /metrics but not in docs/operations.md: {undocumented:?}");

    // A first event moves its series off 0.
    let t = tenant(&dir.0, "all");
    s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).assert_ok(200);
    let after = s.req().get("/metrics").text;
    assert_eq!(sample(&after, "switchboard_requests_total{operation=\"listContacts\",status=\"200\"}"), Some(1.0), "{after}");
    // A request refused at admission counts under its operation too.
    let body = serde_json::json!({"businessId": t.business, "name": "Ada", "mobile": "+15550100001", "categoryIds": []});
    s.as_key(&t.key).fresh().post("/api/v1/contacts", &body).assert_failure(400, "validation");
    s.req().get(&format!("/api/v1/contacts?businessId={}", t.business)).assert_failure(401, "authentication");
    let after = s.req().get("/metrics").text;
    assert_eq!(sample(&after, "switchboard_requests_total{operation=\"createContact\",status=\"400\"}"), Some(1.0), "{after}");
    assert_eq!(sample(&after, "switchboard_requests_total{operation=\"listContacts\",status=\"401\"}"), Some(1.0), "{after}");
}
