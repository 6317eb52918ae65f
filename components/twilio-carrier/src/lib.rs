//! `twilio-carrier`: a carrier plugin for a voice API in the style of
//! Twilio's Programmable Voice, written against the provider package
//! (`kit/wit`, world `carrier-webhooks-provider`) and nothing else of
//! Switchboard. The tests load it from a plugin folder and run calls
//! against a local fake of the contract (`tests/api/twilio_carrier.rs`).
//!
//! The contract it speaks (settings `base-url`, `account-sid`, `auth-token`,
//! `callback-url`, optional `from` and `poll-ms`), under
//! `{base-url}/2010-04-01/Accounts/{account-sid}` with HTTP basic auth
//! (account sid, auth token):
//! * place: `POST /Calls.json`, form-encoded `To`, `From`, `Twiml` (a pause
//!   that holds the line until the first `say`), `StatusCallback`
//!   (`callback-url?call=<our call id>`), `StatusCallbackEvent` (each of
//!   initiated, ringing, answered, completed), `Record=true`, `TimeLimit`;
//!   the answer's `sid` goes into the memo;
//! * poll: `GET /Calls/{sid}.json`: `status` (queued, initiated, ringing,
//!   in-progress, completed, busy, no-answer, failed, canceled) and
//!   `duration` (seconds, once ended);
//! * say: `POST /Calls/{sid}.json` with `Twiml` `<Say>` (and `<Hangup/>`
//!   for the last words, else a pause that keeps the line); the API has no
//!   playback progress, so an utterance counts as played at the next poll;
//! * hang up: `POST /Calls/{sid}.json` with `Status=completed`;
//! * recording: `GET /Calls/{sid}/Recordings.json`, then the first one's
//!   `uri` with `.wav` for `.json`, read with a `Range` header;
//! * errors: `{"code", "message"}`; 429 and 5xx are transient;
//! * status callbacks: form-encoded POSTs to the callback address, signed
//!   in `X-Twilio-Signature`: base64 of HMAC-SHA1, keyed with the auth
//!   token, over the address followed by every form parameter's name and
//!   value, sorted by name. They only wake the call: its next poll reads the
//!   status.
//!
//! * a lost placement answer (a transport failure, a 5xx) is
//!   `placement_timeout`: the host then calls `poll` without a memo, which
//!   finds the call by our id ([`find`]) instead of placing it again.
//!
//! * turns (`carrier-webhooks.hear` and `answer`): the placement's TwiML
//!   redirects to `{carrier}/turn?call=<id>&turn=0` (`{carrier}` the
//!   callback address without `/events`), so the answer asks for the first
//!   turn; each turn's answer says the agent's words with a speech
//!   `<Gather>` whose action is the next turn (the words inside it, with
//!   `partialResultCallback` to `{carrier}/partial`, when the customer may
//!   barge in; before it when not), or the words and `<Hangup/>`; the
//!   action's `SpeechResult` and `Confidence` are the customer's; a live
//!   call's `Answered` comes from turn 0, not from its status.
//!
//! Not spoken: playback progress (the API has none; an utterance said by
//! `say`, which this adapter's calls no longer need, counts as played at
//! the next poll), the voice profile (`<Say>` gets no voice or language),
//! streamed audio.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    wit_bindgen::generate!({ world: "carrier-webhooks-provider", path: "../../kit/wit" });
}

use base64::Engine as _;
use bindings::exports::switchboard::provider::carrier::{CallEvent, CarrierError, EndCause, Ended, Guest, Placement, Playback, Progress, RecordingPiece, TimedEvent};
use bindings::exports::switchboard::provider::carrier_webhooks::{self, Heard, TurnAnswer};
use bindings::switchboard::provider::{clock, http, settings};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};

fn error(code: &str, message: impl Into<String>, retryable: bool) -> CarrierError {
    CarrierError { code: code.into(), message: message.into(), retryable }
}

fn setting(name: &str) -> Result<String, CarrierError> {
    settings::get(name).filter(|v| !v.is_empty()).ok_or_else(|| error("plugin_not_configured", format!("the setting `{name}` is not set for this business"), false))
}

fn account_url() -> Result<String, CarrierError> {
    Ok(format!("{}/2010-04-01/Accounts/{}", setting("base-url")?.trim_end_matches('/'), setting("account-sid")?))
}

