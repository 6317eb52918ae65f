//! How campaigns, iterations and members read, and the rules by which they
//! move: written once here, used by the requests and the dispatch job.

use serde_json::{json, Map, Value};
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::row_struct;
use switchboard_guest::{fail, now, params, Failure, HResult};

use crate::window::Window;

/// Every outcome a member can have (the `counts` keys besides `total`).
pub const OUTCOMES: [&str; 12] = ["pending", "in_progress", "completed", "no_answer", "busy", "failed", "cancelled", "sent", "delivered", "read", "replied", "skipped"];

/// An iteration's status (`campaign_iterations.status`): the start, pause
/// and cancel of a campaign move its current iteration between these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IterationStatus {
    Draft,
    Running,
    Paused,
    Completed,
    Cancelled,
}

impl IterationStatus {
    pub const ALL: [IterationStatus; 5] = [Self::Draft, Self::Running, Self::Paused, Self::Completed, Self::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Ended: no member is claimed or called again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Cancelled)
    }

    /// The moves an operator may ask for (start, pause, cancel); asking for
    /// the state it is in is answered without a move.
    pub fn may_become(self, target: IterationStatus) -> bool {
        use IterationStatus::*;
        matches!((self, target), (Draft | Paused, Running) | (Running, Paused) | (Draft | Running | Paused, Cancelled))
    }
}

/// True when the stored status `status` is terminal.
pub fn is_terminal(status: &str) -> bool {
    IterationStatus::parse(status).is_some_and(IterationStatus::is_terminal)
}

/// The columns an [`IterationRow`] reads, in order (prefix `i.`).
pub const ITERATION_COLUMNS: &str = "i.id, i.campaign_id, i.sequence, i.channel, i.agent_id, i.status, i.audience, i.max_retries, i.retry_delay_minutes, \
     i.started_at, i.ended_at, i.created_at, i.updated_at, i.paused_reason, i.max_spend, \
     (SELECT IFNULL(SUM(k.charged), 0) FROM calls k WHERE k.business_id = i.business_id AND k.campaign_id = i.campaign_id AND k.iteration_id = i.id), \
     i.window_start, i.window_end, i.opening_message";

/// Members per outcome of an iteration.
pub fn counts(biz: &str, iteration_id: &str) -> Result<Value, Failure> {
    let mut out = Map::new();
    out.insert("total".into(), json!(0));
    for o in OUTCOMES {
        out.insert(o.into(), json!(0));
    }
    let mut total = 0;
    let rows: Vec<(String, i64)> = db::query_as("SELECT outcome, COUNT(*) FROM campaign_members WHERE business_id = ?1 AND iteration_id = ?2 GROUP BY outcome", &params![biz, iteration_id])?;
    for (outcome, n) in rows {
        total += n;
        out.insert(outcome, json!(n));
    }
    out.insert("total".into(), json!(total));
    Ok(Value::Object(out))
}

row_struct! {
    /// A row of [`ITERATION_COLUMNS`].
    pub struct IterationRow {
        pub id: String,
        pub campaign_id: String,
        pub sequence: i64,
        pub channel: Channel,
        pub agent_id: String,
        /// As stored (`IterationStatus` names it).
        pub status: String,
        pub audience: String,
        pub max_retries: i64,
        pub retry_delay_minutes: i64,
        pub started_at: Option<String>,
        pub ended_at: Option<String>,
        pub created_at: String,
        pub updated_at: String,
        pub paused_reason: Option<String>,
        pub max_spend: Option<i64>,
        /// What the iteration's calls were charged.
        pub spent: i64,
        pub window_start: Option<i64>,
        pub window_end: Option<i64>,
        pub opening_message: Option<String>,
    }
}

/// An iteration's calling window, when it has both ends.
pub fn window_of(start: Option<i64>, end: Option<i64>) -> Option<Window> {
    match (start, end) {
        (Some(start), Some(end)) => Some(Window { start: start as u32, end: end as u32 }),
        _ => None,
    }
}

/// A row of [`ITERATION_COLUMNS`] as an iteration, with live counts.
pub fn iteration(biz: &str, r: &IterationRow) -> Result<Value, Failure> {
    Ok(json!({
        "id": r.id,
        "campaignId": r.campaign_id,
        "sequence": r.sequence,
        "channel": r.channel.name(),
        "agentId": r.agent_id,
        "status": r.status,
        "pausedReason": r.paused_reason,
        "audience": r.audience,
        "maxRetries": r.max_retries,
        "retryDelayMinutes": r.retry_delay_minutes,
        "maxSpendMicrocredits": r.max_spend,
        "spentMicrocredits": r.spent,
        "openingMessage": r.opening_message,
        "callingWindow": window_of(r.window_start, r.window_end).map_or(Value::Null, |w| w.json()),
        "counts": counts(biz, &r.id)?,
        "startedAt": r.started_at,
        "endedAt": r.ended_at,
        "createdAt": r.created_at,
        "updatedAt": r.updated_at,
    }))
}

