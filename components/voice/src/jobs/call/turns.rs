//! The transcript side of a call step: the turns a step appends, the
//! agent's turn (instructions, variables, grounding, the last turns) and
//! the carrier's audio offsets written back onto them.

use super::*;

/// A turn to append to the transcript.
pub(super) struct NewTurn {
    pub(super) speaker: &'static str,
    pub(super) text: String,
    pub(super) utterance_id: Option<String>,
    pub(super) offset_ms: Option<i64>,
    pub(super) end_offset_ms: Option<i64>,
    pub(super) at: String,
    /// What an assistant turn drew on (`turn::Reply::used`).
    pub(super) grounding: Option<String>,
}

/// A carrier event's time as the API shows it (the clock's time if the
/// carrier's is out of range).
pub(super) fn rfc3339(ms: i64) -> String {
    time::rfc3339_ms_checked(ms).unwrap_or_else(now)
}

/// The utterance id of a call's `n`th assistant turn (0 is the greeting).
pub(super) fn utterance_id(call_id: &str, n: i64) -> String {
    format!("{call_id}.{n}")
}

/// An agent turn: the agent's instructions, the call's variables, the
/// passages of its sources that match the customer's last words, and the
/// last [`HISTORY`] turns (the stored ones and this step's). Returns the
/// text, whether it ends the call and what it drew on; `None` when the AI
/// did not answer this time (the customer's input stays awaiting a reply).
pub(super) fn agent_turn(biz: &str, c: &Call, fresh: &[NewTurn]) -> Result<Option<(String, bool, Option<String>)>, Failure> {
    let instructions = db::query_one_as::<String>("SELECT instructions FROM agents WHERE business_id = ?1 AND id = ?2", &params![biz, &c.agent_id])?.unwrap_or_default();
    let mut history: Vec<(String, String)> =
        db::query_as::<(String, String)>(&format!("SELECT speaker, text FROM call_turns WHERE business_id = ?1 AND call_id = ?2 ORDER BY seq DESC LIMIT {HISTORY}"), &params![biz, &c.id])?
            .into_iter()
            .rev()
            .map(|(speaker, text)| (role(&speaker).to_string(), text))
            .collect();
    history.extend(fresh.iter().map(|t| (role(t.speaker).to_string(), t.text.clone())));
    let skip = history.len().saturating_sub(HISTORY as usize);
    match turn::answer(biz, &c.agent_id, &instructions, Turn::Call { variables: &c.variables }, &history[skip..])? {
        Ok(r) => Ok(Some((r.text, r.end_call, r.used))),
        Err(e) => {
            log::log(log::Level::Warn, &format!("call {}: the AI did not answer: {e}", c.id));
            Ok(None)
        }
    }
}

/// A reply to a customer who spoke over the assistant's latest utterance
/// (the greeting only when `allowGreetingInterrupt` lets it be
/// interrupted): with the agent's `repeatInterruptedSentence`, the sentence
/// it was cut in follows the reply (never after an end-call turn).
pub(super) fn with_interrupted_sentence(biz: &str, c: &Call, reply: String, end_call: bool) -> Result<String, Failure> {
    let latest = c.utterances - 1;
    let Some(share) = c.interrupted.filter(|_| latest > 0 || conversation::allow_interrupt(&c.settings)) else { return Ok(reply) };
    if end_call || latest < 0 || !conversation::repeat_interrupted(&c.settings) {
        return Ok(reply);
    }
    let said = db::query_one_as::<String>("SELECT text FROM call_turns WHERE business_id = ?1 AND call_id = ?2 AND utterance_id = ?3", &params![biz, &c.id, utterance_id(&c.id, latest)])?;
    Ok(match said.and_then(|said| conversation::interrupted_sentence(&said, share)) {
        Some(sentence) => format!("{reply} {sentence}"),
        None => reply,
    })
}

/// The audio span a receipt stored on an utterance's turn, if one did.
pub(super) fn stored_span(biz: &str, call_id: &str, utterance: &str) -> Result<Option<(u64, u64)>, Failure> {
    let row = db::query_one_as::<(i64, i64)>(
        "SELECT audio_offset_ms, audio_end_offset_ms FROM call_turns WHERE business_id = ?1 AND call_id = ?2 AND utterance_id = ?3 AND audio_end_offset_ms > audio_offset_ms",
        &params![biz, call_id, utterance],
    )?;
    Ok(row.map(|(offset, end)| (offset.max(0) as u64, end.max(0) as u64)))
}

fn role(speaker: &str) -> &'static str {
    if speaker == "customer" {
        "user"
    } else {
        "assistant"
    }
}

pub(super) fn write_turns(biz: &str, call_id: &str, turns: &[NewTurn], offsets: &[(String, u64, u64)]) -> Result<(), Failure> {
    if !turns.is_empty() {
        let next = db::query_one_as::<i64>("SELECT IFNULL(MAX(seq), -1) + 1 FROM call_turns WHERE business_id = ?1 AND call_id = ?2", &params![biz, call_id])?.unwrap_or(0);
        for (i, t) in turns.iter().enumerate() {
            db::execute(
                "INSERT INTO call_turns (business_id, call_id, seq, speaker, text, utterance_id, audio_offset_ms, audio_end_offset_ms, created_at, grounding_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                &params![biz, call_id, next + i as i64, t.speaker, &t.text, t.utterance_id.as_deref(), t.offset_ms, t.end_offset_ms, &t.at, t.grounding.as_deref()],
            )?;
        }
    }
    for (utterance, offset, end) in offsets {
        db::execute(
            "UPDATE call_turns SET audio_offset_ms = ?4, audio_end_offset_ms = ?5 WHERE business_id = ?1 AND call_id = ?2 AND utterance_id = ?3",
            &params![biz, call_id, utterance, *offset as i64, *end as i64],
        )?;
    }
    Ok(())
}
