//! What the job runner guarantees for steps that call out (issue 10 points 3
//! and 4): a hung webhook receiver holds up only its own deliveries; an
//! attempt is committed before its request goes out, so `retryNumber` keeps
//! rising across a `kill -9`; and a step that takes over a job after its
//! lease was lost never repeats a request another step already made (each
//! request carries its own `Idempotency-Key`, counted by the receiver).

use crate::harness::*;
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SUBS: &str = "/api/v1/webhook-subscriptions";

/// A business with a connected chatapp number and a subscription of every
/// message event to `url`.
fn business_with_hook(s: &Server, dir: &Path, pnid: &str, url: &str) -> Tenant {
    let t = tenant(dir, "all");
    admin(dir, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", pnid]);
    s.as_key(&t.key)
        .post(
            SUBS,
            &json!({"businessId": t.business, "channel": "chatapp", "phoneNumberId": pnid, "callbackUrl": url,
                    "events": ["chatapp.message.received"], "externalAutomation": true}),
        )
        .assert_ok(201);
    t
}

fn inbound(dir: &Path, pnid: &str, from: &str, text: &str) {
    admin(dir, &["sandbox", "inbound", "--phone-number-id", pnid, "--from", from, "--text", text, "--name", "Ada"]);
}

fn attempts_of(dir: &Path, business: &str) -> usize {
    sql(dir, &format!("SELECT COUNT(*) FROM webhook_attempts WHERE business_id = '{business}'")).trim().parse().unwrap()
}

#[test]
fn a_hung_receiver_holds_up_only_its_own_deliveries() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--webhook-timeout-ms", "8000", "--webhook-retry-delays-ms", "100,100,100"]);
    let hung = Receiver::start();
    hung.script(vec![Reply::Hang(Duration::from_secs(12))]);
    let healthy = Receiver::start();
    let a = business_with_hook(&s, &dir.0, "pn-hung", &hung.url());
    let b = business_with_hook(&s, &dir.0, "pn-healthy", &healthy.url());

    // Tenant A's delivery goes out and hangs for the whole timeout.
    inbound(&dir.0, "pn-hung", "+15550007001", "to a receiver that hangs");
    hung.wait_for(1);

    // Meanwhile tenant B's inbound message reaches its receiver and B's send
    // reaches `sent`, while A's attempt is still open (not yet recorded).
    inbound(&dir.0, "pn-healthy", "+15550007002", "to a healthy receiver");
    let got = healthy.wait_for(1);
    assert_eq!(got[0].json()["customer"]["mobileE164"], "+15550007002");
    let sent = s.as_key(&b.key).fresh().post("/api/v1/messages", &json!({"businessId": b.business, "phoneNumberId": "pn-healthy", "to": "+15550007002", "type": "text", "text": "hi"}));
    let id = sent.assert_ok(202)["messageId"].as_str().unwrap().to_string();
    poll("B's message to be sent", || {
        let d = s.as_key(&b.key).get(&format!("/api/v1/messages/{id}?businessId={}", b.business)).assert_ok(200).clone();
        matches!(d["status"].as_str(), Some("sent" | "delivered" | "read")).then_some(())
    });
    assert_eq!(attempts_of(&dir.0, &a.business), 0, "A's hung attempt is still open while B's work went through");
    // A's attempt ends with the timeout and is retried as usual.
    poll("A's hung attempt to be recorded", || (attempts_of(&dir.0, &a.business) >= 1).then_some(()));
    hung.wait_for(2);
}

/// The receiver's count of requests per `Idempotency-Key`.
fn per_key(rx: &Receiver) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for d in rx.got() {
        *m.entry(d.header("Idempotency-Key").to_string()).or_default() += 1;
    }
    m
}

fn signal(s: &Server, sig: &str) {
    assert!(Command::new("kill").arg(format!("-{sig}")).arg(s.child.id().to_string()).status().unwrap().success());
}

#[test]
fn retry_number_keeps_rising_across_a_kill_9_mid_delivery() {
    let dir = DataDir::new();
    let args = ["--webhook-timeout-ms", "30000", "--webhook-retry-delays-ms", "100,100,100"];
    let mut s = Server::start_with(&dir.0, &args);
    let rx = Receiver::concurrent();
    rx.script(vec![Reply::Hang(Duration::from_secs(20))]);
    let t = business_with_hook(&s, &dir.0, "pn-kill", &rx.url());
    inbound(&dir.0, "pn-kill", "+15550007003", "killed mid-delivery");
    let first = rx.wait_for(1);
    assert_eq!(first[0].json()["retryNumber"], 0);
    s.child.kill().unwrap();
    s.child.wait().unwrap();

    // The restarted node leads once the dead one's lease runs out, finds the
    // interrupted attempt and makes the next one: retryNumber 1, a new key.
    let _s = Server::start_with(&dir.0, &args);
    let got = rx.wait_for(2);
    let second = got[1].json();
    assert_eq!(second["retryNumber"], 1, "the attempt made before the kill counts: {second}");
    assert_eq!(second["eventId"], first[0].json()["eventId"]);
    assert_ne!(got[1].header("Idempotency-Key"), got[0].header("Idempotency-Key"));
    poll("the interrupted attempt to be recorded", || {
        let rows = sql(&dir.0, &format!("SELECT retry_number, IFNULL(status_code, 'none') FROM webhook_attempts WHERE business_id = '{}' ORDER BY retry_number", t.business));
        (rows.trim() == "0|none\n1|200").then_some(())
    });
}

#[test]
fn a_step_taking_over_a_lost_lease_never_repeats_the_request() {
    let dir = DataDir::new();
    let args = ["--webhook-timeout-ms", "30000", "--webhook-retry-delays-ms", "100,100,100"];
    let first = Server::start_with(&dir.0, &args);
    let rx = Receiver::concurrent();
    rx.script(vec![Reply::Hang(Duration::from_secs(14))]);
    let t = business_with_hook(&first, &dir.0, "pn-takeover", &rx.url());
    inbound(&dir.0, "pn-takeover", "+15550007004", "one request per key");
    rx.wait_for(1);
    let hang_ends = Instant::now() + Duration::from_secs(14);

    // The first node stalls with its request in flight; a second node takes
    // the dispatcher over (after the stalled node's leader lease runs out)
    // and with it the job, under a new fence.
    signal(&first, "STOP");
    let second = Server::start_with(&dir.0, &args);
    let got = rx.wait_for(2);
    assert_eq!(got[1].json()["retryNumber"], 1);

    // The stalled node wakes up, its request ends; its late completion is
    // refused by the fence and it makes no further request.
    signal(&first, "CONT");
    std::thread::sleep(hang_ends.saturating_duration_since(Instant::now()) + Duration::from_millis(2000));
    let keys = per_key(&rx);
    assert_eq!(keys.len(), 2, "two attempts, each under its own key: {keys:?}");
    assert!(keys.values().all(|n| *n == 1), "no key was sent twice: {keys:?}");
    let state = sql(&dir.0, &format!("SELECT state FROM jobs WHERE business_id = '{}' AND kind = 'webhooks.deliver'", t.business));
    assert_eq!(state.trim(), "done");
    drop(second);
    drop(first);
}
