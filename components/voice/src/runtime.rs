//! The voice runtime rules of the spec, as pure functions of a call's state
//! (unit-tested here; `jobs/call.rs` applies them each step):
//!
//! * the greeting (declared `{{variables}}` filled in at start) is prepared
//!   before dialling and released only after `answered`;
//! * with `allowGreetingInterrupt` false, customer input is held until at
//!   least 95% of the greeting has played, judged by the carrier's playback
//!   receipts;
//! * an assistant `end_call` is said with the carrier's `end-call` flag, so
//!   the carrier hangs up only after the audio queued before it has played;
//! * after `nudgeAfterSilenceSeconds` of silence (default 12) the assistant
//!   nudges once; after `disconnectAfterSilenceSeconds` it says goodbye and
//!   ends the call; `maxCallDurationSeconds` (default 600, at most 4 h) ends
//!   it from the answer on.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::billing::{DEFAULT_MAX_DURATION_S, MAX_DURATION_CAP_S};

/// Share of the greeting that must have played before held input is answered.
pub const GREETING_RELEASE_PERCENT: i64 = 95;
pub const DEFAULT_NUDGE_S: f64 = 12.0;
/// The marker an agent turn ends with to end the call; the instructions of
/// a voice turn tell the model about it.
pub const END_CALL: &str = "[end_call]";
pub const NUDGE: &str = "Are you still there?";
pub const SILENCE_GOODBYE: &str = "I haven't heard anything for a while, so I'll end the call now. Goodbye.";

fn number(settings: &Map<String, Value>, key: &str) -> Option<f64> {
    settings.get(key).and_then(Value::as_f64).filter(|n| n.is_finite() && *n >= 0.0)
}

/// The call's maximum duration in whole seconds.
pub fn max_duration_s(settings: &Map<String, Value>) -> i64 {
    number(settings, "maxCallDurationSeconds").map_or(DEFAULT_MAX_DURATION_S, |s| (s.ceil() as i64).clamp(1, MAX_DURATION_CAP_S))
}

pub fn allow_interrupt(settings: &Map<String, Value>) -> bool {
    settings.get("allowGreetingInterrupt").and_then(Value::as_bool).unwrap_or(false)
}

pub fn nudge_ms(settings: &Map<String, Value>) -> i64 {
    (number(settings, "nudgeAfterSilenceSeconds").unwrap_or(DEFAULT_NUDGE_S) * 1000.0) as i64
}

pub fn disconnect_ms(settings: &Map<String, Value>) -> Option<i64> {
    number(settings, "disconnectAfterSilenceSeconds").map(|s| (s * 1000.0) as i64)
}

/// The agent's `firstGreeting`, when it has one.
pub fn greeting_template(settings: &Map<String, Value>) -> Option<String> {
    settings.get("firstGreeting").and_then(Value::as_str).map(str::trim).filter(|g| !g.is_empty()).map(String::from)
}

