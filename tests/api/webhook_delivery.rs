//! Signed webhook delivery (issue 4 point 6) against a real receiver in the
//! test: it verifies every signature and timestamp, and the deliveries are
//! checked for event ids, rising retry numbers, pause/resume, rotation,
//! revocation, and a restart with the receiver down losing nothing.

use crate::harness::*;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

const SUBS: &str = "/api/v1/webhook-subscriptions";
const PNID: &str = "pn-delivery-1";
/// Fast retries for tests: the production default spans two days.
const FAST: &[&str] = &["--webhook-retry-delays-ms", "100,150,200,250,300", "--webhook-timeout-ms", "700"];
/// A schedule that cannot run out while a test waits (the last flag wins).
const PATIENT: &[&str] = &["--webhook-retry-delays-ms", "100,150,200,250,300,300,300,300,300,300,300,300,300,300,300,300,300,300,300,300"];

struct Ctx {
    s: Server,
    t: Tenant,
    dir: DataDir,
}

fn setup(extra: &[&str]) -> Ctx {
    let dir = DataDir::new();
    let mut args: Vec<&str> = FAST.to_vec();
    args.extend_from_slice(extra);
    let s = Server::start_with(&dir.0, &args);
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", PNID]);
    Ctx { s, t, dir }
}

impl Ctx {
    fn subscribe(&self, url: &str) -> (String, String) {
        let r = self.s.as_key(&self.t.key).post(
            SUBS,
            &json!({"businessId": self.t.business, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": url,
                    "events": ["chatapp.message.received"], "externalAutomation": true}),
        );
        let d = r.assert_ok(201);
        (d["subscription"]["id"].as_str().unwrap().to_string(), d["signingSecret"].as_str().unwrap().to_string())
    }
    fn patch(&self, sub: &str, body: Value) {
        let mut b = body;
        b["businessId"] = json!(self.t.business);
        self.s.as_key(&self.t.key).patch(&format!("{SUBS}/{sub}"), &b).assert_ok(200);
    }
}

fn inbound(dir: &Path, from: &str, text: &str) -> String {
    admin(dir, &["sandbox", "inbound", "--phone-number-id", PNID, "--from", from, "--text", text, "--name", "Ada"])["providerMessageId"].as_str().unwrap().to_string()
}

#[test]
fn retries_after_errors_and_timeouts_with_the_same_event_and_rising_retry_number() {
    let c = setup(&[]);
    let rx = Receiver::start();
    rx.script(vec![Reply::Status(500), Reply::Hang(Duration::from_millis(1500)), Reply::Status(503)]);
    let (sub, secret) = c.subscribe(&rx.url());
    let pmid = inbound(&c.dir.0, "+15550009001", "hello there");
    let got = rx.wait_for(4);
    for (i, d) in got.iter().enumerate() {
        assert!(verify(d, &secret), "signature {i} verifies");
        let body = d.json();
        assert_eq!(d.header("X-Service-Event-Id"), pmid);
        assert_eq!(d.header("X-Service-Contract-Version"), "1.1");
        assert_eq!(body["eventId"], json!(pmid));
        assert_eq!(body["retryNumber"], json!(i), "retry numbers rise: {body}");
    }
    let first = got[0].json();
    assert_eq!(first["contractVersion"], "1.1");
    assert_eq!(first["eventType"], "chatapp.message.received");
    assert_eq!(first["businessId"], json!(c.t.business));
    assert_eq!(first["phoneNumberId"], PNID);
    assert_eq!(first["channel"], "chatapp");
    assert_eq!(first["customer"]["mobileE164"], "+15550009001");
    assert_eq!(first["message"], json!({"type": "text", "text": "hello there"}));
    // The fourth attempt was accepted: nothing more arrives, and every
    // attempt is recorded (the timeout without a status).
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(rx.got().len(), 4);
    let attempts = sql(&c.dir.0, &format!("SELECT retry_number, IFNULL(status_code, 'none') FROM webhook_attempts WHERE subscription_id = '{sub}' ORDER BY retry_number"));
    assert_eq!(attempts.trim(), "0|500\n1|none\n2|503\n3|200");
}

