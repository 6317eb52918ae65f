//! The twilio-carrier plugin (issue 40's second real adapter): a business's
//! calls are placed, followed and recorded through a local fake of a
//! Twilio-style voice API, and the API's signed status callbacks wake the
//! call's waiting step.

use crate::harness::*;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use std::io::Write as _;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use url::form_urlencoded;

const PLUGIN: &str = env!("SWITCHBOARD_TWILIO_CARRIER_WASM");
const SID: &str = "AC0123456789";
const TOKEN: &str = "auth-token-5150";
/// The fake's recording: a WAV header and a body of known bytes.
fn recording() -> Vec<u8> {
    let mut w = b"RIFF\x24\x10\x00\x00WAVEfmt ".to_vec();
    w.extend((0..4000u32).map(|i| (i % 251) as u8));
    w
}

#[derive(Clone, Debug)]
struct Got {
    method: String,
    path: String,
    authorization: String,
    form: Vec<(String, String)>,
    range: String,
}

#[derive(Default)]
struct State {
    status: String,
    duration: u64,
    got: Vec<Got>,
}

/// A local fake of the voice API: calls placed and updated with
/// form-encoded POSTs under basic auth, read back as JSON, one recording
/// served with byte ranges.
struct Fake {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Fake {
    fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State { status: "queued".into(), ..State::default() }));
        let st = state.clone();
        std::thread::spawn(move || {
            let account = format!("/2010-04-01/Accounts/{SID}");
            let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{SID}:{TOKEN}")));
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(req) = read_request(&stream) else { continue };
                let mut parts = req.request_line.split(' ');
                let (method, path) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
                let header = |n: &str| req.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v.clone()).unwrap_or_default();
                let form: Vec<(String, String)> = form_urlencoded::parse(&req.body).into_owned().collect();
                let got = Got { method: method.clone(), path: path.clone(), authorization: header("authorization"), form: form.clone(), range: header("range") };
                let mut s = st.lock().unwrap();
                s.got.push(got.clone());
                let answer = |status: u16, body: Value| (status, "application/json", body.to_string().into_bytes(), String::new());
                let (status, kind, body, extra) = if got.authorization != basic {
                    answer(401, json!({"code": 20003, "message": "Authenticate"}))
                } else if method == "POST" && path == format!("{account}/Calls.json") {
                    s.status = "queued".into();
                    answer(201, json!({"sid": "CA1", "status": "queued"}))
                } else if path == format!("{account}/Calls/CA1.json") {
                    if form.iter().any(|(k, v)| k == "Status" && v == "completed") {
                        s.status = "completed".into();
                        s.duration = s.duration.max(5);
                    }
                    let duration = if s.status == "completed" { json!(s.duration.to_string()) } else { Value::Null };
                    answer(200, json!({"sid": "CA1", "status": s.status, "duration": duration}))
                } else if path == format!("{account}/Calls/CA1/Recordings.json") {
                    answer(200, json!({"recordings": [{"sid": "RE1", "uri": format!("{account}/Recordings/RE1.json")}]}))
                } else if path == format!("{account}/Recordings/RE1.wav") {
                    let wav = recording();
                    let (from, to) = got.range.strip_prefix("bytes=").and_then(|r| r.split_once('-')).map(|(a, b)| (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap())).unwrap();
                    if from >= wav.len() {
                        (416, "text/plain", Vec::new(), format!("content-range: bytes */{}\r\n", wav.len()))
                    } else {
                        let to = to.min(wav.len() - 1);
                        (206, "audio/wav", wav[from..=to].to_vec(), format!("content-range: bytes {from}-{to}/{}\r\n", wav.len()))
                    }
                } else {
                    answer(404, json!({"code": 20404, "message": "The requested resource was not found"}))
                };
                drop(s);
                let _ = write!(stream, "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n", body.len());
                let _ = stream.write_all(&body);
            }
        });
        Fake { port, state }
    }
    fn got(&self) -> Vec<Got> {
        self.state.lock().unwrap().got.clone()
    }
    fn set(&self, status: &str, duration: u64) {
        let mut s = self.state.lock().unwrap();
        s.status = status.into();
        s.duration = duration;
    }
}

/// POSTs a status callback to our route as the API does: form-encoded,
/// signed over the address and the sorted parameters with `token`.
fn callback(url: &str, params: &[(&str, &str)], token: &str) -> (u16, Value) {
    let mut sorted: Vec<&(&str, &str)> = params.iter().collect();
    sorted.sort();
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(token.as_bytes()).unwrap();
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(params.iter().copied()).finish();
    let r = reqwest::blocking::Client::new().post(url).header("content-type", "application/x-www-form-urlencoded").header("x-twilio-signature", signature).body(body).send().unwrap();
    (r.status().as_u16(), r.json().unwrap())
}

