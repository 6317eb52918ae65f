//! listCampaigns (44), createCampaign (45), getCampaign (46),
//! updateCampaign (47: start, pause, cancel the current iteration).

use serde::Deserialize;
use serde_json::json;
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::{fail, is_uuid, new_id, now, ok, page, params, req, success, HResult, Request, Success};

use crate::audience::{self, Candidates};
use crate::jobs::queue;
use crate::model::{self, IterationStatus};
use crate::window::Window;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    name: String,
    objective: String,
    iteration: IterationIn,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IterationIn {
    #[serde(flatten)]
    audience: AudienceIn,
    #[serde(flatten)]
    limits: LimitsIn,
}

/// Who a first iteration speaks to, and through which agent: what
/// createCampaign's iteration (45) and the admission preview (ours, 70)
/// both take.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AudienceIn {
    channel: String,
    agent_id: String,
    #[serde(default)]
    contact_ids: Option<Vec<String>>,
    #[serde(default)]
    category_ids: Option<Vec<String>>,
}

/// An iteration's retries and budget as a body gives them: numbers as JSON
/// has them (`2.0` is the integer 2; the document checked that they are
/// whole and in range).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitsIn {
    #[serde(default)]
    max_retries: Option<f64>,
    #[serde(default)]
    retry_delay_minutes: Option<f64>,
    #[serde(default)]
    max_spend_microcredits: Option<f64>,
    #[serde(default)]
    calling_window: Option<WindowIn>,
    #[serde(default)]
    opening_message: Option<String>,
}

#[derive(Deserialize)]
struct WindowIn {
    start: String,
    end: String,
}

/// Retries and their delay when the body names none.
pub const DEFAULT_MAX_RETRIES: i64 = 0;
pub const DEFAULT_RETRY_DELAY_MINUTES: i64 = 60;

/// An active agent of this business for an iteration of `channel` (404
/// `agent_not_found`, 409 `agent_archived` / `agent_channel_mismatch`; a
/// chatapp agent must be assigned to a connected number, 409
/// `agent_not_assigned`), and the channels this release runs (409
/// `channel_not_available` for sms). A chatapp iteration needs its
/// `openingMessage` (400 `opening_message_required`); a voice one takes
/// none (400 `opening_message_not_allowed`: the agent's greeting opens a
/// call). The document states both (one iteration shape per channel) and
/// the gateway refuses them first; kept so no caller can store a mismatch.
/// `channel` is the body's, parsed (None: no channel's name). The
/// iteration's channel and the agent's id.
pub fn iteration_agent(biz: &str, channel: Option<Channel>, agent_id: &str, opening: Option<&str>) -> HResult<(Channel, String)> {
    let channel = match (channel, opening) {
        (Some(c @ Channel::Voice), None) | (Some(c @ Channel::Chatapp), Some(_)) => c,
        (Some(Channel::Voice), Some(_)) => return Err(fail::validation("opening_message_not_allowed", "`openingMessage` is for chatapp iterations; a voice call opens with the agent's greeting")),
        (Some(Channel::Chatapp), None) => return Err(fail::validation("opening_message_required", "a chatapp iteration needs `openingMessage`, the first message each member receives")),
        _ => return Err(fail::conflict("channel_not_available", "sms is coming later: sms iterations cannot be created yet; use a voice or chatapp iteration")),
    };
    let id = agent_id.to_ascii_lowercase();
    let not_found = || fail::not_found("agent_not_found", format!("agent `{id}` not found"));
    if !is_uuid(&id) {
        return Err(not_found());
    }
    let (agent_channel, status) = db::query_one_as::<(Channel, String)>("SELECT channel, status FROM agents WHERE business_id = ?1 AND id = ?2", &params![biz, &id])?.ok_or_else(not_found)?;
    if status != "active" {
        return Err(fail::conflict("agent_archived", format!("agent `{id}` is archived")));
    }
    if agent_channel != channel {
        return Err(fail::conflict("agent_channel_mismatch", format!("agent `{id}` is a {agent_channel} agent; a {channel} iteration needs a {channel} agent")));
    }
    if channel == Channel::Chatapp && sender(biz, &id)?.is_none() {
        return Err(fail::conflict("agent_not_assigned", format!("agent `{id}` is assigned to no connected chatapp number; assign it with PATCH /channels/assignments first")));
    }
    Ok((channel, id))
}

/// The connected chatapp number a chatapp agent is assigned to: the sender
/// of its iterations' messages.
pub fn sender(biz: &str, agent_id: &str) -> HResult<Option<String>> {
    db::query_one_as(
        "SELECT ca.provider_id FROM channel_assignments ca JOIN channel_connections cc \
           ON cc.business_id = ca.business_id AND cc.channel = 'chatapp' AND cc.provider_id = ca.provider_id AND cc.status = 'connected' \
         WHERE ca.business_id = ?1 AND ca.channel = 'chatapp' AND ca.ai_agent_id = ?2 ORDER BY ca.provider_id LIMIT 1",
        &params![biz, agent_id],
    )
}

