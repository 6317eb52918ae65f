//! The twilio-carrier plugin (issue 40's second real adapter): a business's
//! calls are placed, followed and recorded through a local fake of a
//! Twilio-style voice API, and the API's signed status callbacks wake the
//! call's waiting step.

use crate::harness::*;
use base64::Engine as _;
use serde_json::{json, Value};

mod bench;
mod fake;
use fake::{post_signed, Fake, Move, SID, TOKEN};

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
    with_business(fake, data, s, plugins, log, 1)
}

/// The business of [`setup`] on a server started already, with `lines`.
fn with_business(fake: &Fake, data: DataDir, s: Server, plugins: String, log: std::path::PathBuf, lines: u32) -> Setup {
    let t = tenant(&data.0, "all");
    admin(&data.0, &["voice", "configure", "--business", &t.business, "--lines", &lines.to_string()]);
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
    /// A structured source (sku, name, price) with two rows; its id.
    fn prices(&self) -> String {
        let k = || self.s.as_key(&self.t.key);
        let created = k().fresh().post("/api/v1/data-sources", &json!({"businessId": self.t.business, "name": "Prices", "class": "structured", "kind": "table"}));
        let id = created.assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
        let csv = base64::engine::general_purpose::STANDARD.encode("sku,name,price\nA1,Widget,10\nB2,Gadget,20\n");
        let up = k().fresh().post("/api/v1/data-sources/upload", &json!({"businessId": self.t.business, "dataSourceId": id, "fileName": "prices.csv", "format": "csv", "contentBase64": csv}));
        let ingestion = up.assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
        poll("the prices to be active", || {
            let r = k().get(&format!("/api/v1/data-sources/ingestions?businessId={}&ingestionId={ingestion}", self.t.business));
            (r.data()["ingestion"]["stage"] == "active").then_some(())
        });
        id
    }
    /// The call's end, once its report says so.
    fn ended(&self, call: &str) -> Value {
        poll("the call's end", || Some(self.report(call)).filter(|r| r["call"]["endedAt"].is_string() && !r["call"]["endReason"].is_null()))
    }
    /// The transcript as (speaker, text).
    fn transcript(r: &Value) -> Vec<(String, String)> {
        r["transcript"].as_array().unwrap().iter().map(|t| (t["speaker"].as_str().unwrap().to_string(), t["text"].as_str().unwrap().to_string())).collect()
    }
    fn report(&self, call: &str) -> Value {
        self.s.as_key(&self.t.key).get(&format!("/api/v1/voice/calls/{call}?businessId={}", self.t.business)).assert_ok(200).clone()
    }
}

