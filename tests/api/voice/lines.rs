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

#[test]
fn a_call_is_billed_at_the_price_active_when_the_carrier_places_it() {
    let c = Calls::with_flags(1, 50_000_000, 20, &["--voice-line-poll-ms", "3600000"]);
    // A rise, then a fall, each between a call's start and its placement.
    let mut start_price = PRICE;
    for (n, new_price) in [(1, 40_000), (2, 10_000)] {
        // One line, held by a call that stays connected: the second call
        // is started at one price and placed only after the price changed.
        let live = c.call("+15550006666");
        c.until(&live, "the answer", |r| r["call"]["status"] == "answered");
        let waiting = c.call(&format!("+1555000123{n}"));
        poll("the second call finding the line taken", || (c.db(&format!("SELECT line_waits > 0 FROM calls WHERE id = '{waiting}'")) == "1").then_some(()));
        assert_eq!(c.db(&format!("SELECT reserved FROM calls WHERE id = '{waiting}'")), (30 * start_price).to_string(), "reserved at the start's price");

        admin(&c.dir.0, &["voice", "configure", "--business", &c.t.business, "--price-per-block", &new_price.to_string()]);
        c.cancel(&live, &format!("free-the-line-{n}")).assert_ok(200);
        c.ended(&live);
        let r = c.ended(&waiting);
        assert_eq!(outcome(&r).0, "completed");
        let charged = r["call"]["chargedMicrocredits"].as_i64().unwrap();
        assert_eq!(charged, blocks(r["call"]["durationSeconds"].as_i64().unwrap()) * new_price, "the price active at placement");
        // The reservation followed the price (a rise reserved on top, a
        // fall released), then the charge and the rest released.
        let moved = if new_price > start_price { format!("reserve:{}", 30 * (new_price - start_price)) } else { format!("release:{}", 30 * (start_price - new_price)) };
        assert_eq!(
            c.db(&format!("SELECT kind || ':' || amount FROM credit_ledger WHERE reference = '{waiting}' ORDER BY id")).replace('\n', " "),
            format!("reserve:{} {moved} charge:{charged} release:{}", 30 * start_price, 30 * new_price - charged)
        );
        assert_eq!(c.balance().1, 0, "nothing stays reserved");
        start_price = new_price;
    }
}