#[test]
fn the_twilio_style_carrier_places_follows_and_records_a_call_through_the_api() {
    let fake = Fake::start();
    let data = DataDir::new();
    let (s, plugins, log) = serve_adapter_plugin(&data, "twilio-carrier", PLUGIN, "api.twilio.com", fake.port);

    let t = tenant(&data.0, "all");
    admin(&data.0, &["voice", "configure", "--business", &t.business, "--lines", "1"]);
    admin(&data.0, &["credits", "add", "--business", &t.business, "--microcredits", "5000000"]);
    let events = format!("{}/providers/v1/{}/carrier/events", s.base, t.business);
    let settings = [
        format!("base-url=http://localhost:{}", fake.port),
        format!("account-sid={SID}"),
        format!("auth-token={TOKEN}"),
        format!("callback-url={events}"),
        "from=+15550009999".to_string(),
        "poll-ms=60000".to_string(),
    ];
    let mut args = vec!["provider", "use", "--business", &t.business, "--interface", "carrier", "--plugin", "twilio-carrier", "--plugin-dir", &plugins];
    for setting in &settings {
        args.extend(["--setting", setting.as_str()]);
    }
    admin(&data.0, &args);
    let agent = s.as_key(&t.key).fresh().post(
        "/api/v1/agents",
        &json!({"businessId": t.business, "channel": "voice", "name": "Caller", "instructions": "Confirm the appointment.", "voiceSettings": {"firstGreeting": "Hello from Acme."}}),
    );
    let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    let call = s.as_key(&t.key).fresh().post("/api/v1/voice/calls", &json!({"businessId": t.business, "agentId": agent, "toNumber": "+15550004321"}));
    let call = call.assert_ok(202)["callId"].as_str().unwrap().to_string();
    let report = || s.as_key(&t.key).get(&format!("/api/v1/voice/calls/{call}?businessId={}", t.business)).assert_ok(200).clone();

    // Placement: a form-encoded POST under basic auth, its callbacks to our
    // address with our call id.
    let placed = poll("the placement", || fake.got().into_iter().find(|g| g.method == "POST" && g.path.ends_with("/Calls.json")));
    let form = |name: &str| placed.form.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect::<Vec<_>>();
    assert_eq!((form("To"), form("From"), form("Record")), (vec!["+15550004321".to_string()], vec!["+15550009999".to_string()], vec!["true".to_string()]));
    assert_eq!(form("StatusCallback"), vec![format!("{events}?call={call}")]);
    assert_eq!(form("StatusCallbackEvent"), vec!["initiated", "ringing", "answered", "completed"]);
    let callback_url = format!("{events}?call={call}");

    // A callback not signed with the account's token is refused and wakes nothing.
    let answered = [("AccountSid", SID), ("CallSid", "CA1"), ("CallStatus", "in-progress")];
    let (status, body) = callback(&callback_url, &answered, "not-the-token");
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("signature_invalid")), "{body}");
    // Answered: the callback wakes the call, whose poll reads the status,
    // and the agent's greeting is said on the line.
    fake.set("in-progress", 0);
    // A callback that finds the call's step running wakes nothing (the
    // step's own poll follows); repeated, it is harmless, and one finds the
    // step waiting and makes it due.
    poll("a callback to wake the call's waiting step", || {
        let (status, body) = callback(&callback_url, &answered, TOKEN);
        assert_eq!((status, &body["data"]["received"]), (200, &json!(1)), "{body}");
        (body["data"]["woken"] == 1).then_some(())
    });
    let said = poll("the greeting said on the line", || {
        fake.got().into_iter().find(|g| g.path.ends_with("/Calls/CA1.json") && g.form.iter().any(|(k, v)| k == "Twiml" && v.contains("<Say>Hello from Acme.</Say>")))
    });
    assert_eq!(said.method, "POST");
    assert_eq!(report()["call"]["status"], "answered");

    // The customer hangs up: the completed callback ends the call, billed by
    // the API's duration.
    fake.set("completed", 7);
    let (status, _) = callback(&callback_url, &[("AccountSid", SID), ("CallSid", "CA1"), ("CallStatus", "completed"), ("CallDuration", "7")], TOKEN);
    assert_eq!(status, 200);
    let ended = poll("the call's end", || Some(report()).filter(|r| r["call"]["status"] == "completed"));
    assert_eq!(ended["call"]["recordingAvailable"], json!(true), "{ended}");

    // The recording comes from the API, read by ranges.
    let url = ended["recordingUrl"].as_str().unwrap().to_string();
    let http = reqwest::blocking::Client::new();
    let whole = http.get(&url).send().unwrap();
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.bytes().unwrap().to_vec(), recording());
    let part = http.get(&url).header("range", "bytes=10-19").send().unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().unwrap().to_vec(), recording()[10..20].to_vec());
    assert!(fake.got().iter().any(|g| g.path.ends_with("/Recordings/RE1.wav") && !g.range.is_empty()));

    // Another business's carrier (the embedded sandbox) takes no callbacks.
    let other = tenant(&data.0, "all");
    let (status, body) = callback(&format!("{}/providers/v1/{}/carrier/events", s.base, other.business), &answered, TOKEN);
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("provider_events_not_accepted")), "{body}");
    // The token never reaches the log.
    assert!(!std::fs::read_to_string(&log).unwrap().contains(TOKEN));
}
