//! Standard Webhooks (issue 51): every delivery also carries `webhook-id`,
//! `webhook-timestamp` and `webhook-signature`, and the verifiers that
//! integrators install, PyPI's and the npm registry's `standardwebhooks`
//! packages (tests/webhooks/, installed once by its ensure.py), accept real
//! deliveries with the subscription's `signingSecret` as it is, before and
//! after a rotation; and `switchboard webhooks listen`, the local receiver,
//! checks and prints them.

use crate::harness::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

const SUBS: &str = "/api/v1/webhook-subscriptions";
const PNID: &str = "pn-standard-1";

/// Where the two verifiers are (ensure.py's answer), installed once per
/// test process.
fn verifiers() -> &'static Value {
    static READY: OnceLock<Value> = OnceLock::new();
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    READY.get_or_init(|| {
        let script = format!("{}/../tests/webhooks/ensure.py", env!("CARGO_MANIFEST_DIR"));
        let out = Command::new("python3").arg(script).stderr(Stdio::inherit()).output().expect("python3");
        assert!(out.status.success(), "tests/webhooks/ensure.py failed");
        serde_json::from_slice(&out.stdout).expect("ensure.py answers JSON")
    })
}

/// Each delivery checked with `secret` by both packages: (Python's answers,
/// npm's answers), "ok" or the library's error, in order.
fn verify_with_packages(deliveries: &[Delivery], secret: &str) -> (Vec<String>, Vec<String>) {
    let v = verifiers();
    let input: Vec<Value> = deliveries
        .iter()
        .map(|d| {
            let headers: serde_json::Map<String, Value> = d.headers.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            json!({"secret": secret, "headers": headers, "body": d.body})
        })
        .collect();
    let dir = v["node"].as_str().unwrap();
    let python = run_with_stdin(Command::new(v["python"].as_str().unwrap()).arg(Path::new(dir).join("verify.py")), &input);
    let node = run_with_stdin(Command::new("node").arg("verify.mjs").current_dir(dir), &input);
    (python, node)
}

fn run_with_stdin(command: &mut Command, input: &[Value]) -> Vec<String> {
    use std::io::Write as _;
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("start a verifier");
    child.stdin.take().unwrap().write_all(Value::from(input.to_vec()).to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "a verifier failed");
    serde_json::from_slice(&out.stdout).expect("a verifier answers a JSON list")
}

