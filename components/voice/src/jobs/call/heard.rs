//! A call whose carrier hears the customer in turns (issue 48: a
//! Twilio-style speech `<Gather>` posts what was recognised, or nothing
//! when the listening timed out). The host records each post once in
//! `carrier_turns` (host/src/carrier_events/turns.rs) and holds the
//! carrier's request until the step answers it there:
//!
//! * turn 0 is the call's answer: the greeting follows;
//! * a later post means everything said before it has played (or was cut
//!   by the customer); its words become the customer's turn, which the
//!   agent answers (grounded, with lookups and `end_call`) as the sandbox
//!   call's; a post without words is silence, which nudges and then ends
//!   the call by the agent's settings;
//! * a partial result that came while the answer of the turn before was
//!   playing marks where the customer cut in: the share of it played then
//!   is estimated from the time since it was answered and its length
//!   ([`MS_PER_CHAR`]), for `repeatInterruptedSentence`;
//! * such a call speaks only in answers to its posts: no `say`, no nudge
//!   by the clock (the carrier's listening times out instead), and the
//!   carrier's hang-up after an `end_call` answer is the agent's.

use super::*;

/// Speech time per character of an utterance, for the share of it played
/// when the customer cut in (about 15 characters a second).
pub(super) const MS_PER_CHAR: i64 = 65;

/// A post of the call, or the answer it got.
pub(super) struct Posted {
    pub(super) turn: i64,
    /// The post came (a partial result alone leaves it `None`).
    pub(super) heard: Option<Value>,
    pub(super) received_ms: i64,
    pub(super) partial_ms: Option<i64>,
    pub(super) answer: Option<Value>,
    pub(super) answered_ms: Option<i64>,
}

impl Posted {
    pub(super) fn waiting(&self) -> bool {
        self.heard.is_some() && self.answer.is_none()
    }
    pub(super) fn speech(&self) -> Option<String> {
        self.heard.as_ref().and_then(|h| h["speech"].as_str()).map(String::from).filter(|s| !s.trim().is_empty())
    }
}

/// The call's latest posts, oldest first (empty: its carrier does not hear
/// in turns, or has not posted yet).
pub(super) fn latest(biz: &str, call_id: &str) -> Result<Vec<Posted>, Failure> {
    let rows: Vec<PostedRow> = db::query_as(
        "SELECT turn, heard_json, received_at_ms, partial_at_ms, answer_json, answered_at_ms FROM carrier_turns \
         WHERE business_id = ?1 AND call_id = ?2 ORDER BY turn DESC LIMIT 4",
        &params![biz, call_id],
    )?;
    let json = |t: Option<String>| t.and_then(|t| serde_json::from_str::<Value>(&t).ok());
    Ok(rows
        .into_iter()
        .rev()
        .map(|(turn, heard, received_ms, partial_ms, answer, answered_ms)| Posted { turn, heard: json(heard), received_ms: received_ms.unwrap_or(0), partial_ms, answer: json(answer), answered_ms })
        .collect())
}

/// `turn, heard_json, received_at_ms, partial_at_ms, answer_json, answered_at_ms`.
type PostedRow = (i64, Option<String>, Option<i64>, Option<i64>, Option<String>, Option<i64>);

/// Whether a post of the call waits for its answer.
pub(super) fn waiting(biz: &str, call_id: &str) -> Result<bool, Failure> {
    Ok(db::query_one("SELECT 1 FROM carrier_turns WHERE business_id = ?1 AND call_id = ?2 AND heard_json IS NOT NULL AND answer_json IS NULL LIMIT 1", &params![biz, call_id])?.is_some())
}

/// The share (percent) of the answer to the turn before `p` played when
/// the customer began speaking over it, if they did.
pub(super) fn cut_in(posted: &[Posted], p: &Posted) -> Option<i64> {
    let partial = p.partial_ms?;
    let before = posted.iter().find(|x| x.turn == p.turn - 1)?;
    let answer = before.answer.as_ref()?;
    if !answer["bargeIn"].as_bool().unwrap_or(false) {
        return None;
    }
    let length = answer["text"].as_str()?.chars().count() as i64 * MS_PER_CHAR;
    let share = (partial - before.answered_ms?).max(0) * 100 / length.max(1);
    (share < 100).then_some(share)
}

/// How long the carrier listens after an answer (seconds): until the
/// nudge, or, once nudged, until the silence ends the call.
pub(super) fn listen_seconds(c: &Call, now_ms: i64) -> u32 {
    let nudge = conversation::nudge_ms(&c.settings);
    let wait = match conversation::disconnect_ms(&c.settings) {
        Some(d) if c.nudged => d - (now_ms - c.last_activity_ms.unwrap_or(now_ms)),
        _ => nudge,
    };
    ((wait.max(1_000) + 999) / 1000).min(3_600) as u32
}

/// Writes the answer to a post.
pub(super) fn answer(biz: &str, call_id: &str, turn: i64, answer: &Value) -> Result<(), Failure> {
    db::execute(
        "UPDATE carrier_turns SET answer_json = ?4, answered_at_ms = ?5 WHERE business_id = ?1 AND call_id = ?2 AND turn = ?3 AND answer_json IS NULL",
        &params![biz, call_id, turn, answer.to_string(), clock::now_ms()],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn posted(turn: i64, answer: Option<Value>, answered_ms: Option<i64>, partial_ms: Option<i64>) -> Posted {
        Posted { turn, heard: Some(json!({})), received_ms: 0, partial_ms, answer, answered_ms }
    }

    #[test]
    fn a_partial_result_marks_where_the_customer_cut_in() {
        let text = "x".repeat(100); // 6.5 s
        let before = posted(1, Some(json!({"text": text, "bargeIn": true})), Some(10_000), None);
        assert_eq!(cut_in(&[before], &posted(2, None, None, Some(13_250))), Some(50));
        let before = posted(1, Some(json!({"text": text, "bargeIn": true})), Some(10_000), None);
        assert_eq!(cut_in(&[before], &posted(2, None, None, Some(20_000))), None, "after it played");
        let before = posted(1, Some(json!({"text": text, "bargeIn": false})), Some(10_000), None);
        assert_eq!(cut_in(&[before], &posted(2, None, None, Some(10_100))), None, "no barge-in");
        let before = posted(1, Some(json!({"text": text, "bargeIn": true})), Some(10_000), None);
        assert_eq!(cut_in(&[before], &posted(2, None, None, None)), None, "no partial result");
    }
}
