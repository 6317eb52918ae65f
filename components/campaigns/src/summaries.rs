//! listSummaryRuns (52) and createSummaryRun (53): append-only AI summary
//! runs of a campaign, paid from the business's microcredits.
//!
//! * **Estimate** (`action: estimate`): once every iteration is completed
//!   or cancelled, one `summary_assessments` row per unique contact of the
//!   campaign is written with the size of its material ([`material`]) and
//!   its maximum charge at the business's price (fixed in the run); the run
//!   is `estimated` with the exact total. Nothing is charged. A newer
//!   estimate makes older unconfirmed ones `expired`; so does time
//!   ([`ESTIMATE_TTL_MS`]).
//! * **Confirm** (`action: confirm`): the client repeats the estimate's id
//!   and its exact maximum; the maximum is reserved from the balance and
//!   the run is `queued` for `campaigns.summarize` (`jobs/summarize.rs`),
//!   which assesses each contact once and charges what it used.
//!
//! The price of one contact: `pricePerContact` + `pricePerThousandCharacters`
//! for every started 1,000 characters of its material (what was said in
//! its calls and written in its campaign conversations), counting at most
//! [`material::MAX_CHARS`]. Defaults below; `switchboard admin summaries
//! configure` sets a business's own.

use serde::Deserialize;
use serde_json::{json, Value};
use switchboard_guest::db;
use switchboard_guest::row_struct;
use switchboard_guest::{clock, fail, new_id, now, ok, page, params, req, success, time, Failure, HResult, Request, Success};
use switchboard_voice_area::billing;

use crate::campaigns::campaign_id;
use crate::jobs::queue;
use crate::{material, model};

/// An unconfirmed estimate expires after a day.
pub const ESTIMATE_TTL_MS: i64 = 24 * 3600 * 1000;

/// The columns a [`RunRow`] reads, in order (and last the campaign state
/// the estimate saw, which confirm compares).
pub const RUN_COLUMNS: &str = "id, campaign_id, status, maximum_charge, charged, contact_count, assessed_count, failed_count, material_chars, \
     price_per_contact, price_per_thousand, cost_json, expires_at_ms, expires_at, confirmed_at, completed_at, created_at, campaign_state";

/// A summary run's status (`SummaryRunStatus`): an estimate, then the run
/// it became once confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Waiting for its confirmation, until [`ESTIMATE_TTL_MS`].
    Estimated,
    /// An estimate past its deadline, or replaced by a newer one.
    Expired,
    Queued,
    Running,
    /// Every contact assessed.
    Completed,
    /// Some assessed, some failed.
    Partial,
    /// None assessed.
    Failed,
}

impl RunStatus {
    pub const ALL: [RunStatus; 7] = [Self::Estimated, Self::Expired, Self::Queued, Self::Running, Self::Completed, Self::Partial, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Estimated => "estimated",
            Self::Expired => "expired",
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Partial => "partial",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Confirmed and not finished: its reservation is held, its job runs.
    pub fn is_active(self) -> bool {
        matches!(self, Self::Queued | Self::Running)
    }

    /// Finished: its cost per outcome is known.
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Completed | Self::Partial | Self::Failed)
    }

    /// Finished with assessments to export.
    pub fn is_exportable(self) -> bool {
        matches!(self, Self::Completed | Self::Partial)
    }
}

row_struct! {
    /// A row of [`RUN_COLUMNS`].
    pub struct RunRow {
        pub id: String,
        pub campaign_id: String,
        /// As stored ([`shown_status`] reads it).
        pub status: String,
        pub maximum_charge: i64,
        pub charged: i64,
        pub contact_count: i64,
        pub assessed_count: i64,
        pub failed_count: i64,
        pub material_chars: i64,
        pub price_per_contact: i64,
        pub price_per_thousand: i64,
        pub cost_json: Option<String>,
        pub expires_at_ms: i64,
        pub expires_at: String,
        pub confirmed_at: Option<String>,
        pub completed_at: Option<String>,
        pub created_at: String,
        pub campaign_state: String,
    }
}

/// The status a run shows: an estimate past its deadline is expired
/// whether or not a newer one marked it so.
pub fn shown_status(r: &RunRow) -> RunStatus {
    match RunStatus::parse(&r.status) {
        Some(RunStatus::Estimated) if r.expires_at_ms <= clock::now_ms() => RunStatus::Expired,
        // Text no version wrote reads as a failed run (nothing runs or bills it).
        other => other.unwrap_or(RunStatus::Failed),
    }
}