/// A whole conversation through the API: the call's answer asks for its
/// first turn, the greeting is said inside a speech `<Gather>`, the
/// customer's words come back as the `<Gather>`'s action, the agent's
/// grounded answer (a lookup) is the next TwiML, and the customer's goodbye
/// is answered by `end_call`: `<Say>` then `<Hangup/>`.
#[test]
fn a_call_through_the_twilio_style_carrier_holds_a_conversation() {
    let fake = Fake::start();
    let x = setup(&fake);
    let prices = x.prices();
    let agent = x.s.as_key(&x.t.key).fresh().post(
        "/api/v1/agents",
        &json!({"businessId": x.t.business, "channel": "voice", "name": "Seller", "instructions": "Answer questions about prices.", "dataSourceIds": [prices],
                "voiceSettings": {"firstGreeting": "Hello from Acme."}}),
    );
    let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    let call = x.call(&agent, "+15550004321");

    // Placement: a form-encoded POST under basic auth, its callbacks to our
    // address with our call id, its TwiML a redirect to the first turn.
    let placed = poll("the placement", || fake.placements().pop());
    assert_eq!((placed.form("To"), placed.form("From"), placed.form("Record")), (vec!["+15550004321".to_string()], vec!["+15550009999".to_string()], vec!["true".to_string()]));
    let callback_url = format!("{}?call={call}", x.events());
    assert_eq!(placed.form("StatusCallback"), vec![callback_url.clone()]);
    assert_eq!(placed.form("StatusCallbackEvent"), vec!["initiated", "ringing", "answered", "completed"]);
    let base = format!("{}/providers/v1/{}/carrier", x.s.base, x.t.business);
    assert_eq!(placed.form("Twiml"), vec![format!("<Response><Redirect method=\"POST\">{base}/turn?call={call}&amp;turn=0</Redirect></Response>")]);

    // A callback not signed with the account's token is refused.
    let answered = [("AccountSid", SID), ("CallSid", "CA1"), ("CallStatus", "in-progress")];
    let (status, body) = callback(&callback_url, &answered, "not-the-token");
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("signature_invalid")), "{body}");

    let customer = fake.pick_up("CA1", vec![Move::Say("How much is B2?"), Move::Say("Thanks, that's all. Goodbye.")]);
    customer.join().unwrap();
    let ended = x.ended(&call);
    assert_eq!(fake.twiml_errors(), Vec::<String>::new());
    let grounded = "From Prices (sku = B2): sku: B2; name: Gadget; price: 20";
    let goodbye = "Thank you for your time. Goodbye.";
    assert_eq!(
        Setup::transcript(&ended),
        [("assistant", "Hello from Acme."), ("customer", "How much is B2?"), ("assistant", grounded), ("customer", "Thanks, that's all. Goodbye."), ("assistant", goodbye)]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(fake.said(), ["Hello from Acme.", grounded, goodbye]);
    assert_eq!((ended["call"]["status"].as_str(), ended["call"]["endedBy"].as_str(), ended["call"]["endReason"].as_str()), (Some("completed"), Some("agent"), Some("agent_ended_call")), "{ended}");
    assert!(ended["call"]["chargedMicrocredits"].as_i64().unwrap() > 0, "billed by the API's duration: {ended}");
    // The documents: the greeting said before listening (no barge-in over
    // it), then the answer inside the next `<Gather>`, and the goodbye then
    // the hang-up. Nothing was said through the REST API.
    let docs = fake.docs();
    assert_eq!(docs.len(), 4, "{docs:?}");
    assert!(docs[1].starts_with("<Response><Say>Hello from Acme.</Say><Gather input=\"speech\""), "{}", docs[1]);
    assert!(docs[1].contains(&format!("action=\"{base}/turn?call={call}&amp;turn=2\"")) || docs[1].contains(&format!("action=\"{base}/turn?call={call}&amp;turn=1\"")), "{}", docs[1]);
    assert!(docs[2].contains(&format!("partialResultCallback=\"{base}/partial?call={call}&amp;turn=2\"")), "{}", docs[2]);
    assert_eq!(docs[3], format!("<Response><Say>{goodbye}</Say><Hangup/></Response>"));
    assert!(!fake.got().iter().any(|g| g.path.ends_with("/Calls/CA1.json") && !g.form("Twiml").is_empty()));

    // A replayed speech post is answered as before and runs no turn again.
    let speech = [("AccountSid", SID), ("CallSid", "CA1"), ("CallStatus", "in-progress"), ("SpeechResult", "How much is B2?"), ("Confidence", "0.91")];
    let turn = |n: u32| format!("{base}/turn?call={call}&turn={n}");
    let (status, again) = post_signed(&turn(1), &speech, TOKEN);
    assert_eq!((status, again), (200, docs[2].clone()));
    assert_eq!(Setup::transcript(&x.report(&call)).len(), 5);
    // Wrong signatures on each carrier route are refused, and record nothing.
    for url in [turn(3), format!("{base}/partial?call={call}&turn=3")] {
        let (status, body) = post_signed(&url, &speech, "not-the-token");
        assert!(status == 401 && body.contains("signature_invalid"), "{url}: {status} {body}");
    }
    let (status, body) = post_signed(&turn(3), &speech, TOKEN);
    assert_eq!(status, 200, "a signed post of an ended call is answered with the end: {body}");
    assert_eq!(body, "<Response><Hangup/></Response>");
    // A post that names a call the business does not have.
    let (status, body) = post_signed(&format!("{base}/turn?call=0190aaaa-0000-7000-8000-000000000000&turn=1"), &speech, TOKEN);
    assert!(status == 404 && body.contains("call_not_found"), "{status} {body}");

    // The recording comes from the API, read by ranges.
    assert_eq!(ended["call"]["recordingAvailable"], json!(true), "{ended}");
    let url = ended["recordingUrl"].as_str().unwrap().to_string();
    let http = reqwest::blocking::Client::new();
    let whole = http.get(&url).send().unwrap();
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.bytes().unwrap().to_vec(), fake::recording());
    let part = http.get(&url).header("range", "bytes=10-19").send().unwrap();
    assert_eq!(part.status(), 206);
    assert_eq!(part.bytes().unwrap().to_vec(), fake::recording()[10..20].to_vec());

    // Another business's carrier (the embedded sandbox) takes no callbacks
    // and hears no turns.
    let other = tenant(&x._data.0, "all");
    for route in ["events", "turn"] {
        let (status, body) = callback(&format!("{}/providers/v1/{}/carrier/{route}?call={call}&turn=1", x.s.base, other.business), &answered, TOKEN);
        assert_eq!((status, body["error"]["code"].as_str()), (404, Some("provider_events_not_accepted")), "{body}");
    }
    // The token never reaches the log.
    assert!(!std::fs::read_to_string(&x.log).unwrap().contains(TOKEN));
    let _ = &x.plugins;
}

