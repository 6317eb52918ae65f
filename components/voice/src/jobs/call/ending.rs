//! How a call ends: the terminal status, `endedBy` and `endReason` from
//! the stored intent and the carrier's cause, then the charge and release,
//! the line freed (and the oldest waiting call woken) and the contact's
//! timeline entry, once; a campaign call's end wakes its iteration's
//! dispatch.

use super::*;
use switchboard_guest::job_kinds::{self, campaigns::dispatch_lane};
use switchboard_guest::row_struct;

/// How a call ends.
pub(super) struct Ending<'a> {
    pub(super) status: CallStatus,
    pub(super) ended_by: &'a str,
    pub(super) reason: &'a str,
    pub(super) connected_ms: u64,
    pub(super) attempt_cost: u64,
    pub(super) recording_ext: Option<String>,
}

/// The terminal status, `endedBy` and `endReason` of a call that ended
/// with `cause`, given the intent stored before the carrier heard of it.
pub(super) fn classify(intent: Option<EndIntent>, cause: EndCause) -> (CallStatus, &'static str, &'static str) {
    match (intent, cause) {
        (Some(EndIntent::Operator), _) => (CallStatus::Cancelled, "operator", "operator_cancelled"),
        (Some(EndIntent::Silence), _) => (CallStatus::Completed, "system", "silence_timeout"),
        (Some(EndIntent::MaxDuration), _) | (None, EndCause::MaxDuration) => (CallStatus::Completed, "system", "max_duration"),
        (_, EndCause::Completed | EndCause::AgentHungUp) => (CallStatus::Completed, "agent", "agent_ended_call"),
        (_, EndCause::CustomerHungUp) => (CallStatus::Completed, "customer", "customer_hung_up"),
        (_, EndCause::NoAnswer) => (CallStatus::NoAnswer, "provider", "no_answer"),
        (_, EndCause::Busy) => (CallStatus::Busy, "provider", "busy"),
        (_, EndCause::Rejected) => (CallStatus::Failed, "provider", "carrier_rejected"),
        (_, EndCause::CarrierFailure) => (CallStatus::Failed, "provider", "carrier_failure"),
        (_, EndCause::OperatorHungUp) => (CallStatus::Cancelled, "operator", "operator_cancelled"),
        (_, EndCause::MaxDuration) => (CallStatus::Completed, "system", "max_duration"),
    }
}

/// Ends a call that never reached the carrier (or never connected through
/// it): nothing to charge.
pub(super) fn finish_unplaced(biz: &str, c: &Call, status: CallStatus, ended_by: &str, reason: &str) -> Result<Outcome, Failure> {
    finish(biz, c, Ending { status, ended_by, reason, connected_ms: 0, attempt_cost: 0, recording_ext: None })?;
    Ok(Outcome::Done)
}

/// The end: terminal status, charge and release, the line freed and the
/// next waiting call woken, the contact's timeline entry. A call already
/// terminal is left alone.
pub(super) fn finish(biz: &str, c: &Call, end: Ending) -> Result<(), Failure> {
    let charge = billing::charge(end.connected_ms, end.attempt_cost, c.price, c.reserved);
    let changed = db::execute(
        &format!(
            "UPDATE calls SET status = ?3, ended_by = ?4, end_reason = ?5, connected_ms = ?6, charged = ?7, reserved = 0, holds_line = 0, \
                              ended_at = ?8, memo = IFNULL(?9, memo), recording_ext = ?10 \
             WHERE business_id = ?1 AND id = ?2 AND status NOT IN ({})",
            model::terminal_sql_list()
        ),
        &params![biz, &c.id, end.status.as_str(), end.ended_by, end.reason, end.connected_ms.min(i64::MAX as u64) as i64, charge, now(), c.memo.as_deref(), end.recording_ext.as_deref(),],
    )?;
    if changed == 1 {
        billing::settle(biz, &c.id, c.reserved, charge)?;
        super::wake::next_waiting(biz)?;
        // A campaign's line is free: its dispatch refills it now rather
        // than at its next poll (which backs off while calls last).
        if let Some(iteration_id) = &c.iteration_id {
            job_kinds::wake_lane(&db::Store, &dispatch_lane(iteration_id), clock::now_ms())?;
        }
        append_timeline(biz, &c.id)?;
    }
    Ok(())
}

/// The call's entry on its contact's timeline (a `toNumber` call has none):
/// outcome, duration, who ended it, whether a transcript exists.
pub fn append_timeline(biz: &str, call_id: &str) -> Result<(), Failure> {
    let Some(r) = db::query_one_as::<TimelineRow>(
        "SELECT contact_id, status, connected_ms, ended_by, end_reason, created_at, agent_name, \
                EXISTS (SELECT 1 FROM call_turns t WHERE t.business_id = c.business_id AND t.call_id = c.id), campaign_id \
         FROM calls c WHERE business_id = ?1 AND id = ?2 AND contact_id IS NOT NULL",
        &params![biz, call_id],
    )?
    else {
        return Ok(());
    };
    let summary = json!({
        "callId": call_id,
        "status": r.status,
        "durationSeconds": duration_seconds(r.connected_ms),
        "endedBy": r.ended_by,
        "endReason": r.end_reason,
        "agentName": r.agent_name,
        "transcriptAvailable": r.has_turns,
    });
    timeline::append_call(biz, &r.contact_id, &r.created_at, r.campaign_id.as_deref(), &summary)
}

row_struct! {
    /// What a call's timeline entry is made of.
    struct TimelineRow {
        contact_id: String,
        status: String,
        connected_ms: i64,
        ended_by: Option<String>,
        end_reason: Option<String>,
        created_at: String,
        agent_name: String,
        has_turns: bool,
        campaign_id: Option<String>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_intent_names_who_ended_the_call() {
        assert_eq!(classify(Some(EndIntent::Operator), EndCause::CustomerHungUp), (CallStatus::Cancelled, "operator", "operator_cancelled"));
        assert_eq!(classify(Some(EndIntent::Operator), EndCause::OperatorHungUp), (CallStatus::Cancelled, "operator", "operator_cancelled"));
        assert_eq!(classify(Some(EndIntent::Agent), EndCause::Completed), (CallStatus::Completed, "agent", "agent_ended_call"));
        assert_eq!(classify(Some(EndIntent::Agent), EndCause::CustomerHungUp), (CallStatus::Completed, "customer", "customer_hung_up"));
        assert_eq!(classify(None, EndCause::CustomerHungUp), (CallStatus::Completed, "customer", "customer_hung_up"));
        assert_eq!(classify(None, EndCause::NoAnswer), (CallStatus::NoAnswer, "provider", "no_answer"));
        assert_eq!(classify(None, EndCause::Busy), (CallStatus::Busy, "provider", "busy"));
        assert_eq!(classify(None, EndCause::Rejected), (CallStatus::Failed, "provider", "carrier_rejected"));
        assert_eq!(classify(None, EndCause::MaxDuration), (CallStatus::Completed, "system", "max_duration"));
        assert_eq!(classify(Some(EndIntent::Silence), EndCause::Completed), (CallStatus::Completed, "system", "silence_timeout"));
    }
}
