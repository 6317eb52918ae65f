//! A local fake of the Twilio-style voice API the `twilio-carrier` plugin
//! speaks: calls placed and updated with form-encoded POSTs under basic
//! auth and read back as JSON (one by sid, or listed by `To` and `From`
//! with their events: the requests the fake made for them), status
//! callbacks posted to the placement's `StatusCallback` signed in
//! `X-Twilio-Signature`, and one recording served with byte ranges. It can
//! drop its answer to a placement it made (`drop_next_answer`).
//!
//! Once a call is answered ([`Fake::pick_up`]) it runs the call's TwiML as
//! the API does, with a scripted customer ([`Move`]): `<Redirect>` and a
//! speech `<Gather>`'s action are POSTed to us (signed) and our answer is
//! the next document; the customer speaks, stays silent (the `<Gather>`
//! times out after its `timeout`), speaks over the words inside a
//! `<Gather>` (a partial result first) or hangs up. Every document is
//! checked against the TwiML elements and attributes the adapter uses
//! ([`Fake::twiml_errors`]).

use crate::harness::*;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use std::io::Write as _;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use url::form_urlencoded;

pub const SID: &str = "AC0123456789";
pub const TOKEN: &str = "auth-token-5150";

/// The fake's recording: a WAV header and a body of known bytes.
pub fn recording() -> Vec<u8> {
    let mut w = b"RIFF\x24\x10\x00\x00WAVEfmt ".to_vec();
    w.extend((0..4000u32).map(|i| (i % 251) as u8));
    w
}

/// A request the fake received.
#[derive(Clone, Debug)]
pub struct Got {
    pub method: String,
    pub path: String,
    pub authorization: String,
    pub form: Vec<(String, String)>,
    pub range: String,
}

impl Got {
    pub fn form(&self, name: &str) -> Vec<String> {
        self.form.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
    }
}

/// A call the fake placed.
#[derive(Clone, Debug, Default)]
pub struct Call {
    pub sid: String,
    pub to: String,
    pub from: String,
    pub created: String,
    pub status: String,
    pub duration: u64,
    pub callback: String,
    /// The addresses of the requests the fake made for the call, in order.
    pub events: Vec<String>,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    got: Vec<Got>,
    drop_answers: u32,
    /// Every TwiML document received: the placement's and our answers.
    docs: Vec<String>,
    /// What a document broke of the TwiML the adapter may use.
    errors: Vec<String>,
    /// What the call said (`<Say>`), in order; a cut one ends in ` [cut]`.
    said: Vec<String>,
    /// The placement's TwiML of each call, by sid.
    twiml: Vec<(String, String)>,
    /// Each speech post: the words and how long our answer took.
    turns: Vec<(String, std::time::Duration)>,
    /// The longest a customer thinks before speaking (ms; 0: at once).
    think_ms: u64,
}