/// The API's answer to a refused or failed call.
pub fn api_error(status: u16, body: &[u8]) -> CarrierError {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let message: String = parsed["message"].as_str().unwrap_or("the carrier refused the request").chars().take(300).collect();
    match status {
        429 => error("carrier_unavailable", format!("{RATE_LIMITED}{message}"), true),
        500.. => error("carrier_unavailable", message, true),
        401 | 403 => error("carrier_auth_failed", message, false),
        404 => error("unknown_call", message, false),
        _ => error("carrier_rejected", message, false),
    }
}

/// One request to the API with basic auth; the raw response.
fn send(method: &str, url: String, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<http::Response, CarrierError> {
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", setting("account-sid")?, setting("auth-token")?));
    let mut all = vec![("authorization".to_string(), format!("Basic {auth}"))];
    all.extend(headers);
    http::send(&http::Request { method: method.into(), url, headers: all, body }).map_err(|why| error("carrier_unavailable", why, true))
}

/// A form-encoded request whose answer is JSON.
fn call_api(method: &str, url: String, form: &[(&str, String)]) -> Result<Value, CarrierError> {
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str()))).finish();
    let headers = if method == "GET" { Vec::new() } else { vec![("content-type".to_string(), "application/x-www-form-urlencoded".to_string())] };
    let resp = send(method, url, headers, if method == "GET" { Vec::new() } else { body.into_bytes() })?;
    if !(200..300).contains(&resp.status) {
        return Err(api_error(resp.status, &resp.body));
    }
    serde_json::from_slice(&resp.body).map_err(|_| error("carrier_bad_answer", "the carrier's answer is not JSON", true))
}

/// The message of a 429, which is not a lost answer: the API placed nothing.
const RATE_LIMITED: &str = "rate limited: ";

/// The sid of the call the API placed for our call id, if it placed one:
/// the calls to the destination from the caller line created since the
/// placement was first asked for (`GET /Calls.json?To=&From=`, newest
/// first), and of those the one whose events (`GET
/// /Calls/{sid}/Events.json`, the requests the API made for it) include a
/// status callback to our address with our call id. A candidate without
/// any event yet cannot be told apart: `placement_unconfirmed`
/// (retryable), so the host asks again rather than placing a second call.
fn find(call: &Placement) -> Result<String, CarrierError> {
    let from = match call.caller_number.clone().filter(|n| !n.is_empty()) {
        Some(n) => n,
        None => setting("from")?,
    };
    let query = form_urlencoded::Serializer::new(String::new()).append_pair("To", &call.destination).append_pair("From", &from).append_pair("PageSize", "50").finish();
    let list = call_api("GET", format!("{}/Calls.json?{query}", account_url()?), &[])?;
    let ours = format!("call={}", call.call_id);
    let mut unconfirmed = false;
    for candidate in list["calls"].as_array().cloned().unwrap_or_default() {
        let Some(sid) = candidate["sid"].as_str().filter(|s| !s.is_empty()) else { continue };
        // Created before the placement was asked for: not ours (a minute
        // of clock skew allowed).
        if created_ms(&candidate["date_created"]).is_some_and(|at| at + 60_000 < call.requested_at_ms) {
            continue;
        }
        let events = call_api("GET", format!("{}/Calls/{sid}/Events.json", account_url()?), &[])?;
        let events = events["events"].as_array().cloned().unwrap_or_default();
        if events.iter().any(|e| e["request"]["url"].as_str().is_some_and(|u| u.split(['?', '&']).any(|p| p == ours))) {
            return Ok(sid.to_string());
        }
        unconfirmed |= events.is_empty();
    }
    if unconfirmed {
        return Err(error("placement_unconfirmed", "a call the carrier placed since has not reported yet", true));
    }
    Err(error("unknown_call", "no call of this id is known to the carrier", false))
}

/// The API's `date_created` (RFC 2822, e.g. `Tue, 10 Aug 2010 08:02:17
/// +0000`) in ms since the Unix epoch.
fn created_ms(v: &Value) -> Option<i64> {
    chrono::DateTime::parse_from_rfc2822(v.as_str()?).ok().map(|t| t.timestamp_millis())
}

/// What the adapter keeps between calls: the API's call sid, the last
/// status it reported, the utterances said and not yet reported played,
/// and whether we hung up.
fn memo_of(memo: &str) -> Result<Value, CarrierError> {
    serde_json::from_str::<Value>(memo).ok().filter(|m| m["sid"].is_string()).ok_or_else(|| error("invalid_memo", "not a memo of this adapter", false))
}

fn sid(m: &Value) -> &str {
    m["sid"].as_str().unwrap_or_default()
}

