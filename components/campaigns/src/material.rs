//! What a summary run assesses of one contact: its outcome in every
//! iteration it was in, what was said in its campaign calls (their
//! transcripts) and what was written in its campaign conversations (from a
//! chatapp iteration's opening message to the iteration's end).
//!
//! The size of the material (the characters of those texts, counting at
//! most [`MAX_CHARS`]) prices an assessment. It is measured twice and the
//! same way: for every contact at once in SQL when a run is estimated
//! ([`estimate`]), and for one contact in Rust when it is assessed
//! ([`of`]); the job charges the smaller of what it measured and what was
//! estimated, so a run never charges more than its confirmed maximum.

use switchboard_guest::ai::{AssessmentInput, AssessmentOutcome};
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::Failure;

/// At most this many characters of a contact's material are sent and paid
/// for (the latest ones: earlier turns are left out first).
pub const MAX_CHARS: i64 = 20_000;

/// What an assessment of `chars` characters costs at the run's price.
pub fn charge(chars: i64, per_contact: i64, per_thousand: i64) -> i64 {
    per_contact + per_thousand * ((chars.clamp(0, MAX_CHARS) + 999) / 1000)
}

/// Writes one `summary_assessments` row per unique contact of `campaign`
/// for run `run_id`: its final outcome (in the last iteration it was in),
/// its material's size and its maximum charge. One statement, so 100,000
/// contacts hold no list in memory.
pub fn estimate(biz: &str, campaign: &str, run_id: &str, per_contact: i64, per_thousand: i64) -> Result<(), Failure> {
    db::execute(
        "INSERT INTO summary_assessments (business_id, run_id, contact_id, final_outcome, material_chars, maximum_charge) \
         WITH members AS ( \
             SELECT m.contact_id, m.outcome, m.message_id, i.sequence, i.ended_at \
             FROM campaign_members m JOIN campaign_iterations i ON i.business_id = m.business_id AND i.id = m.iteration_id \
             WHERE m.business_id = ?1 AND m.campaign_id = ?2), \
         last AS ( \
             SELECT contact_id, outcome FROM ( \
                 SELECT contact_id, outcome, ROW_NUMBER() OVER (PARTITION BY contact_id ORDER BY sequence DESC) AS n FROM members) \
             WHERE n = 1), \
         said AS ( \
             SELECT k.contact_id, SUM(length(t.text)) AS chars \
             FROM calls k JOIN call_turns t ON t.business_id = k.business_id AND t.call_id = k.id \
             WHERE k.business_id = ?1 AND k.campaign_id = ?2 AND k.contact_id IS NOT NULL GROUP BY k.contact_id), \
         written AS ( \
             SELECT m.contact_id, SUM(length(x.text)) AS chars FROM members m \
             JOIN messages o ON o.id = m.message_id AND o.business_id = ?1 \
             JOIN messages x ON x.business_id = ?1 AND x.conversation_id = o.conversation_id \
                            AND x.created_at >= o.created_at AND (m.ended_at IS NULL OR x.created_at <= m.ended_at) \
             WHERE m.message_id IS NOT NULL GROUP BY m.contact_id), \
         sized AS ( \
             SELECT l.contact_id, l.outcome, MIN(?6, IFNULL(s.chars, 0) + IFNULL(w.chars, 0)) AS chars \
             FROM last l LEFT JOIN said s ON s.contact_id = l.contact_id LEFT JOIN written w ON w.contact_id = l.contact_id) \
         SELECT ?1, ?3, contact_id, outcome, chars, ?4 + ?5 * ((chars + 999) / 1000) FROM sized",
        &[biz.into(), campaign.into(), run_id.into(), per_contact.into(), per_thousand.into(), MAX_CHARS.into()],
    )?;
    Ok(())
}