/// A run as a `SummaryRun`.
pub fn run(r: &RunRow) -> Value {
    let status = shown_status(r);
    let finished = status.is_finished();
    let reserved = if status.is_active() { r.maximum_charge } else { 0 };
    json!({
        "id": r.id,
        "campaignId": r.campaign_id,
        "status": status.as_str(),
        "maximumChargeMicrocredits": r.maximum_charge,
        "reservedMicrocredits": reserved,
        "chargedMicrocredits": r.charged,
        "contactCount": r.contact_count,
        "assessedCount": r.assessed_count,
        "failedCount": r.failed_count,
        "processedCount": r.assessed_count + r.failed_count,
        "materialCharacters": r.material_chars,
        "price": {"perContactMicrocredits": r.price_per_contact, "perThousandCharactersMicrocredits": r.price_per_thousand},
        "costPerOutcome": if finished { r.cost_json.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or(Value::Null) } else { Value::Null },
        "estimateExpiresAt": r.expires_at,
        "confirmedAt": r.confirmed_at,
        "completedAt": r.completed_at,
        "createdAt": r.created_at,
    })
}

pub fn run_not_found(id: &str) -> Failure {
    fail::not_found("summary_run_not_found", format!("summary run `{id}` not found in this campaign"))
}

/// The run `id` of `campaign` (404 otherwise).
pub fn load(biz: &str, campaign: &str, id: &str) -> HResult<RunRow> {
    db::query_one_as(&format!("SELECT {RUN_COLUMNS} FROM summary_runs WHERE business_id = ?1 AND campaign_id = ?2 AND id = ?3"), &params![biz, campaign, id])?.ok_or_else(|| run_not_found(id))
}

