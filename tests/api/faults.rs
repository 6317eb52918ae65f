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
    // A prepare step (the import's, before the write transaction) can
    // neither read nor write, nor call a provider (the testbed asks the
    // AI), nor send a request out: the testbed's tries answer what it was told,
    // and an Idempotency-Key replays that answer like a handler's 4xx.
    let import = json!({"businessId": t.business, "categoryIds": [uuid::Uuid::new_v4().to_string()], "csv": "mobile\n+15550100009\n"});
    let r = s.as_key(&t.key).idem("prepare-1").post("/api/v1/contacts/imports", &import);
    r.assert_failure(400, "validation");
    assert_eq!(r.code(), "prepare_store_refused", "{}", r.text);
    assert!(r.message().contains("read: a prepare step") && r.message().contains("write: a prepare step"), "{}", r.text);
    assert!(r.message().contains("provider: prepare_refused: a prepare step"), "{}", r.text);
    assert!(r.message().contains("outbound: prepare_refused: a prepare step"), "{}", r.text);
    let again = s.as_key(&t.key).idem("prepare-1").post("/api/v1/contacts/imports", &import);
    assert!(again.replayed && again.code() == "prepare_store_refused", "{}", again.text);
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts/categories?businessId={}", t.business));
    assert_eq!(r.assert_ok(200)["testbedCount"], 0);
    // And the server still answers normally.
    list(FINE).assert_ok(200);
    assert_eq!(s.req().get("/api/v1/openapi.json").status, 200);
}