/// One contact's material, and the size that prices it (all of its
/// characters, at most [`MAX_CHARS`]). The conversation sent keeps the
/// latest turns within [`MAX_CHARS`].
pub fn of(biz: &str, campaign: &str, objective: &str, contact: &str) -> Result<(AssessmentInput, i64), Failure> {
    let mut outcomes = Vec::new();
    let mut conversation: Vec<(String, String)> = Vec::new();
    for m in db::query(
        "SELECT i.id, i.sequence, i.channel, m.outcome, m.attempts, m.message_id, i.ended_at \
         FROM campaign_members m JOIN campaign_iterations i ON i.business_id = m.business_id AND i.id = m.iteration_id \
         WHERE m.business_id = ?1 AND m.campaign_id = ?2 AND m.contact_id = ?3 ORDER BY i.sequence",
        &[biz.into(), campaign.into(), contact.into()],
    )? {
        outcomes.push(AssessmentOutcome { sequence: m.int(1) as u32, channel: m.text(2), outcome: m.text(3), attempts: m.int(4) as u32 });
        for t in db::query(
            "SELECT t.speaker, t.text FROM calls k JOIN call_turns t ON t.business_id = k.business_id AND t.call_id = k.id \
             WHERE k.business_id = ?1 AND k.campaign_id = ?2 AND k.iteration_id = ?3 AND k.contact_id = ?4 ORDER BY k.id, t.seq",
            &[biz.into(), campaign.into(), m.text(0).into(), contact.into()],
        )? {
            conversation.push((if t.text(0) == "customer" { "user" } else { "assistant" }.into(), t.text(1)));
        }
        if let Some(opening) = m.opt_text(5) {
            for x in db::query(
                "SELECT x.direction, x.text FROM messages o JOIN messages x ON x.business_id = o.business_id AND x.conversation_id = o.conversation_id \
                 WHERE o.id = ?2 AND o.business_id = ?1 AND x.created_at >= o.created_at AND (?3 IS NULL OR x.created_at <= ?3) AND x.text IS NOT NULL \
                 ORDER BY x.created_at, x.id",
                &[biz.into(), opening.into(), m.opt_text(6).into()],
            )? {
                conversation.push((if x.text(0) == "inbound" { "user" } else { "assistant" }.into(), x.text(1)));
            }
        }
    }
    let total: i64 = conversation.iter().map(|(_, t)| t.chars().count() as i64).sum();
    let input = AssessmentInput { objective: objective.to_string(), outcomes, conversation: latest(conversation, MAX_CHARS as usize) };
    Ok((input, total.min(MAX_CHARS)))
}

/// The latest turns of `conversation` that fit in `max` characters; the
/// turn before them is kept in part (its end) when there is room left.
fn latest(conversation: Vec<(String, String)>, max: usize) -> Vec<(String, String)> {
    let mut kept = Vec::new();
    let mut room = max;
    for (role, text) in conversation.into_iter().rev() {
        let n = text.chars().count();
        if n <= room {
            room -= n;
            kept.push((role, text));
        } else {
            if room > 0 {
                kept.push((role, text.chars().skip(n - room).collect()));
            }
            break;
        }
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_and_the_latest_turns() {
        assert_eq!(charge(0, 2_000, 500), 2_000);
        assert_eq!(charge(1, 2_000, 500), 2_500);
        assert_eq!(charge(1_000, 2_000, 500), 2_500);
        assert_eq!(charge(1_001, 2_000, 500), 3_000);
        assert_eq!(charge(1_000_000, 2_000, 500), 12_000, "at most MAX_CHARS are paid for");
        let turns = |v: &[(&str, &str)]| v.iter().map(|(r, t)| (r.to_string(), t.to_string())).collect::<Vec<_>>();
        assert_eq!(latest(turns(&[("user", "aaaa"), ("assistant", "bb"), ("user", "cc")]), 5), turns(&[("user", "a"), ("assistant", "bb"), ("user", "cc")]));
        assert_eq!(latest(turns(&[("user", "aaaa"), ("assistant", "bb"), ("user", "cc")]), 4), turns(&[("assistant", "bb"), ("user", "cc")]));
        assert_eq!(latest(turns(&[("user", "aaaa"), ("assistant", "bb")]), 4), turns(&[("user", "aa"), ("assistant", "bb")]));
        assert_eq!(latest(turns(&[("user", "abcdef")]), 3), turns(&[("user", "def")]));
    }
}
