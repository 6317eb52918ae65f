//! The twilio-carrier plugin (issue 40's second real adapter): a business's
//! calls are placed, followed and recorded through a local fake of a
//! Twilio-style voice API, and the API's signed status callbacks wake the
//! call's waiting step.

use crate::harness::*;
use serde_json::{json, Value};

mod fake;
use fake::{post_signed, Fake, SID, TOKEN};

const PLUGIN: &str = env!("SWITCHBOARD_TWILIO_CARRIER_WASM");

/// POSTs a status callback to our route as the API does; the status and
/// the JSON answer.
fn callback(url: &str, params: &[(&str, &str)], token: &str) -> (u16, Value) {
    let (status, body) = post_signed(url, params, token);
    (status, serde_json::from_str(&body).unwrap())
}

/// A business whose carrier is the plugin, speaking to `fake`, with credit
/// and a line; its server, the business, its key and the plugin folder.
struct Setup {
    s: Server,
    t: Tenant,
    plugins: String,
    log: std::path::PathBuf,
    _data: DataDir,
}

fn setup(fake: &Fake) -> Setup {
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
    Setup { s, t, plugins, log, _data: data }
}

impl Setup {
    fn events(&self) -> String {
        format!("{}/providers/v1/{}/carrier/events", self.s.base, self.t.business)
    }
    /// A voice agent with `settings`; its id.
    fn agent(&self, instructions: &str, settings: Value) -> String {
        let r = self
            .s
            .as_key(&self.t.key)
            .fresh()
            .post("/api/v1/agents", &json!({"businessId": self.t.business, "channel": "voice", "name": "Caller", "instructions": instructions, "voiceSettings": settings}));
        r.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string()
    }
    /// Starts a call by `agent` to `to`; its id.
    fn call(&self, agent: &str, to: &str) -> String {
        let call = self.s.as_key(&self.t.key).fresh().post("/api/v1/voice/calls", &json!({"businessId": self.t.business, "agentId": agent, "toNumber": to}));
        call.assert_ok(202)["callId"].as_str().unwrap().to_string()
    }
    fn report(&self, call: &str) -> Value {
        self.s.as_key(&self.t.key).get(&format!("/api/v1/voice/calls/{call}?businessId={}", self.t.business)).assert_ok(200).clone()
    }
}

#[test]
fn the_twilio_style_carrier_places_follows_and_records_a_call_through_the_api() {
    let fake = Fake::start();
    let x = setup(&fake);
    let agent = x.agent("Confirm the appointment.", json!({"firstGreeting": "Hello from Acme."}));
    let call = x.call(&agent, "+15550004321");

    // Placement: a form-encoded POST under basic auth, its callbacks to our
    // address with our call id.
    let placed = poll("the placement", || fake.placements().pop());
    assert_eq!((placed.form("To"), placed.form("From"), placed.form("Record")), (vec!["+15550004321".to_string()], vec!["+15550009999".to_string()], vec!["true".to_string()]));
    let callback_url = format!("{}?call={call}", x.events());
    assert_eq!(placed.form("StatusCallback"), vec![callback_url.clone()]);
    assert_eq!(placed.form("StatusCallbackEvent"), vec!["initiated", "ringing", "answered", "completed"]);

    // A callback not signed with the account's token is refused and wakes nothing.
    let answered = [("AccountSid", SID), ("CallSid", "CA1"), ("CallStatus", "in-progress")];
    let (status, body) = callback(&callback_url, &answered, "not-the-token");
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("signature_invalid")), "{body}");
    // Answered: the API's callback wakes the call, whose poll reads the
    // status. A callback that finds the call's step running wakes nothing
    // (the step's own poll follows); repeated, it is harmless, and one
    // finds the step waiting and makes it due.
    let (status, _) = fake.set("CA1", "in-progress", 0);
    assert_eq!(status, 200);
    poll("a callback to wake the call's waiting step", || {
        let (status, body) = callback(&callback_url, &answered, TOKEN);
        assert_eq!((status, &body["data"]["received"]), (200, &json!(1)), "{body}");
        (body["data"]["woken"] == 1).then_some(())
    });
    poll("the call answered", || Some(x.report(&call)).filter(|r| r["call"]["status"] == "answered"));

    // The customer hangs up: the completed callback ends the call, billed by
    // the API's duration.
    let (status, _) = fake.set("CA1", "completed", 7);
    assert_eq!(status, 200);
    let ended = poll("the call's end", || Some(x.report(&call)).filter(|r| r["call"]["status"] == "completed"));
    assert_eq!(ended["call"]["recordingAvailable"], json!(true), "{ended}");

    // The recording comes from the API, read by ranges.
    let url = ended["recordingUrl"].as_str().unwrap().to_string();
    let http = reqwest::blocking::Client::new();
    let whole = http.get(&url).send().unwrap();
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.bytes().unwrap().to_vec(), fake::recording());
    let part = http.get(&url).header("range", "bytes=10-19").send().unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().unwrap().to_vec(), fake::recording()[10..20].to_vec());
    assert!(fake.got().iter().any(|g| g.path.ends_with("/Recordings/RE1.wav") && !g.range.is_empty()));

    // Another business's carrier (the embedded sandbox) takes no callbacks.
    let other = tenant(&x._data.0, "all");
    let (status, body) = callback(&format!("{}/providers/v1/{}/carrier/events", x.s.base, other.business), &answered, TOKEN);
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("provider_events_not_accepted")), "{body}");
    // The token never reaches the log.
    assert!(!std::fs::read_to_string(&x.log).unwrap().contains(TOKEN));
    let _ = &x.plugins;
}

/// Never twice: the API places a call and its answer is lost. The adapter
/// finds the call by our id (the calls to the number, and of those the one
/// whose status callbacks carry our call id) instead of placing it again.
#[test]
fn a_placement_whose_answer_was_lost_is_found_not_placed_again() {
    let fake = Fake::start();
    let x = setup(&fake);
    // An earlier call to the same number, long ended, is not taken for it.
    let agent = x.agent("Confirm the appointment.", json!({}));
    let first = x.call(&agent, "+15550004321");
    poll("the first placement", || fake.placements().pop());
    fake.set("CA1", "busy", 0);
    poll("the first call's end", || Some(x.report(&first)).filter(|r| r["call"]["status"] == "busy"));

    fake.drop_next_answer();
    let call = x.call(&agent, "+15550004321");
    // The call is found as the API placed it: it rings, answers and ends
    // under the API's sid, billed by its duration.
    poll("the second placement", || Some(fake.placements()).filter(|p| p.len() == 2));
    poll("the call found (ringing)", || {
        let _ = fake.set("CA2", "ringing", 0);
        Some(x.report(&call)).filter(|r| r["call"]["status"] == "ringing")
    });
    fake.set("CA2", "completed", 3);
    let ended = poll("the call's end", || Some(x.report(&call)).filter(|r| r["call"]["status"] != "ringing"));
    assert_eq!(ended["call"]["status"], "completed", "{ended}");
    assert_eq!(fake.placements().len(), 2, "the second call was placed once");
    assert_eq!(fake.calls().len(), 2);
    assert!(fake.got().iter().any(|g| g.method == "GET" && g.path.ends_with("/Calls/CA2/Events.json")), "the adapter looked the call up");
}
