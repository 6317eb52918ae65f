//! A contact's shared summary of one campaign (`campaignSummary` of the
//! contact read, operation 31): its outcome in every iteration of the
//! campaign it was in, and its latest assessment in a finished summary run.
//! Read here, by the contacts area; written by the campaigns area
//! (memberships, `campaigns.summarize`).

use serde_json::{json, Value};

use crate::db;
use crate::{params, Failure};

/// A contact's membership of one iteration of a campaign.
pub struct Membership {
    pub iteration_id: String,
    pub sequence: i64,
    pub channel: String,
    pub outcome: String,
    pub attempts: i64,
    /// A chatapp iteration's opening message to the contact.
    pub message_id: Option<String>,
    /// When the iteration ended.
    pub ended_at: Option<String>,
}

/// The contact's memberships of `campaign`, oldest iteration first (also
/// what a summary run assesses: `components/campaigns/src/material.rs`).
pub fn memberships(biz: &str, contact: &str, campaign: &str) -> Result<Vec<Membership>, Failure> {
    type MembershipRow = (String, i64, String, String, i64, Option<String>, Option<String>);
    let rows: Vec<MembershipRow> = db::query_as(
        "SELECT i.id, i.sequence, i.channel, m.outcome, m.attempts, m.message_id, i.ended_at \
         FROM campaign_iterations i JOIN campaign_members m ON m.business_id = i.business_id AND m.iteration_id = i.id AND m.contact_id = ?2 \
         WHERE i.business_id = ?1 AND i.campaign_id = ?3 ORDER BY i.sequence",
        &params![biz, contact, campaign],
    )?;
    Ok(rows
        .into_iter()
        .map(|(iteration_id, sequence, channel, outcome, attempts, message_id, ended_at)| Membership { iteration_id, sequence, channel, outcome, attempts, message_id, ended_at })
        .collect())
}

/// None when the contact was never a member of `campaign` (or the campaign
/// is not this business's).
pub fn of(biz: &str, contact: &str, campaign: &str) -> Result<Option<Value>, Failure> {
    let outcomes: Vec<Value> = memberships(biz, contact, campaign)?
        .iter()
        .map(|m| json!({"iterationId": m.iteration_id, "sequence": m.sequence, "channel": m.channel, "outcome": m.outcome, "attempts": m.attempts}))
        .collect();
    if outcomes.is_empty() {
        return Ok(None);
    }
    let assessment = db::query_one_as::<(String, String, String, i64, String)>(
        "SELECT a.run_id, a.summary, a.next_action, a.follow_up, a.assessed_at \
         FROM summary_assessments a INDEXED BY summary_assessments_contact JOIN summary_runs r ON r.business_id = a.business_id AND r.id = a.run_id \
         WHERE a.business_id = ?1 AND a.contact_id = ?2 AND r.campaign_id = ?3 AND a.status = 'assessed' AND r.status IN ('completed', 'partial') \
         ORDER BY a.run_id DESC LIMIT 1",
        &params![biz, contact, campaign],
    )?
    .map(
        |(run_id, summary, next_action, follow_up, assessed_at)| json!({"summaryRunId": run_id, "summary": summary, "nextAction": next_action, "followUp": follow_up == 1, "assessedAt": assessed_at}),
    );
    Ok(Some(json!({"campaignId": campaign, "outcomes": outcomes, "assessment": assessment})))
}
