//! How campaigns, iterations and members read, and the rules by which they
//! move: written once here, used by the requests and the dispatch job.

use serde_json::{json, Map, Value};
use switchboard_guest::db::{self, Row, RowExt};
use switchboard_guest::{fail, now, Failure, HResult};

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

/// The columns [`iteration`] reads, in order (prefix `i.`).
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
    for r in db::query("SELECT outcome, COUNT(*) FROM campaign_members WHERE business_id = ?1 AND iteration_id = ?2 GROUP BY outcome", &[biz.into(), iteration_id.into()])? {
        total += r.int(1);
        out.insert(r.text(0), json!(r.int(1)));
    }
    out.insert("total".into(), json!(total));
    Ok(Value::Object(out))
}

/// A row of [`ITERATION_COLUMNS`] as an iteration, with live counts.
pub fn iteration(biz: &str, r: &Row) -> Result<Value, Failure> {
    Ok(json!({
        "id": r.text(0),
        "campaignId": r.text(1),
        "sequence": r.int(2),
        "channel": r.text(3),
        "agentId": r.text(4),
        "status": r.text(5),
        "pausedReason": r.opt_text(13),
        "audience": r.text(6),
        "maxRetries": r.int(7),
        "retryDelayMinutes": r.int(8),
        "maxSpendMicrocredits": r.opt_int(14),
        "spentMicrocredits": r.int(15),
        "openingMessage": r.opt_text(18),
        "callingWindow": match (r.opt_int(16), r.opt_int(17)) {
            (Some(start), Some(end)) => crate::window::Window { start: start as u32, end: end as u32 }.json(),
            _ => Value::Null,
        },
        "counts": counts(biz, &r.text(0))?,
        "startedAt": r.opt_text(9),
        "endedAt": r.opt_text(10),
        "createdAt": r.text(11),
        "updatedAt": r.text(12),
    }))
}

pub fn campaign_not_found(id: &str) -> Failure {
    fail::not_found("campaign_not_found", format!("campaign `{id}` not found"))
}

/// A campaign of this business with its current (latest) iteration, as
/// `CampaignResult`.
pub fn result(biz: &str, campaign_id: &str) -> HResult<Value> {
    let c = db::query_one(
        "SELECT id, name, objective, created_at, updated_at, \
                (SELECT COUNT(*) FROM campaign_iterations i WHERE i.business_id = k.business_id AND i.campaign_id = k.id) \
         FROM campaigns k WHERE business_id = ?1 AND id = ?2",
        &[biz.into(), campaign_id.into()],
    )?
    .ok_or_else(|| campaign_not_found(campaign_id))?;
    let current = current(biz, campaign_id)?;
    Ok(json!({
        "campaign": {
            "id": c.text(0),
            "businessId": biz,
            "name": c.text(1),
            "objective": c.text(2),
            "iterationCount": c.int(5),
            "currentIterationId": current.text(0),
            "createdAt": c.text(3),
            "updatedAt": c.text(4),
        },
        "currentIteration": iteration(biz, &current)?,
    }))
}

/// The campaign's latest iteration.
pub fn current(biz: &str, campaign_id: &str) -> HResult<Row> {
    db::query_one(
        &format!("SELECT {ITERATION_COLUMNS} FROM campaign_iterations i WHERE i.business_id = ?1 AND i.campaign_id = ?2 ORDER BY i.sequence DESC LIMIT 1"),
        &[biz.into(), campaign_id.into()],
    )?
    .ok_or_else(|| campaign_not_found(campaign_id))
}

/// Records a member's new outcome in its history (the caller has set it).
pub fn record(biz: &str, member_id: &str, outcome: &str) -> Result<(), Failure> {
    db::execute(
        "INSERT INTO campaign_member_events (business_id, member_id, seq, outcome, occurred_at) \
         SELECT ?1, ?2, IFNULL(MAX(seq), 0) + 1, ?3, ?4 FROM campaign_member_events WHERE business_id = ?1 AND member_id = ?2",
        &[biz.into(), member_id.into(), outcome.into(), now().into()],
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
        &[biz.into(), iteration_id.into(), outcome.into(), now().into()],
    )?;
    Ok(())
}

/// The length of a retry-delay "minute" (`serve --campaign-minute-ms`;
/// 60,000 unless shortened for tests and demos), as `serve` stored it.
pub fn minute_ms() -> Result<i64, Failure> {
    Ok(db::query_one("SELECT value FROM runtime_settings WHERE name = 'campaign_minute_ms'", &[])?.and_then(|r| r.text(0).parse().ok()).unwrap_or(60_000))
}

/// A member's history, oldest first.
pub fn history(biz: &str, member_ids: &[String]) -> Result<Vec<(String, Value)>, Failure> {
    if member_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut params: Vec<switchboard_guest::Value> = vec![biz.into()];
    params.extend(member_ids.iter().map(|m| m.as_str().into()));
    Ok(db::query(
        &format!("SELECT member_id, outcome, occurred_at FROM campaign_member_events WHERE business_id = ?1 AND member_id IN ({}) ORDER BY member_id, seq", db::placeholders(2, member_ids.len())),
        &params,
    )?
    .iter()
    .map(|r| (r.text(0), json!({"outcome": r.text(1), "occurredAt": r.text(2)})))
    .collect())
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