/// How an iteration runs: retries, the budget cap, the calling window, the
/// opening message (chatapp).
pub struct Limits {
    pub max_retries: i64,
    pub retry_delay_minutes: i64,
    pub max_spend: Option<i64>,
    pub window: Option<Window>,
    pub opening: Option<String>,
}

impl Limits {
    /// From a body (400 `invalid_calling_window` for an empty window).
    pub fn from_body(b: &LimitsIn) -> HResult<Limits> {
        let window = match &b.calling_window {
            None => None,
            Some(w) => Some(
                Window::parse(&w.start, &w.end)
                    .ok_or_else(|| fail::validation("invalid_calling_window", "`callingWindow.start` and `callingWindow.end` must differ (a window past midnight, such as 22:00-06:00, is allowed)"))?,
            ),
        };
        Ok(Limits {
            max_retries: b.max_retries.map_or(DEFAULT_MAX_RETRIES, |n| n as i64),
            retry_delay_minutes: b.retry_delay_minutes.map_or(DEFAULT_RETRY_DELAY_MINUTES, |n| n as i64),
            max_spend: b.max_spend_microcredits.map(|n| n as i64),
            window,
            opening: b.opening_message.as_deref().map(str::trim).map(String::from),
        })
    }
}

/// Inserts an iteration in `draft`.
pub fn insert_iteration(biz: &str, campaign_id: &str, sequence: i64, channel: Channel, agent_id: &str, audience: &str, limits: &Limits) -> HResult<String> {
    let id = new_id();
    let now = now();
    db::execute(
        "INSERT INTO campaign_iterations (business_id, id, campaign_id, sequence, channel, agent_id, status, audience, max_retries, retry_delay_minutes, max_spend, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'draft', ?7, ?8, ?9, ?11, ?10, ?10)",
        &params![biz, &id, campaign_id, sequence, channel, agent_id, audience, limits.max_retries, limits.retry_delay_minutes, &now, limits.max_spend],
    )?;
    if let Some(text) = &limits.opening {
        db::execute("UPDATE campaign_iterations SET opening_message = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &id, text])?;
    }
    if let Some(w) = limits.window {
        db::execute("UPDATE campaign_iterations SET window_start = ?3, window_end = ?4 WHERE business_id = ?1 AND id = ?2", &params![biz, &id, w.start, w.end])?;
    }
    Ok(id)
}

/// A first iteration's candidates (exactly one of explicit contacts and
/// categories, each category of this business) and the audience's name.
fn audience_of<'a>(biz: &str, contact_ids: &'a Option<Vec<String>>, category_ids: &'a Option<Vec<String>>) -> HResult<(Candidates<'a>, &'static str)> {
    match (contact_ids, category_ids) {
        (Some(ids), None) => Ok((Candidates::Contacts(ids), "contacts")),
        (None, Some(ids)) => {
            for id in ids {
                let known = is_uuid(id) && db::query_one("SELECT 1 FROM categories WHERE business_id = ?1 AND id = ?2", &params![biz, id.to_ascii_lowercase()])?.is_some();
                if !known {
                    return Err(fail::not_found("category_not_found", format!("category `{}` not found", fail::quote(id, 64))));
                }
            }
            Ok((Candidates::Categories(ids), "categories"))
        }
        _ => Err(fail::validation("audience_required", "`iteration` takes exactly one of `contactIds` and `categoryIds`")),
    }
}

/// How many of the contacts left out the preview names (the counts cover them all).
pub const PREVIEW_SKIPPED: i64 = 50;

/// Ours 70: who a first iteration of this agent and audience would admit,
/// and who not by reason, writing nothing (the same checks of the agent and
/// the audience as 45, and the same count), and the first
/// [`PREVIEW_SKIPPED`] of those left out by name with the reason.
pub fn preview(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let body: AudienceIn = req::body(r)?;
    let channel = Channel::parse(&body.channel);
    // A chatapp iteration's opening message is not the preview's business.
    let opening = (channel == Some(Channel::Chatapp)).then_some("");
    let (_, agent) = iteration_agent(biz, channel, &body.agent_id, opening)?;
    let (candidates, _) = audience_of(biz, &body.contact_ids, &body.category_ids)?;
    let admission = audience::count(biz, &agent, &candidates)?.json();
    ok(&json!({"admission": admission, "skippedContacts": audience::skipped(biz, &agent, &candidates, PREVIEW_SKIPPED)?}))
}