pub fn campaign_not_found(id: &str) -> Failure {
    fail::not_found("campaign_not_found", format!("campaign `{id}` not found"))
}

/// A campaign of this business with its current (latest) iteration, as
/// `CampaignResult`.
pub fn result(biz: &str, campaign_id: &str) -> HResult<Value> {
    let (id, name, objective, created_at, updated_at, iteration_count) = db::query_one_as::<(String, String, String, String, String, i64)>(
        "SELECT id, name, objective, created_at, updated_at, \
                (SELECT COUNT(*) FROM campaign_iterations i WHERE i.business_id = k.business_id AND i.campaign_id = k.id) \
         FROM campaigns k WHERE business_id = ?1 AND id = ?2",
        &params![biz, campaign_id],
    )?
    .ok_or_else(|| campaign_not_found(campaign_id))?;
    let current = current(biz, campaign_id)?;
    Ok(json!({
        "campaign": {
            "id": id,
            "businessId": biz,
            "name": name,
            "objective": objective,
            "iterationCount": iteration_count,
            "currentIterationId": current.id,
            "createdAt": created_at,
            "updatedAt": updated_at,
        },
        "currentIteration": iteration(biz, &current)?,
    }))
}

/// The campaign's latest iteration.
pub fn current(biz: &str, campaign_id: &str) -> HResult<IterationRow> {
    db::query_one_as(&format!("SELECT {ITERATION_COLUMNS} FROM campaign_iterations i WHERE i.business_id = ?1 AND i.campaign_id = ?2 ORDER BY i.sequence DESC LIMIT 1"), &params![biz, campaign_id])?
        .ok_or_else(|| campaign_not_found(campaign_id))
}

/// Records a member's new outcome in its history (the caller has set it).
pub fn record(biz: &str, member_id: &str, outcome: &str) -> Result<(), Failure> {
    db::execute(
        "INSERT INTO campaign_member_events (business_id, member_id, seq, outcome, occurred_at) \
         SELECT ?1, ?2, IFNULL(MAX(seq), 0) + 1, ?3, ?4 FROM campaign_member_events WHERE business_id = ?1 AND member_id = ?2",
        &params![biz, member_id, outcome, now()],
    )?;
    Ok(())
}

/// Records the outcome of every member of `iteration_id` that `filter` (SQL
/// on `m.`) selects, in one statement: the bulk form of [`record`].
pub fn record_all(biz: &str, iteration_id: &str, filter: &str, outcome: &str) -> Result<(), Failure> {
    db::execute(
        &format!(
            "INSERT INTO campaign_member_events (business_id, member_id, seq, outcome, occurred_at) \
             SELECT m.business_id, m.id, \
                    (SELECT IFNULL(MAX(e.seq), 0) + 1 FROM campaign_member_events e WHERE e.business_id = m.business_id AND e.member_id = m.id), ?3, ?4 \
             FROM campaign_members m WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND {filter}"
        ),
        &params![biz, iteration_id, outcome, now()],
    )?;
    Ok(())
}

/// The length of a retry-delay "minute" (`serve --campaign-minute-ms`;
/// 60,000 unless shortened for tests and demos), as `serve` stored it.
pub fn minute_ms() -> Result<i64, Failure> {
    Ok(db::query_one_as::<String>("SELECT value FROM runtime_settings WHERE name = 'campaign_minute_ms'", &[])?.and_then(|v| v.parse().ok()).unwrap_or(60_000))
}

/// A member's history, oldest first.
pub fn history(biz: &str, member_ids: &[String]) -> Result<Vec<(String, Value)>, Failure> {
    if member_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut params = params![biz];
    params.extend(member_ids.iter().map(switchboard_guest::Value::from));
    let rows: Vec<(String, String, String)> = db::query_as(
        &format!("SELECT member_id, outcome, occurred_at FROM campaign_member_events WHERE business_id = ?1 AND member_id IN ({}) ORDER BY member_id, seq", db::placeholders(2, member_ids.len())),
        &params,
    )?;
    Ok(rows.into_iter().map(|(member, outcome, at)| (member, json!({"outcome": outcome, "occurredAt": at}))).collect())
}

#[cfg(test)]
mod tests {
    use super::IterationStatus::{self, *};

    #[test]
    fn iteration_statuses_read_back_and_move_as_documented() {
        for s in IterationStatus::ALL {
            assert_eq!(IterationStatus::parse(s.as_str()), Some(s));
        }
        let moves: Vec<(IterationStatus, IterationStatus)> = IterationStatus::ALL.into_iter().flat_map(|a| IterationStatus::ALL.map(|b| (a, b))).filter(|(a, b)| a.may_become(*b)).collect();
        assert_eq!(moves, [(Draft, Running), (Draft, Cancelled), (Running, Paused), (Running, Cancelled), (Paused, Running), (Paused, Cancelled)]);
        assert!(Completed.is_terminal() && Cancelled.is_terminal() && !Paused.is_terminal());
    }
}