/// What the scripted customer does at a speech `<Gather>`.
#[derive(Clone, Debug)]
pub enum Move {
    /// Says these words once the agent's words have played.
    Say(&'static str),
    /// Says nothing: the `<Gather>` times out.
    Silence,
    /// Speaks over the agent's words inside the `<Gather>`, 0.4 s into
    /// them.
    BargeIn(&'static str),
    /// Hangs up while the agent speaks.
    HangUp,
}

/// A TwiML verb as the fake runs it.
#[derive(Debug)]
enum Verb {
    Say(String),
    Pause,
    Hangup,
    Redirect(String),
    Gather { action: String, partial: Option<String>, timeout: u64, say: Option<String> },
}

/// The elements and attributes the adapter may use (TwiML's names).
const ALLOWED: [(&str, &[&str]); 6] = [
    ("Response", &[]),
    ("Say", &["voice", "language"]),
    ("Pause", &["length"]),
    ("Hangup", &[]),
    ("Redirect", &["method"]),
    ("Gather", &["input", "action", "method", "actionOnEmptyResult", "timeout", "speechTimeout", "partialResultCallback", "partialResultCallbackMethod", "language"]),
];

/// An open element: its name, attributes and text so far.
type Open = (String, Vec<(String, String)>, String);

/// Parses a TwiML document into the verbs of its `<Response>`, checking
/// every element, attribute, nesting and required value.
fn parse(doc: &str) -> Result<Vec<Verb>, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(doc);
    let mut stack: Vec<Open> = Vec::new();
    let mut verbs = Vec::new();
    let mut gather_say: Option<String> = None;
    let mut root_seen = false;
    loop {
        let event = reader.read_event().map_err(|e| format!("not XML: {e}"))?;
        let (start, end) = match &event {
            Event::Start(e) | Event::Empty(e) => {
                let name = e.name().as_ref().to_string();
                let Some((_, allowed)) = ALLOWED.iter().find(|(n, _)| *n == name) else { return Err(format!("element <{name}> is not one the adapter uses")) };
                let mut attrs = Vec::new();
                for a in e.attributes() {
                    let a = a.map_err(|e| format!("bad attribute: {e}"))?;
                    let key = a.key.as_ref().to_string();
                    if !allowed.contains(&key.as_str()) {
                        return Err(format!("attribute {key} of <{name}> is not one the adapter uses"));
                    }
                    attrs.push((key, a.normalized_value(quick_xml::XmlVersion::Implicit1_0).map_err(|e| format!("bad value: {e}"))?.to_string()));
                }
                let parent = stack.last().map(|(n, _, _)| n.as_str());
                match (parent, name.as_str()) {
                    (None, "Response") if !root_seen => root_seen = true,
                    (Some("Response"), "Say" | "Pause" | "Hangup" | "Redirect" | "Gather") => {}
                    (Some("Gather"), "Say" | "Pause") => {}
                    (p, n) => return Err(format!("<{n}> inside {p:?}")),
                }
                (Some((name, attrs)), matches!(event, Event::Empty(_)))
            }
            Event::End(_) => (None, true),
            Event::Text(t) => {
                if let Some(top) = stack.last_mut() {
                    top.2 += t;
                }
                (None, false)
            }
            Event::GeneralRef(r) => {
                let c = match &**r {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    "apos" => "'",
                    other => return Err(format!("unknown entity {other}")),
                };
                if let Some(top) = stack.last_mut() {
                    top.2 += c;
                }
                (None, false)
            }
            Event::Eof => break,
            Event::Decl(_) | Event::Comment(_) => (None, false),
            other => return Err(format!("unexpected {other:?}")),
        };
        if let Some((name, attrs)) = start {
            stack.push((name, attrs, String::new()));
        }
        if !end {
            continue;
        }
        let (name, attrs, text) = stack.pop().ok_or("an end without a start")?;
        let attr = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let inside_gather = stack.last().is_some_and(|(n, _, _)| n == "Gather");
        let text = text.trim().to_string();
        let verb = match name.as_str() {
            "Response" => continue,
            "Say" if text.is_empty() => return Err("an empty <Say>".into()),
            "Say" if inside_gather => {
                gather_say = Some(text);
                continue;
            }
            "Say" => Verb::Say(text),
            "Pause" => Verb::Pause,
            "Hangup" => Verb::Hangup,
            "Redirect" if !text.starts_with("http") => return Err(format!("<Redirect> to {text:?}")),
            "Redirect" => Verb::Redirect(text),
            "Gather" => {
                let action = attr("action").filter(|a| a.starts_with("http")).ok_or("a <Gather> without an absolute action")?;
                if attr("input").as_deref() != Some("speech") || attr("actionOnEmptyResult").as_deref() != Some("true") {
                    return Err("a <Gather> that is not input=speech with actionOnEmptyResult=true".into());
                }
                let timeout = attr("timeout").and_then(|t| t.parse().ok()).filter(|t| (1..=60).contains(t)).ok_or("a <Gather> timeout outside 1..60")?;
                Verb::Gather { action, partial: attr("partialResultCallback"), timeout, say: gather_say.take() }
            }
            _ => continue,
        };
        if inside_gather {
            continue;
        }
        verbs.push(verb);
    }
    if !root_seen {
        return Err("no <Response>".into());
    }
    Ok(verbs)
}

pub struct Fake {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

/// `X-Twilio-Signature` of a POST to `url` with `params`, keyed with `token`.
pub fn sign(url: &str, params: &[(&str, &str)], token: &str) -> String {
    let mut sorted: Vec<&(&str, &str)> = params.iter().collect();
    sorted.sort();
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(token.as_bytes()).unwrap();
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// POSTs a form to our server as the API does: signed over the address and
/// the sorted parameters with `token`. The status and the body.
pub fn post_signed(url: &str, params: &[(&str, &str)], token: &str) -> (u16, String) {
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(params.iter().copied()).finish();
    let r = reqwest::blocking::Client::new().post(url).header("content-type", "application/x-www-form-urlencoded").header("x-twilio-signature", sign(url, params, token)).body(body).send().unwrap();
    (r.status().as_u16(), r.text().unwrap())
}

impl Fake {
    pub fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let st = st.clone();
                std::thread::spawn(move || serve(stream, &st));
            }
        });
        Fake { port, state }
    }

    pub fn got(&self) -> Vec<Got> {
        self.state.lock().unwrap().got.clone()
    }

    pub fn calls(&self) -> Vec<Call> {
        self.state.lock().unwrap().calls.clone()
    }

    /// The placements the fake received.
    pub fn placements(&self) -> Vec<Got> {
        self.got().into_iter().filter(|g| g.method == "POST" && g.path.ends_with("/Calls.json")).collect()
    }

    pub fn docs(&self) -> Vec<String> {
        self.state.lock().unwrap().docs.clone()
    }

    /// Customers think up to `ms` before each line they say (their calls'
    /// turns then spread out as real ones do, instead of all coming at once).
    pub fn think(&self, ms: u64) {
        self.state.lock().unwrap().think_ms = ms;
    }

    /// Each speech post's words and how long our answer to it took.
    pub fn turn_times(&self) -> Vec<(String, std::time::Duration)> {
        self.state.lock().unwrap().turns.clone()
    }

    pub fn twiml_errors(&self) -> Vec<String> {
        self.state.lock().unwrap().errors.clone()
    }

    pub fn said(&self) -> Vec<String> {
        self.state.lock().unwrap().said.clone()
    }

    /// The customer picks up call `sid`: the in-progress callback, then the
    /// call runs its TwiML with `script` as the customer, on a thread of
    /// its own, until one side hangs up.
    pub fn pick_up(&self, sid: &str, script: Vec<Move>) -> std::thread::JoinHandle<()> {
        let (status, body) = self.set(sid, "in-progress", 0);
        assert_eq!(status, 200, "{body}");
        let st = self.state.clone();
        let doc = st.lock().unwrap().twiml.iter().find(|(s, _)| s == sid).map(|(_, d)| d.clone()).unwrap();
        let sid = sid.to_string();
        let fake = Fake { port: self.port, state: st.clone() };
        std::thread::spawn(move || fake.run(&sid, doc, script.into()))
    }

    /// Runs the call's documents until it ends.
    fn run(&self, sid: &str, mut doc: String, mut script: std::collections::VecDeque<Move>) {
        let started = std::time::Instant::now();
        let (to, from) = {
            let s = self.state.lock().unwrap();
            let c = s.calls.iter().find(|c| c.sid == sid).unwrap();
            (c.to.clone(), c.from.clone())
        };
        let post = |url: &str, extra: &[(&str, &str)]| -> Option<String> {
            let mut params = vec![("AccountSid", SID), ("CallSid", sid), ("CallStatus", "in-progress"), ("To", to.as_str()), ("From", from.as_str())];
            params.extend_from_slice(extra);
            {
                let mut s = self.state.lock().unwrap();
                if let Some(c) = s.calls.iter_mut().find(|c| c.sid == sid) {
                    c.events.push(url.to_string());
                }
            }
            let (status, body) = post_signed(url, &params, TOKEN);
            if status != 200 {
                self.state.lock().unwrap().errors.push(format!("POST {url}: {status} {body}"));
                return None;
            }
            Some(body)
        };
        let end = |fake: &Fake| {
            let duration = started.elapsed().as_secs().max(1);
            fake.set(sid, "completed", duration);
        };
        loop {
            self.state.lock().unwrap().docs.push(doc.clone());
            let verbs = match parse(&doc) {
                Ok(v) => v,
                Err(e) => {
                    self.state.lock().unwrap().errors.push(format!("{e}: {doc}"));
                    return end(self);
                }
            };
            let mut next = None;
            for verb in verbs {
                let say = |text: String| self.state.lock().unwrap().said.push(text);
                match verb {
                    Verb::Say(text) => say(text),
                    Verb::Pause => {}
                    Verb::Hangup => return end(self),
                    Verb::Redirect(url) => {
                        next = post(&url, &[]);
                        break;
                    }
                    Verb::Gather { action, partial, timeout, say: inside } => {
                        match script.pop_front().unwrap_or(Move::HangUp) {
                            Move::HangUp => {
                                if let Some(t) = inside {
                                    say(format!("{t} [cut]"));
                                }
                                return end(self);
                            }
                            Move::Silence => {
                                inside.map(say);
                                std::thread::sleep(std::time::Duration::from_secs(timeout));
                                next = post(&action, &[]);
                            }
                            Move::Say(words) => {
                                inside.map(say);
                                let think = self.state.lock().unwrap().think_ms;
                                if think > 0 {
                                    // A pause of its own for each line, the same in every run.
                                    let h = words.bytes().fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
                                    std::thread::sleep(std::time::Duration::from_millis(h % think));
                                }
                                let asked = std::time::Instant::now();
                                next = post(&action, &[("SpeechResult", words), ("Confidence", "0.91")]);
                                self.state.lock().unwrap().turns.push((words.to_string(), asked.elapsed()));
                            }
                            Move::BargeIn(words) => {
                                let (Some(partial), Some(t)) = (partial, inside) else {
                                    self.state.lock().unwrap().errors.push(format!("no barge-in possible: {doc}"));
                                    return end(self);
                                };
                                std::thread::sleep(std::time::Duration::from_millis(400));
                                post(&partial, &[("UnstableSpeechResult", words), ("Stability", "0.8")]);
                                say(format!("{t} [cut]"));
                                next = post(&action, &[("SpeechResult", words), ("Confidence", "0.88")]);
                            }
                        }
                        break;
                    }
                }
            }
            match next {
                Some(d) => doc = d,
                // The document ran out (or our answer failed): the API
                // hangs up.
                None => return end(self),
            }
        }
    }

    /// The next placement is made, and its answer never sent.
    pub fn drop_next_answer(&self) {
        self.state.lock().unwrap().drop_answers += 1;
    }

    /// Sets a call's status and duration and posts the status callback
    /// (signed) as the API does; the callback's status and body.
    pub fn set(&self, sid: &str, status: &str, duration: u64) -> (u16, String) {
        let callback = {
            let mut s = self.state.lock().unwrap();
            let call = s.calls.iter_mut().find(|c| c.sid == sid).unwrap();
            call.status = status.into();
            call.duration = duration;
            call.events.push(call.callback.clone());
            call.callback.clone()
        };
        let duration = duration.to_string();
        let mut params = vec![("AccountSid", SID), ("CallSid", sid), ("CallStatus", status)];
        if status == "completed" {
            params.push(("CallDuration", duration.as_str()));
        }
        post_signed(&callback, &params, TOKEN)
    }
}