fn setup() -> (DataDir, Server, Tenant) {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--webhook-retry-delays-ms", "100,150,200"]);
    let t = tenant(&dir.0, "all");
    admin(&dir.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", PNID]);
    (dir, s, t)
}

fn subscribe(s: &Server, t: &Tenant, url: &str) -> (String, String) {
    let body = json!({"businessId": t.business, "channel": "chatapp", "phoneNumberId": PNID, "callbackUrl": url,
                      "events": ["chatapp.message.received"], "externalAutomation": true});
    let d = s.as_key(&t.key).post(SUBS, &body).assert_ok(201).clone();
    (d["subscription"]["id"].as_str().unwrap().to_string(), d["signingSecret"].as_str().unwrap().to_string())
}

fn rotate(s: &Server, t: &Tenant, sub: &str) -> String {
    let r = s.as_key(&t.key).post(&format!("{SUBS}/{sub}/rotate-secret"), &json!({"businessId": t.business}));
    r.assert_ok(200)["signingSecret"].as_str().unwrap().to_string()
}

fn inbound(dir: &Path, text: &str) -> String {
    admin(dir, &["sandbox", "inbound", "--phone-number-id", PNID, "--from", "+15550007001", "--text", text])["providerMessageId"].as_str().unwrap().to_string()
}

#[test]
fn the_standard_webhooks_packages_verify_real_deliveries_before_and_after_a_rotation() {
    let (dir, s, t) = setup();
    let rx = Receiver::start();
    let (sub, first) = subscribe(&s, &t, &rx.url());
    let one = inbound(&dir.0, "before the rotation");
    let got = rx.wait_for(1);
    let second = rotate(&s, &t, &sub);
    let two = inbound(&dir.0, "after the rotation");
    let got = [got[0].clone(), rx.wait_for(2)[1].clone()];

    for (d, event) in got.iter().zip([&one, &two]) {
        // Both schemes, one timestamp; the id is the event's (what receivers
        // deduplicate by, the same in every retry).
        assert_eq!(d.header("webhook-id"), event.as_str());
        assert_eq!(d.header("webhook-timestamp"), d.header("X-Service-Timestamp"));
        // As the OpenAPI document's webhooks describe it: v1, and 32 bytes in base64.
        let signature = d.header("webhook-signature");
        assert!(signature.starts_with("v1,") && signature.len() == 47 && signature.ends_with('='), "{:?}", d.headers);
        assert_eq!(d.json()["eventId"], json!(event));
    }
    assert!(verify(&got[0], &first) && verify(&got[1], &second), "the contract's X-Service-Signature still verifies");

    // The secret as the API gave it, with no conversion, in each package.
    let (python, node) = verify_with_packages(&got[..1], &first);
    assert_eq!((python, node), (vec!["ok".to_string()], vec!["ok".to_string()]), "the first secret verifies the first delivery");
    let (python, node) = verify_with_packages(&got[1..], &second);
    assert_eq!((python, node), (vec!["ok".to_string()], vec!["ok".to_string()]), "the rotated secret verifies the next delivery");
    // After the rotation the old secret verifies nothing new, and a body
    // changed on the way verifies under no secret.
    let (python, node) = verify_with_packages(&got[1..], &first);
    assert!(python[0].contains("No matching signature") && node[0].contains("No matching signature"), "{python:?} {node:?}");
    let mut tampered = got[1].clone();
    tampered.body = tampered.body.replace("after the rotation", "after the rotatioN");
    let (python, node) = verify_with_packages(&[tampered], &second);
    assert!(python[0].contains("No matching signature") && node[0].contains("No matching signature"), "{python:?} {node:?}");
}

/// A running `switchboard webhooks listen`: its stdout lines as they come.
struct Listener {
    child: Child,
    lines: mpsc::Receiver<String>,
    port: u16,
}

impl Listener {
    fn start(args: &[&str], env_secret: Option<&str>) -> Listener {
        let port = free_port();
        let mut command = Command::new(BIN);
        command.args(["webhooks", "listen", "--port", &port.to_string()]).args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.env_remove("SWITCHBOARD_WEBHOOK_SECRET");
        if let Some(secret) = env_secret {
            command.env("SWITCHBOARD_WEBHOOK_SECRET", secret);
        }
        let mut child = command.spawn().expect("start webhooks listen");
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // It says where it listens on stderr once the port is open.
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        err.read_line(&mut first).unwrap();
        assert!(first.contains(&format!("http://127.0.0.1:{port}/")), "{first}");
        std::thread::spawn(move || for _ in err.lines().map_while(Result::ok) {});
        Listener { child, lines, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.port)
    }

    /// The next delivery's two lines: the summary, then the body.
    fn next(&self) -> (String, Value) {
        let wait = Duration::from_secs(60);
        let summary = self.lines.recv_timeout(wait).expect("a delivery's line");
        let body = self.lines.recv_timeout(wait).expect("a delivery's body");
        (summary, serde_json::from_str(&body).unwrap_or_else(|e| panic!("the body line is JSON ({e}): {body}")))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn webhooks_listen_prints_each_delivery_with_its_signatures_checked() {
    let (dir, s, t) = setup();
    // Without a secret: printed, answered 2xx, the signatures not checked.
    let open = Listener::start(&[], None);
    let (sub, secret) = subscribe(&s, &t, &open.url());
    let event = inbound(&dir.0, "hello listener");
    let (line, body) = open.next();
    assert!(line.contains("chatapp.message.received") && line.contains(&event) && line.contains("retry 0"), "{line}");
    assert!(line.contains("not checked"), "{line}");
    assert_eq!(body["eventId"], json!(event));
    assert_eq!(body["message"]["text"], "hello listener");
    // The line is printed before the answer goes out: the listener stops
    // once the service has recorded the 200.
    answered(&s, &t, &sub, &event, 200);
    drop(open);

    // With the subscription's secret (the flag): both signatures checked.
    let checked = Listener::start(&["--secret", &secret], None);
    s.as_key(&t.key).patch(&format!("{SUBS}/{sub}"), &json!({"businessId": t.business, "callbackUrl": checked.url()})).assert_ok(200);
    let event = inbound(&dir.0, "signed");
    let (line, body) = checked.next();
    assert!(line.contains(&event) && line.contains("X-Service-Signature ok") && line.contains("webhook-signature ok"), "{line}");
    assert_eq!(body["eventId"], json!(event));
    answered(&s, &t, &sub, &event, 200);
    drop(checked);

    // A wrong secret (here the one before a rotation, from the environment):
    // printed as BAD and answered 401, so the service retries it.
    let stale = Listener::start(&[], Some(&secret));
    s.as_key(&t.key).patch(&format!("{SUBS}/{sub}"), &json!({"businessId": t.business, "callbackUrl": stale.url()})).assert_ok(200);
    rotate(&s, &t, &sub);
    let event = inbound(&dir.0, "after a rotation");
    let (line, _) = stale.next();
    assert!(line.contains(&event) && line.contains("X-Service-Signature BAD") && line.contains("webhook-signature BAD"), "{line}");
    let (again, _) = stale.next();
    assert!(again.contains(&event) && again.contains("retry 1"), "retried after the 401: {again}");
    answered(&s, &t, &sub, &event, 401);
}

/// Waits (bounded) until the delivery log has an attempt of `event` that
/// the receiver answered with `status`.
fn answered(s: &Server, t: &Tenant, sub: &str, event: &str, status: u16) {
    poll(&format!("an attempt of {event} answered {status}"), || {
        let r = s.as_key(&t.key).get(&format!("{SUBS}/{sub}/deliveries?businessId={}&eventId={event}", t.business));
        r.assert_ok(200)["attempts"].as_array().unwrap().iter().any(|a| a["statusCode"] == status).then_some(())
    });
}

#[test]
fn webhooks_listen_refuses_a_secret_that_is_not_a_signing_secret() {
    let out = Command::new(BIN).args(["webhooks", "listen", "--port", "0", "--secret", "hunter2"]).env_remove("SWITCHBOARD_WEBHOOK_SECRET").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--secret") && err.contains("whsec_"), "{err}");
    assert!(!err.contains("hunter2"), "the value is not echoed: {err}");
}