#[test]
fn pause_holds_rotate_switches_secret_and_revoke_drops() {
    let c = setup(&[]);
    let rx = Receiver::start();
    let (sub, old_secret) = c.subscribe(&rx.url());
    c.patch(&sub, json!({"status": "paused"}));
    let held = inbound(&c.dir.0, "+15550009002", "while paused");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(rx.got().is_empty(), "a paused subscription holds its events");
    c.patch(&sub, json!({"status": "active"}));
    let got = rx.wait_for(1);
    assert_eq!(got[0].json()["eventId"], json!(held));
    assert_eq!(got[0].json()["retryNumber"], 0);
    assert!(verify(&got[0], &old_secret));

    // Rotate: the next event is signed with the new secret only.
    let r = c.s.as_key(&c.t.key).post(&format!("{SUBS}/{sub}/rotate-secret"), &json!({"businessId": c.t.business}));
    let new_secret = r.assert_ok(200)["signingSecret"].as_str().unwrap().to_string();
    inbound(&c.dir.0, "+15550009002", "after rotation");
    let got = rx.wait_for(2);
    assert!(verify(&got[1], &new_secret));
    assert!(!verify(&got[1], &old_secret), "the old secret never signs again");

    // Revoke: later events are dropped.
    c.s.as_key(&c.t.key).send("DELETE", &format!("{SUBS}/{sub}?businessId={}", c.t.business), None).assert_ok(200);
    inbound(&c.dir.0, "+15550009002", "after revoke");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(rx.got().len(), 2);
}

#[test]
fn a_receiver_down_and_a_killed_service_lose_nothing() {
    let mut c = setup(PATIENT);
    // Reserve a port, then close it: the receiver is down.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let (_sub, secret) = c.subscribe(&url);
    let events: Vec<String> = (0..3).map(|i| inbound(&c.dir.0, "+15550009003", &format!("message {i}"))).collect();
    // Let some attempts fail, then kill the service mid-way.
    std::thread::sleep(Duration::from_millis(600));
    c.s.child.kill().unwrap();
    c.s.child.wait().unwrap();
    // The receiver comes back; so does the service.
    let rx = Receiver::on(TcpListener::bind(("127.0.0.1", port)).unwrap());
    let mut args: Vec<&str> = FAST.to_vec();
    args.extend_from_slice(PATIENT);
    c.s = Server::start_with(&c.dir.0, &args);
    let started = Instant::now();
    loop {
        let ids: std::collections::HashSet<String> = rx.got().iter().map(|d| d.json()["eventId"].as_str().unwrap().to_string()).collect();
        if events.iter().all(|e| ids.contains(e)) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "not every event arrived: {ids:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    for d in rx.got() {
        assert!(verify(&d, &secret));
    }
}

