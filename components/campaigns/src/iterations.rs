//! listIterations (48) and createIteration (49): a follow-up is a new
//! iteration of the same campaign, never a cloned campaign.

use serde::Deserialize;
use serde_json::json;
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::{fail, now, ok, page, params, req, success, HResult, Request, Success};

use crate::audience::{self, Candidates};
use crate::campaigns::{campaign_id, insert_iteration, iteration_agent, Limits, LimitsIn};
use crate::model::{self, IterationRow, ITERATION_COLUMNS};
use crate::summaries;

/// 48: in sequence order (the ids are uuid v7, created in sequence).
pub fn list(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = campaign_id(r)?;
    model::current(biz, &id)?;
    let (rows, next) = page::by_id(r, &format!("SELECT {ITERATION_COLUMNS} FROM campaign_iterations i WHERE i.business_id = ?1 AND i.campaign_id = ?2"), params![biz, &id], "i.id")?;
    let iterations = rows.iter().map(|row| model::iteration(biz, row)).collect::<Result<Vec<_>, _>>()?;
    ok(&json!({"iterations": iterations, "nextCursor": next}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    channel: String,
    agent_id: String,
    selection: Selection,
    #[serde(flatten)]
    limits: LimitsIn,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Selection {
    #[serde(default)]
    from_outcomes: Option<Vec<String>>,
    #[serde(default)]
    ai_recommended: Option<bool>,
}

/// 49: a follow-up iteration (draft) whose members are the contacts of the
/// current iteration with the given outcomes, or the contacts whose
/// assessment in the campaign's current summary run recommends a follow-up
/// (`aiRecommended`), compatible with the new agent. The current iteration
/// must be completed or cancelled (409 `iteration_not_finished`); an
/// AI-recommended audience needs a completed (or partial) summary run made
/// over the campaign as it is now (409 `summary_run_required`).
pub fn create(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = campaign_id(r)?;
    let body: CreateBody = req::body(r)?;
    let current = model::current(biz, &id)?;
    if !model::is_terminal(&current.status) {
        return Err(fail::conflict(
            "iteration_not_finished",
            format!("iteration {} is {}; one iteration runs at a time, so a follow-up waits until it is completed or cancelled", current.sequence, current.status),
        ));
    }
    let previous = current.id;
    let recommended_by;
    let (candidates, audience_kind) = match (&body.selection.from_outcomes, body.selection.ai_recommended) {
        (Some(o), None) => (Candidates::Outcomes(&previous, o), "outcomes"),
        (None, Some(true)) => {
            recommended_by = summaries::current_run(biz, &id)?.ok_or_else(|| {
                fail::conflict("summary_run_required", "an AI-recommended audience needs a completed summary run made after the campaign's last change; estimate and confirm one first")
            })?;
            (Candidates::Recommended(&recommended_by), "ai_recommended")
        }
        _ => return Err(fail::validation("selection_required", "`selection` takes exactly one of `fromOutcomes` and `aiRecommended`")),
    };
    let limits = Limits::from_body(&body.limits)?;
    let (channel, agent) = iteration_agent(biz, Channel::parse(&body.channel), &body.agent_id, limits.opening.as_deref())?;
    let iteration = insert_iteration(biz, &id, current.sequence + 1, channel, &agent, audience_kind, &limits)?;
    let admission = audience::admit(biz, &id, &iteration, &agent, &candidates)?;
    if admission.accepted == 0 {
        let whom = match candidates {
            Candidates::Recommended(_) => "the summary run recommends following up no contact this agent can reach".to_string(),
            _ => format!("no member of iteration {} has one of those outcomes and can be reached by this agent", current.sequence),
        };
        return Err(fail::conflict("empty_audience", format!("{whom}; {}", admission.why_empty())));
    }
    db::execute("UPDATE campaigns SET updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &id, now()])?;
    let row: IterationRow =
        db::query_one_as(&format!("SELECT {ITERATION_COLUMNS} FROM campaign_iterations i WHERE i.business_id = ?1 AND i.id = ?2"), &params![biz, &iteration])?.expect("inserted above");
    success(201, &json!({"iteration": model::iteration(biz, &row)?, "admission": admission.json()}))
}