/// 45: the campaign, its first iteration (draft) and its members, in one
/// transaction; 409 `empty_audience` (nothing written) when nobody is
/// compatible with the agent.
pub fn create(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let body: CreateBody = req::body(r)?;
    let name = body.name.trim();
    if name.is_empty() {
        return Err(fail::validation("invalid_name", "`name` must contain a non-space character"));
    }
    if body.objective.trim().is_empty() {
        return Err(fail::validation("invalid_objective", "`objective` must contain a non-space character"));
    }
    let (it, limits) = (&body.iteration.audience, Limits::from_body(&body.iteration.limits)?);
    let (channel, agent) = iteration_agent(biz, Channel::parse(&it.channel), &it.agent_id, limits.opening.as_deref())?;
    let (candidates, audience) = audience_of(biz, &it.contact_ids, &it.category_ids)?;
    let campaign_id = new_id();
    let now = now();
    db::execute("INSERT INTO campaigns (business_id, id, name, objective, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)", &params![biz, &campaign_id, name, body.objective.trim(), &now])?;
    let iteration = insert_iteration(biz, &campaign_id, 1, channel, &agent, audience, &limits)?;
    let admission = audience::admit(biz, &campaign_id, &iteration, &agent, &candidates)?;
    if admission.accepted == 0 {
        return Err(fail::conflict("empty_audience", admission.why_empty()));
    }
    let mut result = model::result(biz, &campaign_id)?;
    result["admission"] = admission.json();
    success(201, &result)
}

/// 44: newest first.
pub fn list(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let (ids, next) = page::by_id_newest_first::<String>(r, "SELECT k.id FROM campaigns k WHERE k.business_id = ?1", params![biz], "k.id")?;
    let campaigns = ids.iter().map(|id| model::result(biz, id)).collect::<HResult<Vec<_>>>()?;
    ok(&json!({"campaigns": campaigns, "nextCursor": next}))
}

pub fn campaign_id(r: &Request) -> HResult<String> {
    Ok(req::path_uuid(r, "campaignId", "campaign_not_found", "campaign")?.to_ascii_lowercase())
}

/// 46.
pub fn get(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    ok(&model::result(biz, &campaign_id(r)?)?)
}

#[derive(Deserialize)]
struct UpdateBody {
    action: String,
}

/// 47: moves the current iteration. `start`: draft or paused → running
/// (its dispatch job queued); `pause`: running → paused (nothing new is
/// dialled, calls in progress finish); `cancel`: draft, running or paused →
/// cancelled (members not yet called are cancelled, calls in progress are
/// cancelled through the voice area and may stay `cancelling` until the
/// carrier confirms). Asking for the state it is in changes nothing; any
/// other move is 409 `invalid_transition`.
pub fn update(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = campaign_id(r)?;
    let body: UpdateBody = req::body(r)?;
    let model::IterationRow { id: iteration, status: stored, .. } = model::current(biz, &id)?;
    let status = IterationStatus::parse(&stored);
    let now = now();
    let target = match body.action.as_str() {
        "start" => IterationStatus::Running,
        "pause" => IterationStatus::Paused,
        _ => IterationStatus::Cancelled,
    };
    if status == Some(target) {
        return ok(&model::result(biz, &id)?);
    }
    if !status.is_some_and(|s| s.may_become(target)) {
        return Err(fail::conflict("invalid_transition", format!("the current iteration is {stored}; it cannot be {}", past(&body.action))));
    }
    db::execute(
        "UPDATE campaign_iterations SET status = ?3, paused_reason = NULL, updated_at = ?4, \
                started_at = CASE WHEN ?3 = 'running' THEN IFNULL(started_at, ?4) ELSE started_at END, \
                ended_at = CASE WHEN ?3 = 'cancelled' THEN ?4 ELSE ended_at END \
         WHERE business_id = ?1 AND id = ?2",
        &params![biz, &iteration, target.as_str(), &now],
    )?;
    db::execute("UPDATE campaigns SET updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &id, &now])?;
    match target {
        IterationStatus::Running => queue::enqueue_dispatch(biz, &iteration)?,
        IterationStatus::Cancelled => cancel_members(biz, &iteration)?,
        _ => {}
    }
    ok(&model::result(biz, &id)?)
}

fn past(action: &str) -> &'static str {
    match action {
        "start" => "started",
        "pause" => "paused",
        _ => "cancelled",
    }
}

/// A cancelled iteration: members not in a call are cancelled now; calls in
/// progress are cancelled and their members settle when the calls end (the
/// dispatch job keeps running until they have).
fn cancel_members(biz: &str, iteration: &str) -> HResult<()> {
    let waiting = "(m.outcome = 'pending' OR m.retry_at_ms IS NOT NULL)";
    model::record_all(biz, iteration, waiting, "cancelled")?;
    db::execute(
        &format!("UPDATE campaign_members AS m SET outcome = 'cancelled', retry_at_ms = NULL, updated_at = ?3 WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND {waiting}"),
        &params![biz, iteration, now()],
    )?;
    let calls: Vec<String> = db::query_as(
        &format!(
            "SELECT c.id FROM campaign_members m JOIN calls c ON c.business_id = m.business_id AND c.id = m.call_id \
             WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND m.outcome = 'in_progress' AND c.status NOT IN ({})",
            switchboard_voice_area::model::terminal_sql_list()
        ),
        &params![biz, iteration],
    )?;
    for c in &calls {
        switchboard_voice_area::calls::request_cancel(biz, c)?;
    }
    if !calls.is_empty() {
        queue::enqueue_dispatch(biz, iteration)?;
    }
    Ok(())
}
