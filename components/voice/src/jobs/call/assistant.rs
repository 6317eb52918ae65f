//! The assistant's move in a connected call's step: what the conversation
//! rules (`conversation.rs`) say comes next, said through the carrier's
//! `say` or as the answer to a carrier's post, or the hang-up at the
//! maximum duration; and the answers that tell every other waiting post to
//! listen again.

use super::*;

/// A carrier post's answer: its turn and what the host sends back.
pub(super) type Answer = (i64, Value);

/// An utterance the assistant says this step.
struct Utterance {
    text: String,
    /// It ends the call once played.
    end_call: bool,
    /// Why it is said: `nudge`, `silence`, or `None` for a greeting or a
    /// reply.
    why: Option<&'static str>,
    /// What it drew on (`turn::Reply::used`).
    grounding: Option<String>,
}

/// The assistant's move. `turns` holds the step's new turns (the agent
/// sees them; what it says is added); a carrier that hears in turns
/// (`driven`) is spoken to only in answers to its `waiting` posts.
pub(super) fn act(biz: &str, c: &mut Call, turns: &mut Vec<NewTurn>, waiting: &[&heard::Posted], driven: bool, answers: &mut Vec<Answer>) -> Result<(), Failure> {
    // Such a call speaks only in answers to its posts.
    let may_speak = !driven || !waiting.is_empty();
    let said = match conversation::next(&conversation_of(c), clock::now_ms()) {
        Next::Wait => None,
        next if !may_speak && next != Next::MaxDuration => None,
        Next::Greeting => match c.greeting.clone() {
            Some(text) => Some(Utterance { text, end_call: false, why: None, grounding: None }),
            None => agent_turn(biz, c, turns)?.map(|(text, end_call, grounding)| Utterance { text, end_call, why: None, grounding }),
        },
        Next::Reply => match agent_turn(biz, c, turns)? {
            Some((text, end_call, grounding)) => Some(Utterance { text: with_interrupted_sentence(biz, c, text, end_call)?, end_call, why: None, grounding }),
            None => None,
        },
        Next::Nudge => Some(Utterance { text: conversation::NUDGE.to_string(), end_call: false, why: Some("nudge"), grounding: None }),
        Next::SilenceGoodbye => Some(Utterance { text: conversation::SILENCE_GOODBYE.to_string(), end_call: true, why: Some("silence"), grounding: None }),
        Next::MaxDuration => {
            hang_up_at_max(c);
            None
        }
    };
    if let Some(u) = said {
        say(c, u, turns, waiting, driven, answers);
    }
    Ok(())
}

/// The call as the conversation rules see it.
fn conversation_of(c: &Call) -> Conversation {
    Conversation {
        answered_ms: c.answered_ms,
        utterances: c.utterances,
        played: c.played,
        greeting_played: c.greeting_played,
        awaiting_reply: c.awaiting_reply,
        last_activity_ms: c.last_activity_ms,
        nudged: c.nudged,
        ending: c.end_intent.is_some() || c.status == CallStatus::Cancelling,
        allow_interrupt: conversation::allow_interrupt(&c.settings),
        nudge_ms: conversation::nudge_ms(&c.settings),
        disconnect_ms: conversation::disconnect_ms(&c.settings),
        max_ms: c.max_duration_s * 1000,
    }
}

/// Says `u`: as the answer to the latest waiting post of a carrier that
/// hears in turns, else through the carrier's `say`. Once said it is the
/// assistant's turn of the transcript.
fn say(c: &mut Call, u: Utterance, turns: &mut Vec<NewTurn>, waiting: &[&heard::Posted], driven: bool, answers: &mut Vec<Answer>) {
    let id = utterance_id(&c.id, c.utterances);
    // Its place in the call's audio: said from now, for about its
    // length (a carrier that hears in turns reports no playback).
    let mut span = None;
    let spoken = match waiting.last() {
        // The answer to the latest post; the host says it.
        Some(p) if driven => {
            span = Some(answer_post(c, p, &u, answers));
            Ok(c.memo.clone().unwrap_or_default())
        }
        _ => carrier::say(&placement::of(c), c.memo.as_deref().unwrap_or_default(), &id, &u.text, u.end_call),
    };
    match spoken {
        Ok(memo) => {
            c.memo = Some(memo);
            c.utterances += 1;
            c.interrupted = None;
            if u.why == Some("nudge") {
                c.nudged = true;
            } else if u.why.is_none() {
                c.awaiting_reply = false;
            }
            if u.end_call {
                c.end_intent = Some(if u.why == Some("silence") { EndIntent::Silence } else { EndIntent::Agent });
            }
            turns.push(NewTurn { speaker: "assistant", text: u.text, utterance_id: Some(id), offset_ms: span.map(|s| s.0), end_offset_ms: span.map(|s| s.1), at: now(), grounding: u.grounding });
        }
        Err(e) => log::log(log::Level::Warn, &format!("call {}: the carrier refused an utterance: {}", c.id, e.code)),
    }
}

/// The answer to post `p` that says `u`; returns the utterance's estimated
/// audio span.
fn answer_post(c: &Call, p: &heard::Posted, u: &Utterance, answers: &mut Vec<Answer>) -> (i64, i64) {
    let barge_in = c.utterances > 0 || conversation::allow_interrupt(&c.settings);
    let mut after = c.clone();
    after.nudged |= u.why == Some("nudge");
    let listen = heard::listen_seconds(&after, clock::now_ms());
    answers.push((p.turn, json!({"text": u.text, "endCall": u.end_call, "bargeIn": barge_in, "listenSeconds": listen})));
    let at = c.answered_ms.map_or(0, |a| (clock::now_ms() - a).max(0));
    (at, at + u.text.chars().count() as i64 * heard::MS_PER_CHAR)
}

/// The maximum duration is reached: the carrier hangs up.
fn hang_up_at_max(c: &mut Call) {
    match carrier::hang_up(&placement::of(c), c.memo.as_deref()) {
        Ok(memo) => {
            c.memo = Some(memo);
            c.end_intent = Some(EndIntent::MaxDuration);
            c.hangup_sent = true;
        }
        Err(e) => log::log(log::Level::Warn, &format!("call {}: hang-up at the maximum duration refused: {}", c.id, e.code)),
    }
}

/// Every other post still waiting gets an answer: listen again.
pub(super) fn listen_again(c: &Call, waiting: &[&heard::Posted], answers: &mut Vec<Answer>) {
    let listen = heard::listen_seconds(c, clock::now_ms());
    for p in waiting {
        if !answers.iter().any(|(turn, _)| *turn == p.turn) {
            answers.push((p.turn, json!({"text": null, "endCall": false, "bargeIn": false, "listenSeconds": listen})));
        }
    }
}
