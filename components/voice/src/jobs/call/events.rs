//! What the carrier reported, applied to the call: its events (ringing,
//! the answer, playback receipts, the customer's words, the end) and, for a
//! carrier that hears in turns, its posts the step has not answered yet.
//! Nothing is written here: the step writes it all at once
//! (`progress.rs`).

use super::*;

/// What a step's events and posts add to the call's rows besides the call
/// itself: the transcript's new turns, the audio offsets of utterances,
/// and the first ringing and answer times.
#[derive(Default)]
pub(super) struct Notes {
    pub(super) turns: Vec<NewTurn>,
    pub(super) offsets: Vec<(String, u64, u64)>,
    pub(super) ringing_at: Option<String>,
    pub(super) started_at: Option<String>,
}

/// Applies the carrier's events in order, up to its end if the call ended
/// (returned).
pub(super) fn apply_events(biz: &str, c: &mut Call, events: Vec<carrier::TimedEvent>, notes: &mut Notes) -> Result<Option<carrier::Ended>, Failure> {
    let greeting_id = utterance_id(&c.id, 0);
    // The audio span of the assistant's latest utterance, from a receipt of
    // this step (the sandbox carrier reports a barge-in with the receipt of
    // the utterance it interrupts) or, for a speech reported steps after
    // the receipt, the span that receipt stored on the utterance's turn.
    let mut speaking: Option<(u64, u64)> = None;
    for e in events {
        match e.event {
            CallEvent::Ringing => {
                if c.status == CallStatus::Queued {
                    c.status = CallStatus::Ringing;
                }
                notes.ringing_at.get_or_insert(rfc3339(e.at_ms));
            }
            CallEvent::Answered => answered(c, e.at_ms, notes),
            CallEvent::Played(p) => {
                let pct = i64::from(p.played_percent.min(100));
                if p.utterance_id == greeting_id {
                    c.greeting_played = c.greeting_played.max(pct);
                }
                let latest = p.utterance_id == utterance_id(&c.id, c.utterances - 1);
                if latest {
                    speaking = Some((p.audio_offset_ms, p.audio_end_offset_ms));
                }
                if pct >= 100 {
                    c.played += 1;
                    c.last_activity_ms = Some(e.at_ms);
                    notes.offsets.push((p.utterance_id, p.audio_offset_ms, p.audio_end_offset_ms));
                } else if latest && p.audio_end_offset_ms > p.audio_offset_ms {
                    // Kept for a speech a later step reports.
                    notes.offsets.push((p.utterance_id, p.audio_offset_ms, p.audio_end_offset_ms));
                }
            }
            CallEvent::CustomerSaid(s) => {
                if speaking.is_none() && c.utterances > 0 {
                    speaking = turns::stored_span(biz, &c.id, &utterance_id(&c.id, c.utterances - 1))?;
                }
                if let Some(share) = speaking.and_then(|span| spoken_over(span, s.audio_offset_ms)) {
                    c.interrupted = Some(share);
                }
                let turn = NewTurn {
                    speaker: "customer",
                    text: s.text,
                    utterance_id: None,
                    offset_ms: Some(s.audio_offset_ms as i64),
                    end_offset_ms: Some(s.audio_end_offset_ms as i64),
                    at: rfc3339(e.at_ms),
                    grounding: None,
                };
                customer_said(c, turn, e.at_ms, notes);
            }
            CallEvent::Ended(end) => return Ok(Some(end)),
        }
    }
    Ok(None)
}

/// Applies the posts still `waiting` (of all the call's `posted`): turn 0
/// is the answer; a later one means everything said before it has played,
/// and its words are the customer's turn.
pub(super) fn apply_posts(c: &mut Call, posted: &[heard::Posted], waiting: &[&heard::Posted], notes: &mut Notes) {
    for p in waiting {
        if p.turn == 0 {
            answered(c, p.received_ms, notes);
            continue;
        }
        // Everything said before the post has played (or was cut).
        c.played = c.utterances;
        c.greeting_played = 100;
        if let Some(text) = p.speech() {
            if let Some(share) = heard::cut_in(posted, p) {
                c.interrupted = Some(share);
            }
            let since = |ms: i64| c.answered_ms.map(|a| (ms - a).max(0));
            let turn = NewTurn {
                speaker: "customer",
                text,
                utterance_id: None,
                offset_ms: since(p.partial_ms.unwrap_or(p.received_ms)),
                end_offset_ms: since(p.received_ms),
                at: rfc3339(p.received_ms),
                grounding: None,
            };
            customer_said(c, turn, p.received_ms, notes);
        }
    }
}

/// The call was answered at `at_ms` (the first answer counts).
fn answered(c: &mut Call, at_ms: i64, notes: &mut Notes) {
    if matches!(c.status, CallStatus::Queued | CallStatus::Ringing) {
        c.status = CallStatus::Answered;
    }
    if c.answered_ms.is_none() {
        c.answered_ms = Some(at_ms);
        c.last_activity_ms = Some(at_ms);
        notes.started_at = Some(rfc3339(at_ms));
    }
}

/// The customer's words, at `at_ms`: a turn that awaits the assistant's
/// reply.
fn customer_said(c: &mut Call, turn: NewTurn, at_ms: i64, notes: &mut Notes) {
    notes.turns.push(turn);
    c.awaiting_reply = true;
    c.nudged = false;
    c.last_activity_ms = Some(at_ms);
}

/// The share (percent) of an utterance of audio `span` played when the
/// customer began speaking at `offset_ms`, if that was inside it.
fn spoken_over((start, end): (u64, u64), offset_ms: u64) -> Option<i64> {
    (start..end).contains(&offset_ms).then(|| ((offset_ms - start) * 100 / (end - start)) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_spoken_over() {
        assert_eq!(spoken_over((1_000, 3_000), 2_000), Some(50));
        assert_eq!(spoken_over((1_000, 3_000), 3_000), None, "after it ended");
        assert_eq!(spoken_over((1_000, 3_000), 999), None);
        assert_eq!(spoken_over((1_000, 1_000), 1_000), None, "an empty span");
    }
}