/// Answers one request.
fn serve(mut stream: std::net::TcpStream, st: &Arc<Mutex<State>>) {
    let Some(req) = read_request(&stream) else { return };
    let account = format!("/2010-04-01/Accounts/{SID}");
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{SID}:{TOKEN}")));
    let mut parts = req.request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
    let (path, query) = target.split_once('?').map(|(p, q)| (p.to_string(), q.to_string())).unwrap_or((target.clone(), String::new()));
    let header = |n: &str| req.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v.clone()).unwrap_or_default();
    let form: Vec<(String, String)> = form_urlencoded::parse(&req.body).into_owned().collect();
    let got = Got { method: method.clone(), path: path.clone(), authorization: header("authorization"), form: form.clone(), range: header("range") };
    let mut s = st.lock().unwrap();
    s.got.push(got.clone());
    let answer = |status: u16, body: Value| (status, "application/json", body.to_string().into_bytes(), String::new());
    let call_json = |c: &Call| {
        let duration = if c.status == "completed" { json!(c.duration.to_string()) } else { Value::Null };
        json!({"sid": c.sid, "to": c.to, "from": c.from, "status": c.status, "duration": duration, "date_created": c.created})
    };
    let sid_of = |p: &str| p.strip_prefix(&format!("{account}/Calls/")).map(|rest| rest.split(['/', '.']).next().unwrap_or("").to_string());
    let (status, kind, body, extra) = if got.authorization != basic {
        answer(401, json!({"code": 20003, "message": "Authenticate"}))
    } else if method == "POST" && path == format!("{account}/Calls.json") {
        let sid = format!("CA{}", s.calls.len() + 1);
        let callback = got.form("StatusCallback").pop().unwrap_or_default();
        let created = httpdate::fmt_http_date(std::time::SystemTime::now());
        let call = Call { sid: sid.clone(), to: got.form("To").join(""), from: got.form("From").join(""), created, status: "queued".into(), callback: callback.clone(), ..Call::default() };
        s.calls.push(call.clone());
        let twiml = got.form("Twiml").join("");
        s.twiml.push((sid.clone(), twiml));
        if s.drop_answers > 0 {
            // The call is placed; its answer is lost on the way back. The
            // API still reports the call as initiated.
            s.drop_answers -= 1;
            s.calls.last_mut().unwrap().events.push(callback.clone());
            drop(s);
            drop(stream);
            let _ = post_signed(&callback, &[("AccountSid", SID), ("CallSid", &sid), ("CallStatus", "initiated")], TOKEN);
            return;
        }
        answer(201, call_json(&call))
    } else if method == "GET" && path == format!("{account}/Calls.json") {
        let q: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let wanted = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let calls: Vec<Value> = s.calls.iter().rev().filter(|c| wanted("To").is_none_or(|t| t == c.to) && wanted("From").is_none_or(|f| f == c.from)).map(call_json).collect();
        answer(200, json!({"calls": calls, "page": 0}))
    } else if let Some(sid) = sid_of(&path).filter(|sid| s.calls.iter().any(|c| &c.sid == sid)) {
        let c = s.calls.iter_mut().find(|c| c.sid == sid).unwrap();
        if path.ends_with("/Events.json") {
            let events: Vec<Value> = c.events.iter().map(|u| json!({"request": {"method": "POST", "url": u}})).collect();
            answer(200, json!({"events": events}))
        } else if path.ends_with("/Recordings.json") {
            answer(200, json!({"recordings": [{"sid": "RE1", "uri": format!("{account}/Recordings/RE1.json")}]}))
        } else {
            if got.form("Status") == ["completed"] {
                c.status = "completed".into();
                c.duration = c.duration.max(5);
            }
            answer(200, call_json(c))
        }
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