fn poll_ms() -> u64 {
    settings::get("poll-ms").and_then(|v| v.parse().ok()).unwrap_or(5_000).clamp(100, 60_000)
}

/// Where a status stands: 0 placed, 1 ringing, 2 answered, 3 ended.
fn rank(status: &str) -> u8 {
    match status {
        "ringing" => 1,
        "in-progress" => 2,
        "completed" | "busy" | "no-answer" | "failed" | "canceled" => 3,
        _ => 0,
    }
}

/// The events between what `m` last reported and `status`, and the memo
/// after them.
pub fn events(mut m: Value, status: &str, duration_s: u64, now_ms: i64) -> (Vec<TimedEvent>, Value) {
    let seen = m["seen"].as_u64().unwrap_or(0) as u8;
    // A call we saw answered stays connected whatever the duration says.
    let connected = status == "in-progress" || (status == "completed" && (duration_s > 0 || seen >= 2));
    let mut out = Vec::new();
    let at = |event| TimedEvent { at_ms: now_ms, event };
    if rank(status) >= 1 && seen < 1 {
        out.push(at(CallEvent::Ringing));
    }
    // A live call's answer is its first turn's post (turn 0), which the
    // host reads as the answer; only a call that ended before we saw it
    // live reports it here.
    if connected && seen < 2 && status != "in-progress" {
        out.push(at(CallEvent::Answered));
    }
    if connected {
        for u in m["pending"].as_array().cloned().unwrap_or_default() {
            let utterance_id = u.as_str().unwrap_or_default().to_string();
            out.push(at(CallEvent::Played(Playback { utterance_id, played_percent: 100, audio_offset_ms: 0, audio_end_offset_ms: 0 })));
        }
        m["pending"] = json!([]);
    }
    if rank(status) == 3 && seen < 3 {
        let hung_up = m["hungUp"].as_bool().unwrap_or(false);
        let cause = match status {
            "completed" if !connected => EndCause::NoAnswer,
            "completed" if hung_up => EndCause::OperatorHungUp,
            "completed" if m["lastWords"].as_bool().unwrap_or(false) => EndCause::AgentHungUp,
            "completed" => EndCause::CustomerHungUp,
            "busy" => EndCause::Busy,
            "no-answer" => EndCause::NoAnswer,
            "canceled" if hung_up => EndCause::OperatorHungUp,
            "canceled" => EndCause::Rejected,
            _ => EndCause::CarrierFailure,
        };
        out.push(at(CallEvent::Ended(Ended { cause, connected_ms: duration_s * 1000, attempt_cost_microcredits: 0 })));
    }
    m["seen"] = json!(seen.max(if connected { 2 } else { 0 }).max(rank(status)));
    (out, m)
}

/// XML text or attribute escaping.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The address of a turn's post (`kind` `turn`) or of its partial results
/// (`partial`): beside the status callback address (`…/carrier/events`),
/// with our call id and the turn.
fn turn_url(base: &str, kind: &str, call_id: &str, turn: u32) -> String {
    let query = form_urlencoded::Serializer::new(String::new()).append_pair("call", call_id).append_pair("turn", &turn.to_string()).finish();
    format!("{base}/{kind}?{query}")
}

/// The carrier routes of the business: the callback address without its
/// `/events`.
fn carrier_base() -> Result<String, CarrierError> {
    let events = setting("callback-url")?;
    let base = events.split('?').next().unwrap_or_default();
    Ok(base.strip_suffix("/events").unwrap_or(base).to_string())
}

/// The TwiML that answers a turn's post: the agent's words and a speech
/// `<Gather>` whose action is the next turn (the words inside it when the
/// customer may speak over them, before it when not; partial results
/// posted while they play, so the host sees where they were cut), or the
/// words and `<Hangup/>`; a hold asks for the same turn again.
pub fn answer_twiml(a: &TurnAnswer, base: &str) -> String {
    let say = a.text.as_deref().filter(|t| !t.trim().is_empty()).map(|t| format!("<Say>{}</Say>", escape(t))).unwrap_or_default();
    if a.hold {
        return format!("<Response><Pause length=\"1\"/><Redirect method=\"POST\">{}</Redirect></Response>", escape(&turn_url(base, "turn", &a.call_id, a.turn)));
    }
    if a.end_call {
        return format!("<Response>{say}<Hangup/></Response>");
    }
    let next = a.turn + 1;
    let mut gather = format!(
        "<Gather input=\"speech\" action=\"{}\" method=\"POST\" actionOnEmptyResult=\"true\" timeout=\"{}\" speechTimeout=\"auto\"",
        escape(&turn_url(base, "turn", &a.call_id, next)),
        a.listen_seconds.clamp(1, 60)
    );
    if a.barge_in && !say.is_empty() {
        gather += &format!(" partialResultCallback=\"{}\" partialResultCallbackMethod=\"POST\">{say}</Gather>", escape(&turn_url(base, "partial", &a.call_id, next)));
        format!("<Response>{gather}</Response>")
    } else {
        format!("<Response>{say}{gather}></Gather></Response>")
    }
}