/// The secure default (no `--webhook-allow-private`): a special-purpose
/// target is refused where it is set (create and PATCH, IP literals in
/// every embedding form, `localhost` and names under it, names that resolve
/// to one), and subscriptions made while a server allowed private targets
/// get nothing delivered to their loopback receiver, neither by address nor
/// by a name that resolves to it: each attempt is recorded as refused.
#[test]
fn by_default_private_targets_are_refused_where_set_and_where_used() {
    let c = setup(&[]);
    let rx = Receiver::start();
    let (by_address, _) = c.subscribe(&rx.url());
    let (by_name, _) = c.subscribe(&format!("http://localhost:{}/hook", rx.port));
    drop(c.s);
    let mut args: Vec<&str> = FAST.to_vec();
    args.push(SECURE_DEFAULT);
    let s = Server::start_with(&c.dir.0, &args);
    let create = |url: &str| {
        s.as_key(&c.t.key).post(
            SUBS,
            &json!({"businessId": c.t.business, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": url,
                    "events": ["chatapp.message.received"], "externalAutomation": true}),
        )
    };
    for url in [
        rx.url(),
        "http://localhost:9/hook".to_string(),
        "http://LOCALHOST./hook".into(),
        "https://hooks.localhost/hook".into(),
        "http://10.1.2.3/hook".into(),
        "http://192.168.1.10:8080/hook".into(),
        "http://169.254.169.254/latest/meta-data".into(),
        "https://[::1]/hook".into(),
        "https://[fd00::1]/hook".into(),
        "https://[fe80::1]/hook".into(),
        "https://[64:ff9b::7f00:1]/hook".into(),
        "https://[::ffff:127.0.0.1]/hook".into(),
        "https://[::ffff:7f00:1]/hook".into(),
        "https://[::10.0.0.1]/hook".into(),
        "https://[2002:7f00:1::1]/hook".into(),
        "https://[fec0::1]/hook".into(),
        "https://[2001:db8::1]/hook".into(),
        "https://198.18.0.1/hook".into(),
        "https://240.0.0.1/hook".into(),
        "https://192.0.0.8/hook".into(),
    ] {
        let r = create(&url);
        r.assert_failure(400, "validation");
        assert_eq!(r.code(), "webhook_target_not_public", "{url}: {}", r.text);
        assert_eq!(r.body["error"]["details"][0]["field"], "callbackUrl");
        assert!(r.body["error"]["message"].as_str().unwrap().contains("--webhook-allow-private"), "the refusal says how to allow it: {}", r.text);
    }
    let r = create("https://no-such-host.invalid/hook");
    assert_eq!(r.code(), "webhook_target_unresolvable", "{}", r.text);
    assert_eq!(r.body["error"]["details"][0]["field"], "callbackUrl");
    // A public target is taken; moving it to a private one is refused and
    // leaves it as it was.
    let public = create("https://93.184.215.14/hook");
    let sub = public.assert_ok(201)["subscription"]["id"].as_str().unwrap().to_string();
    let r = s.as_key(&c.t.key).patch(&format!("{SUBS}/{sub}"), &json!({"businessId": c.t.business, "callbackUrl": "http://127.0.0.1:9/x"}));
    assert_eq!(r.code(), "webhook_target_not_public", "{}", r.text);
    let listed = s.as_key(&c.t.key).get(&format!("{SUBS}?businessId={}", c.t.business));
    assert!(listed.text.contains("https://93.184.215.14/hook") && !listed.text.contains("127.0.0.1:9"), "{}", listed.text);
    assert_eq!(sql(&c.dir.0, "SELECT count(*) FROM webhook_subscriptions").trim(), "3", "nothing refused was stored");

    // Where used: the subscriptions made before hold a loopback target, by
    // address and by a name that resolves to it; each delivery attempt is
    // refused before it connects, and the receiver hears nothing.
    inbound(&c.dir.0, "+15550009009", "to a private receiver");
    for old in [&by_address, &by_name] {
        let error = poll("a refused attempt", || {
            let e = sql(&c.dir.0, &format!("SELECT error FROM webhook_attempts WHERE subscription_id = '{old}'"));
            (!e.trim().is_empty()).then_some(e)
        });
        assert!(error.contains("not a public address") && error.contains("--webhook-allow-private"), "{error}");
    }
    let log = s.as_key(&c.t.key).get(&format!("{SUBS}/{by_name}/deliveries?businessId={}", c.t.business));
    let attempt = &log.assert_ok(200)["attempts"][0];
    assert_eq!((attempt["outcome"].as_str(), &attempt["statusCode"]), (Some("failed"), &Value::Null), "{attempt}");
    assert!(rx.got().is_empty());
}

