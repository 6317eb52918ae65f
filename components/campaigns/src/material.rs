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
//!
//! Query plans: without ANALYZE statistics SQLite takes `business_id = ?`
//! as selective and would scan a business's whole table by primary key, so
//! these queries go through the campaign's iterations (a handful) or name
//! their index (`INDEXED BY`).

use switchboard_guest::ai::{AssessmentInput, AssessmentOutcome};
use switchboard_guest::campaign_summary;
use switchboard_guest::db;
use switchboard_guest::{params, Failure};

/// At most this many characters of a contact's material are sent and paid
/// for (the latest ones: earlier turns are left out first).
pub const MAX_CHARS: i64 = 20_000;

/// What an assessment of `chars` characters costs at the run's price.
pub fn charge(chars: i64, per_contact: i64, per_thousand: i64) -> i64 {
    per_contact + per_thousand * ((chars.clamp(0, MAX_CHARS) + 999) / 1000)
}

/// Writes one `summary_assessments` row per unique contact of `campaign`
/// for run `run_id`: its final outcome (in the last iteration it was in),
/// its material's size and its maximum charge. Set-based statements in the
/// caller's transaction, so 100,000 contacts hold no list in memory: the
/// rows, then what was said (calls) and written (chatapp conversations)
/// added per contact, then the cap and the price.
pub fn estimate(biz: &str, campaign: &str, run_id: &str, per_contact: i64, per_thousand: i64) -> Result<(), Failure> {
    let ids = params![biz, campaign, run_id];
    db::execute(
        "INSERT INTO summary_assessments (business_id, run_id, contact_id, final_outcome, material_chars, maximum_charge) \
         SELECT ?1, ?3, contact_id, outcome, 0, 0 FROM ( \
             SELECT m.contact_id, m.outcome, ROW_NUMBER() OVER (PARTITION BY m.contact_id ORDER BY i.sequence DESC) AS n \
             FROM campaign_iterations i CROSS JOIN campaign_members m ON m.business_id = i.business_id AND m.iteration_id = i.id \
             WHERE i.business_id = ?1 AND i.campaign_id = ?2) \
         WHERE n = 1",
        &ids,
    )?;
    db::execute(
        "UPDATE summary_assessments AS a SET material_chars = a.material_chars + s.chars FROM ( \
             SELECT k.contact_id, SUM(length(t.text)) AS chars \
             FROM calls k INDEXED BY calls_campaign JOIN call_turns t ON t.business_id = k.business_id AND t.call_id = k.id \
             WHERE k.business_id = ?1 AND k.campaign_id = ?2 AND k.campaign_id IS NOT NULL AND k.contact_id IS NOT NULL GROUP BY k.contact_id) AS s \
         WHERE a.business_id = ?1 AND a.run_id = ?3 AND a.contact_id = s.contact_id",
        &ids,
    )?;
    db::execute(
        "UPDATE summary_assessments AS a SET material_chars = a.material_chars + w.chars FROM ( \
             SELECT m.contact_id, SUM(length(x.text)) AS chars \
             FROM campaign_iterations i CROSS JOIN campaign_members m ON m.business_id = i.business_id AND m.iteration_id = i.id \
             CROSS JOIN messages o ON o.id = m.message_id \
             CROSS JOIN messages x ON x.business_id = o.business_id AND x.conversation_id = o.conversation_id \
                                  AND x.created_at >= o.created_at AND (i.ended_at IS NULL OR x.created_at <= i.ended_at) \
             WHERE i.business_id = ?1 AND i.campaign_id = ?2 AND m.message_id IS NOT NULL AND o.business_id = ?1 GROUP BY m.contact_id) AS w \
         WHERE a.business_id = ?1 AND a.run_id = ?3 AND a.contact_id = w.contact_id",
        &ids,
    )?;
    db::execute(
        "UPDATE summary_assessments SET material_chars = MIN(material_chars, ?3), maximum_charge = ?4 + ?5 * ((MIN(material_chars, ?3) + 999) / 1000) \
         WHERE business_id = ?1 AND run_id = ?2",
        &params![biz, run_id, MAX_CHARS, per_contact, per_thousand],
    )?;
    Ok(())
}

/// One contact's material, and the size that prices it (all of its
/// characters, at most [`MAX_CHARS`]). The conversation sent keeps the
/// latest turns within [`MAX_CHARS`].
pub fn of(biz: &str, campaign: &str, objective: &str, contact: &str) -> Result<(AssessmentInput, i64), Failure> {
    let mut outcomes = Vec::new();
    let mut conversation: Vec<(String, String)> = Vec::new();
    for m in campaign_summary::memberships(biz, contact, campaign)? {
        outcomes.push(AssessmentOutcome { sequence: m.sequence as u32, channel: m.channel, outcome: m.outcome, attempts: m.attempts as u32 });
        for (speaker, text) in db::query_as::<(String, String)>(
            "SELECT t.speaker, t.text FROM calls k INDEXED BY calls_contact JOIN call_turns t ON t.business_id = k.business_id AND t.call_id = k.id \
             WHERE k.business_id = ?1 AND k.contact_id = ?4 AND k.campaign_id = ?2 AND k.iteration_id = ?3 ORDER BY k.id, t.seq",
            &params![biz, campaign, &m.iteration_id, contact],
        )? {
            conversation.push((if speaker == "customer" { "user" } else { "assistant" }.into(), text));
        }
        if let Some(opening) = m.message_id {
            for (direction, text) in db::query_as::<(String, String)>(
                "SELECT x.direction, x.text FROM messages o JOIN messages x ON x.business_id = o.business_id AND x.conversation_id = o.conversation_id \
                 WHERE o.id = ?2 AND o.business_id = ?1 AND x.created_at >= o.created_at AND (?3 IS NULL OR x.created_at <= ?3) AND x.text IS NOT NULL \
                 ORDER BY x.created_at, x.id",
                &params![biz, opening, m.ended_at],
            )? {
                conversation.push((if direction == "inbound" { "user" } else { "assistant" }.into(), text));
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
