//! Lines: a call waiting for a line is woken when one frees, oldest first.

use super::*;

#[test]
fn a_waiting_call_is_woken_when_a_line_frees_oldest_first() {
    // The safety-net poll of a waiting call is an hour here: within the
    // harness's bounds only the wake-up can place the waiting calls.
    let c = Calls::with_flags(1, 50_000_000, 20, &["--voice-line-poll-ms", "3600000"]);
    // 6666 answers and stays connected: the one line is its until cancelled.
    let live = c.call("+15550006666");
    c.until(&live, "the answer", |r| r["call"]["status"] == "answered");
    let second = c.call("+15550001234");
    let third = c.call("+15550001235");
    let waited = |id: &str| c.db(&format!("SELECT line_waits > 0 FROM calls WHERE id = '{id}'")) == "1";
    poll("both calls finding the line taken", || (waited(&second) && waited(&third)).then_some(()));
    assert_eq!((c.report(&second)["call"]["status"].clone(), c.report(&third)["call"]["status"].clone()), (json!("queued"), json!("queued")));

    // The line frees: the oldest waiting call is placed, the next when that one ends.
    c.cancel(&live, "free-the-line").assert_ok(200);
    let ended_at = |r: &Value| r["call"]["endedAt"].as_str().unwrap().to_string();
    let live_end = ended_at(&c.ended(&live));
    let (second_report, third_report) = (c.ended(&second), c.ended(&third));
    assert_eq!((outcome(&second_report).0, outcome(&third_report).0), ("completed".to_string(), "completed".to_string()));
    let ringing = |id: &str| c.db(&format!("SELECT ringing_at FROM calls WHERE id = '{id}'"));
    assert!(ringing(&second) >= live_end, "the second call rang after the line freed");
    assert!(ringing(&third) >= ended_at(&second_report), "the third call rang after the second ended: one line, oldest first");
}