/// The delivery log (newest first, paged, by event) and redelivery on
/// demand: the same event id and body, the next retryNumber, the current
/// secret; scopes `webhooks:read` / `webhooks:write`; tenancy; revoked
/// subscriptions keep their log but take no redelivery.
#[test]
fn the_delivery_log_lists_attempts_and_an_event_is_redelivered_on_demand() {
    let c = setup(&[]);
    let rx = Receiver::start();
    rx.script(vec![Reply::Status(500)]);
    let (sub, secret) = c.subscribe(&rx.url());
    let event = inbound(&c.dir.0, "+15550009010", "log me");
    let got = rx.wait_for(2);
    assert_eq!(got[1].json()["retryNumber"], 1);
    let log_path = |q: &str| format!("{SUBS}/{sub}/deliveries?businessId={}{q}", c.t.business);
    let attempts = poll("two logged attempts", || {
        let r = c.s.as_key(&c.t.key).get(&log_path(""));
        let a = r.assert_ok(200)["attempts"].as_array().unwrap().clone();
        (a.len() == 2).then_some(a)
    });
    // Newest first.
    assert_eq!(attempts[0]["retryNumber"], 1);
    assert_eq!(attempts[0]["outcome"], "delivered");
    assert_eq!(attempts[0]["statusCode"], 200);
    assert_eq!(attempts[0]["error"], Value::Null);
    assert_eq!(attempts[1]["retryNumber"], 0);
    assert_eq!(attempts[1]["outcome"], "rejected");
    assert_eq!(attempts[1]["statusCode"], 500);
    for a in &attempts {
        assert_eq!(a["eventId"], json!(event));
        assert_eq!(a["eventType"], "chatapp.message.received");
        assert!(a["latencyMs"].as_i64().is_some_and(|ms| ms >= 0), "{a}");
        assert!(a["attemptedAt"].as_str().unwrap().ends_with('Z'));
    }
    // Paged.
    let page = c.s.as_key(&c.t.key).get(&log_path("&limit=1"));
    let cursor = page.assert_ok(200)["nextCursor"].as_str().unwrap().to_string();
    assert_eq!(page.data()["attempts"][0]["retryNumber"], 1);
    let rest = c.s.as_key(&c.t.key).get(&log_path(&format!("&limit=1&cursor={cursor}")));
    assert_eq!(rest.assert_ok(200)["attempts"][0]["retryNumber"], 0);
    assert_eq!(rest.data()["nextCursor"], Value::Null);
    // By event.
    let none = c.s.as_key(&c.t.key).get(&log_path("&eventId=no-such-event"));
    assert_eq!(none.assert_ok(200)["attempts"], json!([]));

    // Redeliver: the same event, the next retryNumber, signed.
    let redeliver = |key: &str, event_id: &str| c.s.as_key(key).post(&format!("{SUBS}/{sub}/redeliver"), &json!({"businessId": c.t.business, "eventId": event_id}));
    let r = redeliver(&c.t.key, &event);
    let d = r.assert_ok(202);
    assert_eq!((d["eventId"].as_str(), d["retryNumber"].as_i64(), d["status"].as_str()), (Some(event.as_str()), Some(2), Some("active")));
    let got = rx.wait_for(3);
    assert!(verify(&got[2], &secret));
    let body = got[2].json();
    assert_eq!(body["eventId"], json!(event));
    assert_eq!(body["retryNumber"], 2);
    assert_eq!(body["message"], got[0].json()["message"], "the same event body");
    poll("the redelivery logged", || {
        let a = c.s.as_key(&c.t.key).get(&log_path(&format!("&eventId={event}"))).data()["attempts"].as_array().unwrap().clone();
        (a.len() == 3 && a[0]["retryNumber"] == 2 && a[0]["outcome"] == "delivered").then_some(())
    });
    redeliver(&c.t.key, "no-such-event").assert_failure(404, "not_found");
    assert_eq!(redeliver(&c.t.key, "no-such-event").code(), "event_not_found");

    // Scopes: reading the log needs webhooks:read, redelivering webhooks:write.
    let reader = admin(&c.dir.0, &["key", "create", "--business", &c.t.business, "--scopes", "webhooks:read"])["apiKey"].as_str().unwrap().to_string();
    let writer = admin(&c.dir.0, &["key", "create", "--business", &c.t.business, "--scopes", "webhooks:write"])["apiKey"].as_str().unwrap().to_string();
    c.s.as_key(&reader).get(&log_path("")).assert_ok(200);
    redeliver(&reader, &event).assert_failure(403, "authorization");
    c.s.as_key(&writer).get(&log_path("")).assert_failure(403, "authorization");
    // Another business sees no such subscription.
    let other = tenant(&c.dir.0, "all");
    let r = c.s.as_key(&other.key).get(&format!("{SUBS}/{sub}/deliveries?businessId={}", other.business));
    assert_eq!(r.assert_failure(404, "not_found").code(), "subscription_not_found");

    // Revoked: the log stays readable, redelivery is refused.
    c.s.as_key(&c.t.key).send("DELETE", &format!("{SUBS}/{sub}?businessId={}", c.t.business), None).assert_ok(200);
    assert_eq!(c.s.as_key(&c.t.key).get(&log_path("")).data()["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(redeliver(&c.t.key, &event).assert_failure(409, "conflict").code(), "subscription_revoked");
}

/// Moves the logged attempts of `event` `days` into the past, as if they
/// had been made then: their uuid v7 ids (which carry the time the purge
/// goes by) and `attemptedAt`. The server must be stopped.
fn age_attempts(dir: &Path, event: &str, days: i64) {
    let script = r"import datetime, sqlite3, sys
c = sqlite3.connect(sys.argv[1]); event = sys.argv[2]; days = int(sys.argv[3])
for (old,) in c.execute('SELECT id FROM webhook_attempts WHERE event_id = ?', (event,)).fetchall():
    ms = int(old[:8] + old[9:13], 16) - days * 86400000
    new = '%08x-%04x' % (ms >> 16, ms & 0xffff) + old[13:]
    at = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3] + 'Z'
    c.execute('UPDATE webhook_attempts SET id = ?, attempted_at = ? WHERE id = ?', (new, at, old))
c.commit()";
    // Each database file of the data dir: the event's attempts are in its
    // business's.
    for file in database_files(dir, event) {
        let out = std::process::Command::new("python3").arg("-c").arg(script).arg(file).arg(event).arg(days.to_string()).output().expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// Retention: the delivery log's attempts go after 30 days by default (the
/// purge runs at start and every hour), `--webhook-log-retention-days`
/// sets another, and a redelivery of an event whose log went is a 404
/// that says the log may have been purged.
#[test]
fn the_delivery_log_is_purged_after_its_retention_and_a_purged_event_is_a_clear_404() {
    let c = setup(&[]);
    let rx = Receiver::start();
    let (sub, _) = c.subscribe(&rx.url());
    let old = inbound(&c.dir.0, "+15550009020", "a month ago");
    let recent = inbound(&c.dir.0, "+15550009021", "last month");
    rx.wait_for(2);
    let logged = |event: &str| sql(&c.dir.0, &format!("SELECT count(*) FROM webhook_attempts WHERE event_id = '{event}'")).trim().to_string();
    poll("both attempts logged", || (logged(&old) == "1" && logged(&recent) == "1").then_some(()));
    drop(c.s);
    age_attempts(&c.dir.0, &old, 31);
    age_attempts(&c.dir.0, &recent, 29);

    // The default retention: 30 days.
    let s = Server::start_with(&c.dir.0, FAST);
    poll("the 31-day-old attempt purged at start", || (logged(&old) == "0").then_some(()));
    assert_eq!(logged(&recent), "1", "a 29-day-old attempt is kept");
    let redeliver = |s: &Server, event: &str| s.as_key(&c.t.key).post(&format!("{SUBS}/{sub}/redeliver"), &json!({"businessId": c.t.business, "eventId": event}));
    let r = redeliver(&s, &old);
    assert_eq!(r.assert_failure(404, "not_found").code(), "event_not_found");
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&old) && message.contains("purged") && message.contains("retention"), "{message}");
    let log = s.as_key(&c.t.key).get(&format!("{SUBS}/{sub}/deliveries?businessId={}", c.t.business));
    let attempts = log.assert_ok(200)["attempts"].as_array().unwrap().clone();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["eventId"], json!(recent));
    drop(s);

    // A shorter one, set by the operator.
    let mut args = FAST.to_vec();
    args.extend(["--webhook-log-retention-days", "7"]);
    let s = Server::start_with(&c.dir.0, &args);
    poll("the 29-day-old attempt purged at start", || (logged(&recent) == "0").then_some(()));
    assert_eq!(redeliver(&s, &recent).assert_failure(404, "not_found").code(), "event_not_found");
    assert_eq!(rx.got().len(), 2, "nothing was sent again");
}