/// Fills `{{alias}}` placeholders; the first alias without a value is the error.
pub fn fill(template: &str, values: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let Some(close) = rest[open + 2..].find("}}") else { break };
        let alias = rest[open + 2..open + 2 + close].trim();
        out.push_str(&rest[..open]);
        match values.get(alias) {
            Some(v) => out.push_str(v),
            None => return Err(alias.to_string()),
        }
        rest = &rest[open + 2 + close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// An agent turn as said: its text without the [`END_CALL`] marker, and
/// whether it ends the call.
pub fn parse_reply(reply: &str) -> (String, bool) {
    let trimmed = reply.trim();
    match trimmed.strip_suffix(END_CALL) {
        Some(text) => {
            let text = text.trim();
            (if text.is_empty() { "Goodbye.".to_string() } else { text.to_string() }, true)
        }
        None => (trimmed.to_string(), false),
    }
}

/// The instructions of a voice turn: the agent's, the call's variables, and
/// how to end the call.
pub fn instructions(agent: &str, variables: &BTreeMap<String, String>) -> String {
    let mut s = agent.to_string();
    s.push_str("\n\nYou are speaking with the customer on an outbound phone call. Keep each turn short.");
    if !variables.is_empty() {
        s.push_str("\nWhat you know for this call:");
        for (k, v) in variables {
            s.push_str(&format!("\n- {k}: {v}"));
        }
    }
    s.push_str(&format!("\nWhen the conversation is over, say goodbye and end your reply with {END_CALL}."));
    s
}

/// What a call in conversation knows at one step.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    pub answered_ms: Option<i64>,
    pub utterances: i64,
    pub played: i64,
    pub greeting_played: i64,
    pub awaiting_reply: bool,
    pub last_activity_ms: Option<i64>,
    pub nudged: bool,
    /// Set once the call is ending (an operator's cancel, an end-call turn, …).
    pub ending: bool,
    pub allow_interrupt: bool,
    pub nudge_ms: i64,
    pub disconnect_ms: Option<i64>,
    pub max_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Wait,
    Greeting,
    Reply,
    Nudge,
    SilenceGoodbye,
    MaxDuration,
}

/// What the assistant does now.
pub fn next(c: &Conversation, now_ms: i64) -> Next {
    let Some(answered) = c.answered_ms else { return Next::Wait };
    if c.ending {
        return Next::Wait;
    }
    if now_ms - answered >= c.max_ms {
        return Next::MaxDuration;
    }
    if c.utterances == 0 {
        return Next::Greeting;
    }
    if c.awaiting_reply {
        return if c.allow_interrupt || c.greeting_played >= GREETING_RELEASE_PERCENT { Next::Reply } else { Next::Wait };
    }
    // Silence counts from the end of the last speech, once everything the
    // assistant said has played.
    if c.played < c.utterances {
        return Next::Wait;
    }
    let silent = now_ms - c.last_activity_ms.unwrap_or(answered);
    match c.disconnect_ms {
        Some(d) if silent >= d => return Next::SilenceGoodbye,
        _ => {}
    }
    if !c.nudged && silent >= c.nudge_ms {
        return Next::Nudge;
    }
    Next::Wait
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn greetings_fill_declared_variables() {
        let values = BTreeMap::from([("name".to_string(), "Ada".to_string())]);
        assert_eq!(fill("Hello {{name}}, {{ name }}!", &values).unwrap(), "Hello Ada, Ada!");
        assert_eq!(fill("Hello {{city}}", &values).unwrap_err(), "city");
        assert_eq!(fill("No braces {{ here", &values).unwrap(), "No braces {{ here");
    }

    #[test]
    fn settings_and_their_defaults() {
        assert_eq!(max_duration_s(&settings(json!({}))), 600);
        assert_eq!(max_duration_s(&settings(json!({"maxCallDurationSeconds": 46.2}))), 47);
        assert_eq!(max_duration_s(&settings(json!({"maxCallDurationSeconds": 1e12}))), MAX_DURATION_CAP_S);
        assert_eq!(nudge_ms(&settings(json!({}))), 12_000);
        assert_eq!(disconnect_ms(&settings(json!({"disconnectAfterSilenceSeconds": 2.5}))), Some(2_500));
        assert!(!allow_interrupt(&settings(json!({}))));
    }

    #[test]
    fn replies_may_end_the_call() {
        assert_eq!(parse_reply("Thanks. Goodbye. [end_call]"), ("Thanks. Goodbye.".to_string(), true));
        assert_eq!(parse_reply("[end_call]"), ("Goodbye.".to_string(), true));
        assert_eq!(parse_reply(" Sure. "), ("Sure.".to_string(), false));
    }

    fn talking() -> Conversation {
        Conversation { answered_ms: Some(0), utterances: 1, played: 0, nudge_ms: 12_000, max_ms: 600_000, ..Default::default() }
    }

    #[test]
    fn the_greeting_waits_for_the_answer() {
        let c = Conversation { max_ms: 600_000, nudge_ms: 12_000, ..Default::default() };
        assert_eq!(next(&c, 10), Next::Wait);
        assert_eq!(next(&Conversation { answered_ms: Some(0), ..c }, 10), Next::Greeting);
    }

    #[test]
    fn input_is_held_until_95_percent_of_the_greeting_played() {
        let mut c = Conversation { awaiting_reply: true, greeting_played: 50, ..talking() };
        assert_eq!(next(&c, 100), Next::Wait);
        c.greeting_played = 95;
        assert_eq!(next(&c, 100), Next::Reply);
        c.greeting_played = 50;
        c.allow_interrupt = true;
        assert_eq!(next(&c, 100), Next::Reply);
    }

    #[test]
    fn silence_nudges_once_then_disconnects() {
        let mut c = Conversation { played: 1, last_activity_ms: Some(1_000), disconnect_ms: Some(30_000), ..talking() };
        assert_eq!(next(&c, 12_999), Next::Wait);
        assert_eq!(next(&c, 13_000), Next::Nudge);
        c.nudged = true;
        assert_eq!(next(&c, 20_000), Next::Wait);
        assert_eq!(next(&c, 31_000), Next::SilenceGoodbye);
        // Still playing: not silent.
        c.played = 0;
        assert_eq!(next(&c, 31_000), Next::Wait);
    }

    #[test]
    fn the_maximum_duration_ends_the_call_and_an_ending_call_waits() {
        let c = Conversation { max_ms: 47_000, ..talking() };
        assert_eq!(next(&c, 47_000), Next::MaxDuration);
        assert_eq!(next(&Conversation { ending: true, ..c }, 47_000), Next::Wait);
    }
}
