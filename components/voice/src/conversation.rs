//! The spec's rules of a call in conversation, as pure functions of its
//! state (unit-tested here; `jobs/call/` applies them each step). What an
//! agent says (its instructions, greeting, grounded replies and the
//! `end_call` tool) is the agent runtime's (`switchboard-agent-runtime`).
//!
//! * the greeting (filled in at start, `calls.rs`) is prepared before
//!   dialling and released only after `answered`;
//! * with `allowGreetingInterrupt` false, customer input is held until at
//!   least 95% of the greeting has played, judged by the carrier's playback
//!   receipts;
//! * a customer who starts speaking inside the audio of the assistant's
//!   latest utterance interrupts it (the greeting only with
//!   `allowGreetingInterrupt`); with `repeatInterruptedSentence` the
//!   sentence it was cut in (by the share played then) is said again after
//!   the reply ([`interrupted_sentence`]);
//! * an assistant turn that ends the call is said with the carrier's
//!   `end-call` flag, so the carrier hangs up only after the audio queued
//!   before it has played;
//! * after `nudgeAfterSilenceSeconds` of silence (default 12) the assistant
//!   nudges once; after `disconnectAfterSilenceSeconds` it says goodbye and
//!   ends the call; `maxCallDurationSeconds` (default 600, at most 4 h) ends
//!   it from the answer on.

use serde_json::{Map, Value};

use crate::billing::{DEFAULT_MAX_DURATION_S, MAX_DURATION_CAP_S};

/// Share of the greeting that must have played before held input is answered.
pub const GREETING_RELEASE_PERCENT: i64 = 95;
pub const DEFAULT_NUDGE_S: f64 = 12.0;
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

pub fn repeat_interrupted(settings: &Map<String, Value>) -> bool {
    settings.get("repeatInterruptedSentence").and_then(Value::as_bool).unwrap_or(false)
}

/// The sentence of `text` being said when `played_percent` of it had
/// played: sentences end at `.`, `!` or `?` followed by a space (or the
/// end); `None` once it played to the end.
pub fn interrupted_sentence(text: &str, played_percent: i64) -> Option<String> {
    if !(0..100).contains(&played_percent) {
        return None;
    }
    let chars: Vec<char> = text.chars().collect();
    let at = chars.len() * played_percent as usize / 100;
    let mut start = 0;
    for i in 0..chars.len() {
        let ends = matches!(chars[i], '.' | '!' | '?') && chars.get(i + 1).is_none_or(|c| c.is_whitespace());
        if ends || i + 1 == chars.len() {
            if at <= i {
                let sentence: String = chars[start..=i].iter().collect();
                return Some(sentence.trim().to_string()).filter(|s| !s.is_empty());
            }
            start = i + 1;
        }
    }
    None
}

pub fn nudge_ms(settings: &Map<String, Value>) -> i64 {
    (number(settings, "nudgeAfterSilenceSeconds").unwrap_or(DEFAULT_NUDGE_S) * 1000.0) as i64
}

pub fn disconnect_ms(settings: &Map<String, Value>) -> Option<i64> {
    number(settings, "disconnectAfterSilenceSeconds").map(|s| (s * 1000.0) as i64)
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
    fn settings_and_their_defaults() {
        assert_eq!(max_duration_s(&settings(json!({}))), 600);
        assert_eq!(max_duration_s(&settings(json!({"maxCallDurationSeconds": 46.2}))), 47);
        assert_eq!(max_duration_s(&settings(json!({"maxCallDurationSeconds": 1e12}))), MAX_DURATION_CAP_S);
        assert_eq!(nudge_ms(&settings(json!({}))), 12_000);
        assert_eq!(disconnect_ms(&settings(json!({"disconnectAfterSilenceSeconds": 2.5}))), Some(2_500));
        assert!(!allow_interrupt(&settings(json!({}))));
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
    fn the_interrupted_sentence_is_the_one_playing() {
        let text = "Hi. This is Acme calling about your order today.";
        assert_eq!(interrupted_sentence(text, 0).as_deref(), Some("Hi."));
        assert_eq!(interrupted_sentence(text, 50).as_deref(), Some("This is Acme calling about your order today."));
        assert_eq!(interrupted_sentence(text, 99).as_deref(), Some("This is Acme calling about your order today."));
        assert_eq!(interrupted_sentence(text, 100), None, "played to the end: nothing was interrupted");
        assert_eq!(interrupted_sentence("No stop at the end", 40).as_deref(), Some("No stop at the end"));
        assert_eq!(interrupted_sentence("Version 1.5 is out! Really.", 20).as_deref(), Some("Version 1.5 is out!"), "a dot inside a word ends nothing");
        assert!(!repeat_interrupted(&settings(json!({}))));
        assert!(repeat_interrupted(&settings(json!({"repeatInterruptedSentence": true}))));
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
