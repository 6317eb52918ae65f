//! A misbehaving component (components/testbed) fails its own request with a
//! clean envelope and a rollback; the process keeps serving.

use crate::harness::*;
use serde_json::json;

// The testbed's behaviours, picked by `search` (components/testbed).
const LOOP: &str = "1000";
const BOMB: &str = "1001";
const PANIC: &str = "1002";
const FINE: &str = "1003";

#[test]
fn runaway_components_fail_cleanly_and_the_host_keeps_serving() {
    let dir = DataDir::new();
    let testbed = env!("SWITCHBOARD_TESTBED_WASM");
    let s = Server::start_with(&dir.0, &["--component-override", &format!("contacts={testbed}"), "--request-timeout-ms", "1500"]);
    let t = tenant(&dir.0, "all");
    let list = |search: &str| s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search={search}", t.business));

    // An infinite loop is interrupted at the deadline.
    let r = list(LOOP);
    r.assert_failure(503, "capacity");
    assert_eq!(r.code(), "handler_deadline_exceeded");
    assert_eq!(r.body["error"]["retryable"], true);
    // A memory bomb hits the instance's memory limit.
    let r = list(BOMB);
    r.assert_failure(500, "internal");
    assert_eq!(r.code(), "handler_resource_limit", "{}", r.text);
    // A panic is a trap.
    let r = list(PANIC);
    r.assert_failure(500, "internal");
    assert!(!r.text.contains("testbed panics"), "trap details stay in the log");
    // A write followed by a trap leaves nothing behind.
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "x"}));
    r.assert_failure(500, "internal");
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts/categories?businessId={}", t.business));
    assert_eq!(r.assert_ok(200)["testbedCount"], 0);
    // And the server still answers normally.
    list(FINE).assert_ok(200);
    assert_eq!(s.req().get("/api/v1/openapi.json").status, 200);
}
