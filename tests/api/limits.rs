//! Rate limits (per API key, per business) and load shedding, on the real
//! binary: 429 with Retry-After and RateLimit-* headers, another tenant
//! unaffected, and 503 overloaded beyond the bound of requests in flight.

use crate::harness::*;
use std::time::Duration;

fn get(s: &Server, t: &Tenant) -> reqwest::blocking::Response {
    reqwest::blocking::Client::new().get(format!("{}/api/v1/contacts?businessId={}&limit=1", s.base, t.business)).bearer_auth(&t.key).send().unwrap()
}

fn header(r: &reqwest::blocking::Response, name: &str) -> Option<String> {
    r.headers().get(name).map(|v| v.to_str().unwrap().to_string())
}

#[test]
fn a_business_flood_meets_429_and_another_business_is_served() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--rate-limit-business", "5", "--rate-limit-key", "1000"]);
    let (a, b) = (tenant(&dir.0, "all"), tenant(&dir.0, "all"));
    // Unauthenticated requests take no token.
    for _ in 0..20 {
        assert_eq!(s.req().get(&format!("/api/v1/contacts?businessId={}", a.business)).status, 401);
    }
    let first = get(&s, &a);
    assert_eq!(first.status(), 200);
    assert_eq!(header(&first, "ratelimit-limit").as_deref(), Some("10"), "a burst of twice the rate");
    assert_eq!(header(&first, "ratelimit-remaining").as_deref(), Some("9"));
    assert_eq!(header(&first, "ratelimit-reset").as_deref(), Some("1"), "1 of 10 used, refilled 5 a second");
    // Flood: the bucket (10, refilled 5 a second) runs dry.
    let mut refused = None;
    for _ in 0..40 {
        let r = get(&s, &a);
        if r.status() == 429 {
            refused = Some(r);
            break;
        }
        // Seconds until full again: ⌈(Limit − Remaining) / rate⌉, as at the edge (tests/api/edge.rs).
        let left: u32 = header(&r, "ratelimit-remaining").unwrap().parse().unwrap();
        assert_eq!(header(&r, "ratelimit-reset"), Some((10 - left).div_ceil(5).to_string()));
    }
    let refused = refused.expect("a flood of 40 meets a 429");
    let retry_after: u64 = header(&refused, "retry-after").expect("Retry-After").parse().unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    assert_eq!(header(&refused, "ratelimit-remaining").as_deref(), Some("0"));
    let body: serde_json::Value = refused.json().unwrap();
    assert_eq!(body["error"]["category"], "rate_limit");
    assert_eq!(body["error"]["code"], "rate_limited");
    assert_eq!(body["error"]["retryable"], true);
    assert!(body["error"]["message"].as_str().unwrap().contains("business"), "{body}");
    // Another business has a bucket of its own.
    let other = get(&s, &b);
    assert_eq!(other.status(), 200);
    assert_eq!(header(&other, "ratelimit-remaining").as_deref(), Some("9"));
    // And a's bucket refills.
    std::thread::sleep(Duration::from_secs(retry_after + 1));
    assert_eq!(get(&s, &a).status(), 200);
}

#[test]
fn requests_beyond_the_bound_in_flight_are_shed_with_503() {
    let dir = DataDir::new();
    let testbed = env!("SWITCHBOARD_TESTBED_WASM");
    let s = Server::start_with(&dir.0, &["--component-override", &format!("contacts={testbed}"), "--request-timeout-ms", "3000", "--max-in-flight", "1"]);
    let t = tenant(&dir.0, "all");
    // One request loops until its 3 s deadline, holding the only place.
    let (base, key, biz) = (s.base.clone(), t.key.clone(), t.business.clone());
    let busy = std::thread::spawn(move || reqwest::blocking::Client::new().get(format!("{base}/api/v1/contacts?businessId={biz}&search=1000")).bearer_auth(key).send().unwrap().status().as_u16());
    let shed = poll("a shed request", || {
        std::thread::sleep(Duration::from_millis(100));
        let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search=1003", t.business));
        (r.status == 503).then_some(r)
    });
    shed.assert_failure(503, "capacity");
    assert_eq!(shed.code(), "overloaded");
    assert_eq!(shed.body["error"]["retryable"], true);
    assert_eq!(busy.join().unwrap(), 503, "the looping request ends at its deadline");
    // With the place free again, requests are served.
    s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search=1003", t.business)).assert_ok(200);
}