/// Silence: the `<Gather>` times out and posts no words; the agent nudges
/// once, then ends the call by its settings.
#[test]
fn silence_on_the_twilio_style_carrier_nudges_then_ends_the_call() {
    let fake = Fake::start();
    let x = setup(&fake);
    let agent = x.agent("Confirm the appointment.", json!({"firstGreeting": "Hello?", "nudgeAfterSilenceSeconds": 1, "disconnectAfterSilenceSeconds": 2}));
    let call = x.call(&agent, "+15550004321");
    poll("the placement", || fake.placements().pop());
    fake.pick_up("CA1", vec![Move::Silence, Move::Silence, Move::Silence, Move::Silence]).join().unwrap();
    let ended = x.ended(&call);
    assert_eq!(fake.twiml_errors(), Vec::<String>::new());
    let said: Vec<String> = Setup::transcript(&ended).into_iter().map(|(_, t)| t).collect();
    assert_eq!(said, ["Hello?", "Are you still there?", "I haven't heard anything for a while, so I'll end the call now. Goodbye."]);
    assert_eq!((ended["call"]["endedBy"].as_str(), ended["call"]["endReason"].as_str()), (Some("system"), Some("silence_timeout")), "{ended}");
}

/// Barge-in: with `allowGreetingInterrupt` the greeting is said inside the
/// `<Gather>`, the customer speaks over it (a partial result first), and
/// `repeatInterruptedSentence` says the sentence cut after the answer, or
/// not.
#[test]
fn speaking_over_the_greeting_on_the_twilio_style_carrier_follows_the_repeat_setting() {
    let fake = Fake::start();
    let x = setup(&fake);
    let greeting = "Hi. This is Acme calling about your order today.";
    let repeated = "This is Acme calling about your order today.";
    for (n, repeat) in [(1, true), (2, false)] {
        let agent = x.agent("Confirm the order.", json!({"firstGreeting": greeting, "allowGreetingInterrupt": true, "repeatInterruptedSentence": repeat}));
        let call = x.call(&agent, "+15550004321");
        poll("the placement", || Some(fake.placements()).filter(|p| p.len() == n));
        fake.pick_up(&format!("CA{n}"), vec![Move::BargeIn("Hello? Who is this?"), Move::Say("Bye.")]).join().unwrap();
        let ended = x.ended(&call);
        assert_eq!(fake.twiml_errors(), Vec::<String>::new());
        let turns = Setup::transcript(&ended);
        assert_eq!(turns[0].1, greeting);
        assert_eq!(turns[1], ("customer".to_string(), "Hello? Who is this?".to_string()));
        let answer = format!("You said: \"Hello? Who is this?\". How can I help further?{}", if repeat { format!(" {repeated}") } else { String::new() });
        assert_eq!(turns[2], ("assistant".to_string(), answer), "{turns:?}");
        assert!(fake.said().contains(&format!("{greeting} [cut]")));
    }
}

/// The customer hangs up while the agent speaks: the call ends as theirs.
#[test]
fn a_customer_who_hangs_up_mid_turn_ends_the_call() {
    let fake = Fake::start();
    let x = setup(&fake);
    let agent = x.agent("Confirm the appointment.", json!({"firstGreeting": "Hello from Acme."}));
    let call = x.call(&agent, "+15550004321");
    poll("the placement", || fake.placements().pop());
    fake.pick_up("CA1", vec![Move::Say("Who is this?"), Move::HangUp]).join().unwrap();
    let ended = x.ended(&call);
    assert_eq!((ended["call"]["status"].as_str(), ended["call"]["endedBy"].as_str(), ended["call"]["endReason"].as_str()), (Some("completed"), Some("customer"), Some("customer_hung_up")), "{ended}");
    assert_eq!(Setup::transcript(&ended).len(), 3);
    assert!(fake.said().last().unwrap().ends_with("[cut]"));
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