/// One event for two subscriptions of one business: the runner hands both
/// deliveries to one step (one dispatcher call, both POSTs sent at once),
/// and each still gets its own outcome: the receiver answering 500 gets
/// its retry (and then its 200), the one answering 200 is done at once;
/// every attempt is recorded once, and each is signed with its own
/// subscription's secret.
#[test]
fn deliveries_sent_together_in_one_step_each_get_their_own_outcome() {
    let dir = DataDir::new();
    let log = dir.0.join("server.log");
    let s = Server::start_logged(&dir.0, FAST, &log);
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", PNID]);
    let c = Ctx { s, t, dir };
    let failing = Receiver::start();
    failing.script(vec![Reply::Status(500)]);
    let fine = Receiver::start();
    let (sub_failing, secret_failing) = c.subscribe(&failing.url());
    let (sub_fine, secret_fine) = c.subscribe(&fine.url());
    let pmid = inbound(&c.dir.0, "+15550009011", "to both");
    let retried = failing.wait_for(2);
    let delivered = fine.wait_for(1);
    for (d, secret, retry) in [(&retried[0], &secret_failing, 0), (&retried[1], &secret_failing, 1), (&delivered[0], &secret_fine, 0)] {
        assert!(verify(d, secret), "each delivery is signed with its own subscription's secret");
        assert_eq!(d.json()["eventId"], json!(pmid));
        assert_eq!(d.json()["retryNumber"], json!(retry));
    }
    assert_ne!(retried[0].header("Idempotency-Key"), delivered[0].header("Idempotency-Key"));
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!((failing.got().len(), fine.got().len()), (2, 1), "nothing is sent twice");
    let attempts = |sub: &str| sql(&c.dir.0, &format!("SELECT retry_number, IFNULL(status_code, 'none') FROM webhook_attempts WHERE subscription_id = '{sub}' ORDER BY retry_number"));
    assert_eq!(attempts(&sub_failing).trim(), "0|500\n1|200");
    assert_eq!(attempts(&sub_fine).trim(), "0|200");
    // Both first attempts ran in one step of two: their step lines say so,
    // each with its own outcome (the retry, moved on by `continue`, counts
    // from 1 again and ran alone).
    let first_steps: Vec<Value> = log_events(&log).into_iter().filter(|v| v["message"] == "job step" && v["span"]["kind"] == "webhooks.deliver" && v["span"]["attempt"] == 1).collect();
    let outcomes: Vec<(&str, i64)> = first_steps.iter().map(|v| (v["outcome"].as_str().unwrap_or_default(), v["span"]["batch"].as_i64().unwrap_or(1))).collect();
    assert!(outcomes.contains(&("continue", 2)) && outcomes.contains(&("done", 2)), "{first_steps:?}");
}
