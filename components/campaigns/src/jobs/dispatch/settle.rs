//! Step 1 of a dispatch step: members settled by how their call ended
//! (voice) or how their opening message went (chatapp), with a retry time
//! while retries are left.

use super::*;

/// Whether a member whose call ended `status` after `attempts` attempts is
/// called again.
pub fn retried(status: CallStatus, attempts: i64, max_retries: i64) -> bool {
    matches!(status, CallStatus::Busy | CallStatus::NoAnswer | CallStatus::Failed) && attempts <= max_retries
}

/// Step 1: the outcomes of ended calls; how many were settled.
pub(super) fn settle(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64) -> Result<usize, Failure> {
    let ended: Vec<(String, i64, i64, String)> = db::query_as(
        &format!(
            "SELECT m.id, m.claim, m.attempts, c.status FROM campaign_members m \
             JOIN calls c ON c.business_id = m.business_id AND c.id = m.call_id AND c.member_claim = m.claim \
             WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND m.outcome = 'in_progress' AND c.status IN ({})",
            switchboard_voice_area::model::terminal_sql_list()
        ),
        &params![biz, iteration_id],
    )?;
    let delay_ms = it.retry_delay_minutes * model::minute_ms()?;
    for (member, claim, attempts, stored) in &ended {
        let (claim, attempts) = (*claim, *attempts);
        // Read by the terminal list above, so always a known call status.
        let Some(status) = CallStatus::parse(stored) else { continue };
        // A running iteration retries; a paused one keeps the retry for when it resumes; a cancelled one never.
        let cancelled = it.status == IterationStatus::Cancelled;
        let retry_at = (!cancelled && retried(status, attempts, it.max_retries)).then_some(now_ms + delay_ms);
        // A call's terminal status is the member's outcome of the same name.
        let outcome = if cancelled && status != CallStatus::Completed { "cancelled" } else { status.as_str() };
        db::execute(
            "UPDATE campaign_members SET outcome = ?4, retry_at_ms = ?5, updated_at = ?6 WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3 AND claim = ?7",
            &params![biz, iteration_id, member, outcome, retry_at, now(), claim],
        )?;
        model::record(biz, member, outcome)?;
    }
    Ok(ended.len())
}

/// Step 1 of a chatapp iteration: members follow their opening message's
/// delivery (`sent`, `delivered`, `read`, `failed`) and become `replied`
/// once the contact wrote in the conversation after it, while its reply
/// window is open; a `failed` opening with retries left gets a retry time,
/// as a failed call does; how many moved.
pub(super) fn settle_messages(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64) -> Result<usize, Failure> {
    let rows: Vec<(String, String, String, i64, bool)> = db::query_as(
        "SELECT m.id, m.outcome, k.status, m.attempts, \
                EXISTS (SELECT 1 FROM messages i WHERE i.business_id = k.business_id AND i.conversation_id = k.conversation_id \
                        AND i.direction = 'inbound' AND i.created_at > k.created_at) \
         FROM campaign_members m JOIN messages k ON k.business_id = m.business_id AND k.id = m.message_id \
         WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND m.outcome IN ('in_progress', 'sent', 'delivered', 'read') \
           AND (m.outcome = 'in_progress' OR m.open_until_ms > ?3)",
        &params![biz, iteration_id, now_ms],
    )?;
    let delay_ms = it.retry_delay_minutes * model::minute_ms()?;
    let mut moved = 0;
    for (member, before, message_status, attempts, replied) in rows {
        let after = if replied { "replied" } else { message_outcome(&message_status) };
        if after != before {
            // A running iteration retries; a paused one keeps the retry for when it resumes; a cancelled one never.
            let retry_at = (it.status != IterationStatus::Cancelled && opening_retried(after, attempts, it.max_retries)).then_some(now_ms + delay_ms);
            db::execute(
                "UPDATE campaign_members SET outcome = ?4, retry_at_ms = ?5, updated_at = ?6 WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
                &params![biz, iteration_id, &member, after, retry_at, now()],
            )?;
            model::record(biz, &member, after)?;
            moved += 1;
        }
    }
    Ok(moved)
}

/// Whether a member whose opening ended `outcome` after `attempts` openings
/// is sent another: only a `failed` one (the provider refused or could not
/// deliver it), while retries are left; sent, delivered, read and replied
/// ones never are.
pub fn opening_retried(outcome: &str, attempts: i64, max_retries: i64) -> bool {
    outcome == "failed" && attempts <= max_retries
}

/// A member's outcome for its message's delivery status.
pub fn message_outcome(status: &str) -> &'static str {
    match MessageStatus::parse(status) {
        // The member's outcome of the same name.
        Some(s @ (MessageStatus::Sent | MessageStatus::Delivered | MessageStatus::Read | MessageStatus::Failed)) => s.as_str(),
        _ => "in_progress",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_no_answer_and_failed_are_retried_while_retries_are_left() {
        use CallStatus::*;
        assert!(retried(Busy, 1, 1));
        assert!(retried(NoAnswer, 1, 2) && retried(Failed, 2, 2));
        assert!(!retried(NoAnswer, 2, 1), "two attempts with one retry allowed: done");
        assert!(!retried(Busy, 1, 0), "no retries");
        assert!(!retried(Completed, 1, 5) && !retried(Cancelled, 1, 5), "completed and cancelled calls are never retried");
    }

    #[test]
    fn failed_openings_are_retried_while_retries_are_left() {
        assert!(opening_retried("failed", 1, 1) && opening_retried("failed", 2, 2));
        assert!(!opening_retried("failed", 2, 1), "two openings with one retry allowed: done");
        assert!(!opening_retried("failed", 1, 0), "no retries");
        for ended in ["sent", "delivered", "read", "replied", "skipped"] {
            assert!(!opening_retried(ended, 1, 5), "{ended} is never retried");
        }
    }
}