/// The TwiML of an utterance: the words, then the end or a pause that keeps
/// the line open for the next turn.
pub fn say_twiml(text: &str, end_call: bool) -> String {
    let escaped = escape(text);
    let after = if end_call { "<Hangup/>" } else { "<Pause length=\"600\"/>" };
    format!("<Response><Say>{escaped}</Say>{after}</Response>")
}

/// `X-Twilio-Signature`: base64 of HMAC-SHA1 keyed with the auth token over
/// the URL and the form parameters' names and values, sorted by name.
pub fn signature_valid(auth_token: &str, url: &str, params: &[(String, String)], given_b64: &str) -> bool {
    let Ok(given) = base64::engine::general_purpose::STANDARD.decode(given_b64.trim()) else { return false };
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(auth_token.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    // Constant time.
    mac.verify_slice(&given).is_ok()
}

struct TwilioCarrier;

impl Guest for TwilioCarrier {
    fn place(call: Placement) -> Result<Progress, CarrierError> {
        let from = match call.caller_number.clone().filter(|n| !n.is_empty()) {
            Some(n) => n,
            None => setting("from")?,
        };
        let callback = format!("{}?call={}", setting("callback-url")?, call.call_id);
        let mut form = vec![
            ("To", call.destination.clone()),
            ("From", from),
            // Once answered, the call asks us for its first turn.
            ("Twiml", format!("<Response><Redirect method=\"POST\">{}</Redirect></Response>", escape(&turn_url(&carrier_base()?, "turn", &call.call_id, 0)))),
            ("StatusCallback", callback),
            ("Record", "true".into()),
            ("TimeLimit", call.max_duration_seconds.to_string()),
        ];
        for event in ["initiated", "ringing", "answered", "completed"] {
            form.push(("StatusCallbackEvent", event.into()));
        }
        // The API has no idempotency key: an answer that never came (a
        // transport failure, a 5xx) leaves the outcome unknown, and the host
        // then looks the call up by our id (`poll` without a memo) before it
        // places it again.
        let answer = call_api("POST", format!("{}/Calls.json", account_url()?), &form).map_err(|e| match e.code.as_str() {
            "carrier_unavailable" if !e.message.starts_with(RATE_LIMITED) => error("placement_timeout", "the carrier's answer to the placement was lost", true),
            _ => e,
        })?;
        let sid = answer["sid"].as_str().filter(|s| !s.is_empty()).ok_or_else(|| error("carrier_bad_answer", "the carrier's answer has no call sid", true))?;
        let memo = json!({"sid": sid, "seen": 0, "pending": []});
        Ok(Progress { events: Vec::new(), memo: memo.to_string(), check_after_ms: Some(poll_ms()) })
    }

    fn poll(call: Placement, memo: Option<String>) -> Result<Progress, CarrierError> {
        // Without a memo the placement's answer was lost: find the call by
        // our id before the host places it again.
        let m = match memo {
            Some(memo) => memo_of(&memo)?,
            None => json!({"sid": find(&call)?, "seen": 0, "pending": []}),
        };
        let answer = call_api("GET", format!("{}/Calls/{}.json", account_url()?, sid(&m)), &[])?;
        let status = answer["status"].as_str().unwrap_or("queued").to_string();
        let duration: u64 = match &answer["duration"] {
            Value::String(s) => s.parse().unwrap_or(0),
            v => v.as_u64().unwrap_or(0),
        };
        let (events, m) = events(m, &status, duration, clock::now_ms());
        let ended = rank(&status) == 3;
        Ok(Progress { events, memo: m.to_string(), check_after_ms: (!ended).then(poll_ms) })
    }

    fn say(_call: Placement, memo: String, utterance_id: String, text: String, end_call: bool) -> Result<String, CarrierError> {
        let mut m = memo_of(&memo)?;
        call_api("POST", format!("{}/Calls/{}.json", account_url()?, sid(&m)), &[("Twiml", say_twiml(&text, end_call))])?;
        if let Some(p) = m["pending"].as_array_mut() {
            p.push(json!(utterance_id));
        }
        if end_call {
            m["lastWords"] = json!(true);
        }
        Ok(m.to_string())
    }

    fn hang_up(_call: Placement, memo: Option<String>) -> Result<String, CarrierError> {
        let Some(memo) = memo else { return Ok(String::new()) };
        let mut m = memo_of(&memo)?;
        match call_api("POST", format!("{}/Calls/{}.json", account_url()?, sid(&m)), &[("Status", "completed".into())]) {
            // An ended call cannot be hung up again: harmless.
            Ok(_) => {}
            Err(e) if e.code == "carrier_rejected" => {}
            Err(e) => return Err(e),
        }
        m["hungUp"] = json!(true);
        Ok(m.to_string())
    }

    fn recording(_call: Placement, memo: String, offset: u64, max_bytes: u32) -> Result<RecordingPiece, CarrierError> {
        let m = memo_of(&memo)?;
        let list = call_api("GET", format!("{}/Calls/{}/Recordings.json", account_url()?, sid(&m)), &[])?;
        let uri = list["recordings"][0]["uri"].as_str().ok_or_else(|| error("no_recording", "the carrier has no recording of this call", false))?;
        let base = setting("base-url")?;
        let media = format!("{}{}", base.trim_end_matches('/'), uri.strip_suffix(".json").unwrap_or(uri)) + ".wav";
        // `max-bytes` 0 asks only for the size: one byte is read.
        let last = offset + u64::from(max_bytes.max(1)) - 1;
        let resp = send("GET", media, vec![("range".into(), format!("bytes={offset}-{last}"))], Vec::new())?;
        let content_range = resp.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-range")).map(|(_, v)| v.clone());
        let total_of = |cr: &str| cr.rsplit('/').next().and_then(|t| t.trim().parse::<u64>().ok());
        let (total, mut bytes) = match (resp.status, content_range.as_deref().and_then(total_of)) {
            (206, Some(total)) => (total, resp.body),
            (416, Some(total)) => (total, Vec::new()),
            (200, _) => {
                let total = resp.body.len() as u64;
                let from = (offset.min(total)) as usize;
                (total, resp.body[from..].to_vec())
            }
            (status, _) => return Err(api_error(status, &resp.body)),
        };
        bytes.truncate(max_bytes as usize);
        Ok(RecordingPiece { mime_type: "audio/wav".into(), extension: "wav".into(), total_bytes: total, bytes })
    }
}

impl carrier_webhooks::Guest for TwilioCarrier {
    fn receive(url: String, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<Vec<String>, CarrierError> {
        let params: Vec<(String, String)> = form_urlencoded::parse(&body).into_owned().collect();
        let given = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("x-twilio-signature")).map(|(_, v)| v.as_str()).unwrap_or_default();
        if !signature_valid(&setting("auth-token")?, &url, &params, given) {
            return Err(error("signature_invalid", "the callback is not signed with this account's auth token", false));
        }
        // Our call id is in the callback address we gave at placement.
        let query = url.split_once('?').map(|(_, q)| q).unwrap_or_default();
        let call = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "call").map(|(_, v)| v.into_owned());
        Ok(call.into_iter().collect())
    }

    fn hear(url: String, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<Heard, CarrierError> {
        let params: Vec<(String, String)> = form_urlencoded::parse(&body).into_owned().collect();
        let given = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("x-twilio-signature")).map(|(_, v)| v.as_str()).unwrap_or_default();
        if !signature_valid(&setting("auth-token")?, &url, &params, given) {
            return Err(error("signature_invalid", "the post is not signed with this account's auth token", false));
        }
        let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
        let of = |pairs: &[(String, String)], name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let query: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let call_id = of(&query, "call").filter(|c| !c.is_empty()).ok_or_else(|| error("post_unreadable", "the address names no call", false))?;
        let turn = of(&query, "turn").and_then(|t| t.parse().ok()).ok_or_else(|| error("post_unreadable", "the address names no turn", false))?;
        let partial = path.ends_with("/partial");
        let speech = of(&params, if partial { "UnstableSpeechResult" } else { "SpeechResult" }).map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        let confidence = of(&params, "Confidence").and_then(|c| c.parse::<f32>().ok()).filter(|c| (0.0..=1.0).contains(c));
        Ok(Heard { call_id, turn, partial, speech, confidence })
    }

    fn answer(answer: TurnAnswer) -> Result<(String, String), CarrierError> {
        Ok(("application/xml".to_string(), answer_twiml(&answer, &carrier_base()?)))
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(TwilioCarrier with_types_in bindings);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_covers_the_url_and_the_sorted_parameters() {
        let params = vec![("CallStatus".to_string(), "completed".to_string()), ("CallSid".to_string(), "CA1".to_string())];
        let url = "https://sb.example.com/providers/v1/b/carrier/events?call=c1";
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(b"tok").unwrap();
        mac.update(format!("{url}CallSidCA1CallStatuscompleted").as_bytes());
        let good = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        assert!(signature_valid("tok", url, &params, &good));
        assert!(!signature_valid("other", url, &params, &good));
        assert!(!signature_valid("tok", &url.replace("c1", "c2"), &params, &good));
        assert!(!signature_valid("tok", url, &params, "not base64!"));
    }

    #[test]
    fn statuses_become_events_once() {
        let m = json!({"sid": "CA1", "seen": 0, "pending": ["u0"]});
        let (e, m) = events(m, "in-progress", 0, 1);
        // A live call's answer comes with its first turn's post.
        assert!(matches!(e[0].event, CallEvent::Ringing) && matches!(e[1].event, CallEvent::Played(_)) && e.len() == 2);
        let (e, m) = events(m, "in-progress", 0, 2);
        assert!(e.is_empty());
        let (e, _) = events(m, "completed", 7, 3);
        assert!(matches!(&e[0].event, CallEvent::Ended(x) if x.connected_ms == 7000 && matches!(x.cause, EndCause::CustomerHungUp)));
        let (e, _) = events(json!({"sid": "CA2", "seen": 0}), "busy", 0, 1);
        assert!(matches!(&e[1].event, CallEvent::Ended(x) if matches!(x.cause, EndCause::Busy)));
        assert_eq!(say_twiml("a < b", true), "<Response><Say>a &lt; b</Say><Hangup/></Response>");
    }

    #[test]
    fn a_turn_is_answered_with_twiml() {
        let base = "https://sb.example.com/providers/v1/b/carrier";
        let a = TurnAnswer { call_id: "c1".into(), turn: 3, text: Some("Hi & bye".into()), end_call: false, barge_in: true, listen_seconds: 12, hold: false };
        let next = "https://sb.example.com/providers/v1/b/carrier/turn?call=c1&amp;turn=4";
        let partial = "https://sb.example.com/providers/v1/b/carrier/partial?call=c1&amp;turn=4";
        let gather = format!("<Gather input=\"speech\" action=\"{next}\" method=\"POST\" actionOnEmptyResult=\"true\" timeout=\"12\" speechTimeout=\"auto\"");
        assert_eq!(answer_twiml(&a, base), format!("<Response>{gather} partialResultCallback=\"{partial}\" partialResultCallbackMethod=\"POST\"><Say>Hi &amp; bye</Say></Gather></Response>"));
        let no_barge = TurnAnswer { barge_in: false, ..a.clone() };
        assert_eq!(answer_twiml(&no_barge, base), format!("<Response><Say>Hi &amp; bye</Say>{gather}></Gather></Response>"));
        let listen = TurnAnswer { text: None, ..a.clone() };
        assert_eq!(answer_twiml(&listen, base), format!("<Response>{gather}></Gather></Response>"));
        let end = TurnAnswer { end_call: true, ..a.clone() };
        assert_eq!(answer_twiml(&end, base), "<Response><Say>Hi &amp; bye</Say><Hangup/></Response>");
        let hold = TurnAnswer { hold: true, ..a };
        assert_eq!(answer_twiml(&hold, base), "<Response><Pause length=\"1\"/><Redirect method=\"POST\">https://sb.example.com/providers/v1/b/carrier/turn?call=c1&amp;turn=3</Redirect></Response>");
    }

    #[test]
    fn the_api_dates_its_calls_in_rfc_2822() {
        assert_eq!(created_ms(&json!("Tue, 10 Aug 2010 08:02:17 +0000")), Some(1_281_427_337_000));
        assert_eq!(created_ms(&json!("Tue, 10 Aug 2010 08:02:17 GMT")), Some(1_281_427_337_000));
        assert_eq!(created_ms(&json!("yesterday")), None);
        assert_eq!(created_ms(&Value::Null), None);
    }
}