/// 52: newest first.
pub fn list(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = campaign_id(r)?;
    model::current(biz, &id)?;
    let (rows, next) = page::by_id_newest_first(r, &format!("SELECT {RUN_COLUMNS} FROM summary_runs WHERE business_id = ?1 AND campaign_id = ?2"), params![biz, &id], "id")?;
    ok(&json!({"summaryRuns": rows.iter().map(run).collect::<Vec<_>>(), "nextCursor": next}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    action: String,
    #[serde(default)]
    estimate_id: Option<String>,
    #[serde(default)]
    confirm_maximum_charge_microcredits: Option<f64>,
}

/// 53: estimate (201) or confirm (200).
pub fn create(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = campaign_id(r)?;
    let body: CreateBody = req::body(r)?;
    model::current(biz, &id)?;
    match body.action.as_str() {
        "estimate" => estimate(biz, &id),
        _ => {
            let (Some(estimate_id), Some(figure)) = (body.estimate_id, body.confirm_maximum_charge_microcredits) else {
                return Err(fail::validation("confirmation_incomplete", "`confirm` needs `estimateId` and `confirmMaximumChargeMicrocredits`"));
            };
            confirm(biz, &id, &estimate_id.to_ascii_lowercase(), figure)
        }
    }
}

/// What the estimate was made over: the campaign's iterations and their
/// last change. A new iteration or any change of one makes it stale.
fn campaign_state(biz: &str, campaign: &str) -> Result<String, Failure> {
    Ok(db::query_one_as::<String>("SELECT COUNT(*) || ':' || IFNULL(MAX(updated_at), '') FROM campaign_iterations WHERE business_id = ?1 AND campaign_id = ?2", &params![biz, campaign])?
        .unwrap_or_default())
}

/// The campaign's current summary run: the latest completed (or partial)
/// one, made over the campaign as it is now (no iteration added or changed
/// since its estimate). What an AI-recommended follow-up selects from.
pub fn current_run(biz: &str, campaign: &str) -> Result<Option<String>, Failure> {
    db::query_one_as(
        "SELECT id FROM summary_runs WHERE business_id = ?1 AND campaign_id = ?2 AND status IN ('completed', 'partial') AND campaign_state = ?3 ORDER BY id DESC LIMIT 1",
        &params![biz, campaign, campaign_state(biz, campaign)?],
    )
}

/// A run of the campaign that is queued or running, if any.
fn in_progress(biz: &str, campaign: &str) -> Result<Option<String>, Failure> {
    db::query_one_as("SELECT id FROM summary_runs WHERE business_id = ?1 AND campaign_id = ?2 AND status IN ('queued', 'running') LIMIT 1", &params![biz, campaign])
}

/// The business's price: (per contact, per started 1,000 characters),
/// from the area's prices crate (which `admin summaries configure` sets).
pub fn price(biz: &str) -> Result<(i64, i64), Failure> {
    switchboard_summary_prices::read(&db::Store, biz)
}

fn estimate(biz: &str, campaign: &str) -> HResult<Success> {
    if let Some((sequence, status)) = db::query_one_as::<(i64, String)>(
        "SELECT sequence, status FROM campaign_iterations WHERE business_id = ?1 AND campaign_id = ?2 AND status NOT IN ('completed', 'cancelled') ORDER BY sequence LIMIT 1",
        &params![biz, campaign],
    )? {
        return Err(fail::conflict("iterations_not_finished", format!("iteration {sequence} is {status}; a summary run is estimated once every iteration is completed or cancelled")));
    }
    if let Some(running) = in_progress(biz, campaign)? {
        return Err(fail::conflict("summary_run_in_progress", format!("summary run {running} of this campaign is still processing; estimate again when it has finished")));
    }
    // A newer estimate supersedes unconfirmed ones (their rows go: nothing
    // was assessed under them).
    db::execute(
        "DELETE FROM summary_assessments WHERE business_id = ?1 AND run_id IN (SELECT id FROM summary_runs WHERE business_id = ?1 AND campaign_id = ?2 AND status = 'estimated')",
        &params![biz, campaign],
    )?;
    let now = now();
    db::execute("UPDATE summary_runs SET status = 'expired', updated_at = ?3 WHERE business_id = ?1 AND campaign_id = ?2 AND status = 'estimated'", &params![biz, campaign, &now])?;
    let id = new_id();
    let (per_contact, per_thousand) = price(biz)?;
    material::estimate(biz, campaign, &id, per_contact, per_thousand)?;
    let (contact_count, material_chars, maximum_charge) = db::query_one_as::<(i64, i64, i64)>(
        "SELECT COUNT(*), IFNULL(SUM(material_chars), 0), IFNULL(SUM(maximum_charge), 0) FROM summary_assessments WHERE business_id = ?1 AND run_id = ?2",
        &params![biz, &id],
    )?
    .expect("an aggregate has a row");
    let expires_ms = clock::now_ms() + ESTIMATE_TTL_MS;
    db::execute(
        "INSERT INTO summary_runs (business_id, id, campaign_id, status, campaign_state, price_per_contact, price_per_thousand, contact_count, material_chars, \
                                   maximum_charge, expires_at_ms, expires_at, created_at, updated_at) \
         VALUES (?1, ?2, ?3, 'estimated', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)",
        &params![biz, &id, campaign, campaign_state(biz, campaign)?, per_contact, per_thousand, contact_count, material_chars, maximum_charge, expires_ms, time::rfc3339_ms(expires_ms), now],
    )?;
    success(201, &json!({"summaryRun": run(&load(biz, campaign, &id)?)}))
}

fn confirm(biz: &str, campaign: &str, estimate_id: &str, figure: f64) -> HResult<Success> {
    let row = load(biz, campaign, estimate_id)?;
    match shown_status(&row) {
        RunStatus::Estimated => {}
        RunStatus::Expired => return Err(fail::conflict("estimate_expired", format!("estimate {estimate_id} has expired (a newer estimate or its deadline); estimate again"))),
        status => return Err(fail::conflict("estimate_already_confirmed", format!("estimate {estimate_id} was already confirmed; the run is {}", status.as_str()))),
    }
    let maximum = row.maximum_charge;
    if figure != maximum as f64 {
        return Err(fail::conflict("maximum_charge_mismatch", format!("the estimate's maximum charge is {maximum} microcredits; confirm must repeat exactly that figure")));
    }
    if row.campaign_state != campaign_state(biz, campaign)? {
        return Err(fail::conflict("estimate_stale", "the campaign changed since this estimate (an iteration was added or changed); estimate again"));
    }
    if let Some(running) = in_progress(biz, campaign)? {
        return Err(fail::conflict("summary_run_in_progress", format!("summary run {running} of this campaign is still processing")));
    }
    billing::reserve_for(biz, estimate_id, maximum, "the summary run needs a reservation of its maximum charge, {amount} microcredits")?;
    let now = now();
    db::execute("UPDATE summary_runs SET status = 'queued', confirmed_at = ?3, updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, estimate_id, now])?;
    queue::enqueue_summarize(biz, estimate_id)?;
    ok(&json!({"summaryRun": run(&load(biz, campaign, estimate_id)?)}))
}

#[cfg(test)]
mod tests {
    use super::RunStatus;

    #[test]
    fn run_statuses_read_back() {
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
        }
        let active: Vec<&str> = RunStatus::ALL.into_iter().filter(|s| s.is_active()).map(RunStatus::as_str).collect();
        assert_eq!(active, ["queued", "running"]);
        let exportable: Vec<&str> = RunStatus::ALL.into_iter().filter(|s| s.is_exportable()).map(RunStatus::as_str).collect();
        assert_eq!(exportable, ["completed", "partial"]);
    }
}
