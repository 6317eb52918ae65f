//! `campaigns.summarize`: processes one confirmed summary run in bounded
//! steps (one lane per run).
//!
//! A step reads up to [`BATCH`] contacts that are still pending and due,
//! builds each one's material and asks the `ai` import for its assessment
//! (no write yet: the step calls out, so it takes the write lock only at
//! its first write, after the calls), then writes every result with the
//! run's counters and charge in the step's one fenced transaction. So a
//! contact is assessed and charged once: a step that crashes or loses its
//! fence commits nothing, and the next one asks again for the same
//! contacts. A failed assessment is retried [`MAX_ATTEMPTS`] times in all
//! (1 s, then 2 s later) and then recorded as failed for that contact; the
//! others go on. When nothing is pending the run ends: `completed`,
//! `partial` (some contacts failed) or `failed` (all did); the business is
//! charged what the assessments used (never more than the reserved
//! maximum) and the rest of the reservation is released.

use serde_json::{json, Value};
use switchboard_guest::db;
use switchboard_guest::job::{run_step, AreaJob};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{ai, clock, fail, log, now, params, Failure};
use switchboard_voice_area::billing;

use super::{CampaignsJob, RunRef};
use crate::material;
use crate::summaries::RunStatus;

/// Contacts assessed per step at most (a slow provider is bounded by
/// [`STEP_BUDGET_MS`] instead).
pub const BATCH: i64 = 64;
/// A step stops asking once this long has passed (a slow provider).
const STEP_BUDGET_MS: i64 = 5_000;
/// Assessments of one contact before it is recorded as failed.
pub const MAX_ATTEMPTS: i64 = 3;
const RETRY_BASE_MS: i64 = 1_000;
/// The longest error text kept for a failed contact.
const ERROR_CHARS: usize = 300;

pub fn run(job: &Job, r: &RunRef) -> Outcome {
    run_step("while summarising a campaign", || step(&job.business_id, &r.run_id))
}

struct Run {
    campaign_id: String,
    status: RunStatus,
    per_contact: i64,
    per_thousand: i64,
}

fn step(biz: &str, run_id: &str) -> Result<Outcome, Failure> {
    let Some((campaign_id, status, per_contact, per_thousand)) = db::query_one_as::<(String, String, i64, i64)>(
        "SELECT campaign_id, status, price_per_contact, price_per_thousand FROM summary_runs WHERE business_id = ?1 AND id = ?2",
        &params![biz, run_id],
    )?
    else {
        return Ok(Outcome::Dead("the summary run no longer exists".into()));
    };
    let Some(status) = RunStatus::parse(&status).filter(|s| s.is_active()) else { return Ok(Outcome::Done) };
    let run = Run { campaign_id, status, per_contact, per_thousand };
    let now_ms = clock::now_ms();
    let due: Vec<(String, i64, i64)> = db::query_as(
        "SELECT contact_id, maximum_charge, attempts FROM summary_assessments INDEXED BY summary_assessments_pending \
         WHERE business_id = ?1 AND run_id = ?2 AND status = 'pending' AND retry_at_ms <= ?3 ORDER BY contact_id LIMIT ?4",
        &params![biz, run_id, now_ms, BATCH],
    )?;
    if due.is_empty() {
        let next = db::query_one_as::<Option<i64>>(
            "SELECT MIN(retry_at_ms) FROM summary_assessments INDEXED BY summary_assessments_pending WHERE business_id = ?1 AND run_id = ?2 AND status = 'pending'",
            &params![biz, run_id],
        )?
        .flatten();
        return match next {
            Some(at) => Ok(CampaignsJob::Summarize(RunRef { run_id: run_id.to_string() }).continue_after((at - now_ms).max(1) as u64)),
            None => finish(biz, run_id, &run.campaign_id).map(|_| Outcome::Done),
        };
    }
    let objective = db::query_one_as::<String>("SELECT objective FROM campaigns WHERE business_id = ?1 AND id = ?2", &params![biz, &run.campaign_id])?.unwrap_or_default();
    // Ask first (reads only), write after.
    let mut answers = Vec::new();
    for (contact, maximum, attempts) in due {
        let (input, chars) = material::of(biz, &run.campaign_id, &objective, &contact)?;
        let answer = ai::assess(&input);
        answers.push((contact, maximum, attempts + 1, chars, answer));
        if clock::now_ms() - now_ms > STEP_BUDGET_MS {
            break;
        }
    }
    let now = now();
    if run.status == RunStatus::Queued {
        db::execute("UPDATE summary_runs SET status = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, run_id, RunStatus::Running.as_str()])?;
    }
    let (mut charged, mut assessed, mut failed) = (0, 0, 0);
    for (contact, maximum, attempts, chars, answer) in answers {
        let who = db::query_one_as::<(Option<String>, Option<String>)>(
            "SELECT c.name, c.mobile FROM contacts c WHERE c.business_id = ?1 AND c.id = ?2 \
             UNION ALL SELECT m.contact_name, NULL FROM campaign_members m INDEXED BY campaign_members_contact \
                       WHERE m.business_id = ?1 AND m.contact_id = ?2 AND m.campaign_id = ?3 LIMIT 1",
            &params![biz, &contact, &run.campaign_id],
        )?;
        let (name, mobile) = who.unwrap_or_default();
        match answer {
            Ok(a) => {
                let charge = material::charge(chars, run.per_contact, run.per_thousand).min(maximum);
                db::execute(
                    "UPDATE summary_assessments SET status = 'assessed', attempts = ?4, summary = ?5, next_action = ?6, follow_up = ?7, charged = ?8, \
                            contact_name = ?9, contact_mobile = ?10, error = NULL, assessed_at = ?11 \
                     WHERE business_id = ?1 AND run_id = ?2 AND contact_id = ?3",
                    &params![biz, run_id, &contact, attempts, a.summary, a.next_action, a.follow_up, charge, name, mobile, &now],
                )?;
                charged += charge;
                assessed += 1;
            }
            Err(e) if attempts >= MAX_ATTEMPTS => {
                log::log(log::Level::Warn, &format!("summary run {run_id}: the assessment of a contact failed {attempts} times: {e}"));
                db::execute(
                    "UPDATE summary_assessments SET status = 'failed', attempts = ?4, error = ?5, contact_name = ?6, contact_mobile = ?7, assessed_at = ?8 \
                     WHERE business_id = ?1 AND run_id = ?2 AND contact_id = ?3",
                    &params![biz, run_id, &contact, attempts, fail::quote(&e, ERROR_CHARS), name, mobile, &now],
                )?;
                failed += 1;
            }
            Err(_) => {
                db::execute(
                    "UPDATE summary_assessments SET attempts = ?4, retry_at_ms = ?5 WHERE business_id = ?1 AND run_id = ?2 AND contact_id = ?3",
                    &params![biz, run_id, &contact, attempts, clock::now_ms() + (RETRY_BASE_MS << (attempts - 1).min(10))],
                )?;
            }
        }
    }
    db::execute(
        "UPDATE summary_runs SET charged = charged + ?3, assessed_count = assessed_count + ?4, failed_count = failed_count + ?5, updated_at = ?6 \
         WHERE business_id = ?1 AND id = ?2",
        &params![biz, run_id, charged, assessed, failed, now],
    )?;
    Ok(CampaignsJob::Summarize(RunRef { run_id: run_id.to_string() }).continue_after(0))
}

/// Ends the run: its status, the charge of what was used (the rest of the
/// reservation released) and the cost per final outcome.
fn finish(biz: &str, run_id: &str, campaign: &str) -> Result<(), Failure> {
    let (maximum, charged, assessed, failed) =
        db::query_one_as::<(i64, i64, i64, i64)>("SELECT maximum_charge, charged, assessed_count, failed_count FROM summary_runs WHERE business_id = ?1 AND id = ?2", &params![biz, run_id])?
            .expect("read above");
    let status = match (assessed, failed) {
        (_, 0) => RunStatus::Completed,
        (0, _) => RunStatus::Failed,
        _ => RunStatus::Partial,
    };
    billing::settle(biz, run_id, maximum, charged)?;
    let now = now();
    db::execute(
        "UPDATE summary_runs SET status = ?3, cost_json = ?4, completed_at = ?5, updated_at = ?5 WHERE business_id = ?1 AND id = ?2",
        &params![biz, run_id, status.as_str(), cost_per_outcome(biz, run_id, campaign)?.to_string(), now],
    )?;
    Ok(())
}

/// What each final outcome cost: the campaign's calls of those contacts
/// and their assessments (chatapp messages are not priced), in total and
/// per contact.
fn cost_per_outcome(biz: &str, run_id: &str, campaign: &str) -> Result<Value, Failure> {
    let rows: Vec<(String, i64, i64, i64)> = db::query_as(
        "WITH spent AS ( \
             SELECT contact_id, SUM(charged) AS n FROM calls INDEXED BY calls_campaign \
             WHERE business_id = ?1 AND campaign_id = ?3 AND campaign_id IS NOT NULL AND contact_id IS NOT NULL GROUP BY contact_id) \
         SELECT a.final_outcome, COUNT(*), IFNULL(SUM(a.charged), 0), IFNULL(SUM(s.n), 0) \
         FROM summary_assessments a LEFT JOIN spent s ON s.contact_id = a.contact_id \
         WHERE a.business_id = ?1 AND a.run_id = ?2 GROUP BY a.final_outcome ORDER BY a.final_outcome",
        &params![biz, run_id, campaign],
    )?;
    Ok(Value::Array(
        rows.into_iter()
            .map(|(outcome, contacts, assessment, calls)| {
                json!({
                    "outcome": outcome,
                    "contacts": contacts,
                    "callMicrocredits": calls,
                    "messageMicrocredits": 0,
                    "assessmentMicrocredits": assessment,
                    "totalMicrocredits": calls + assessment,
                    "perContactMicrocredits": (calls + assessment) / contacts.max(1),
                })
            })
            .collect(),
    ))
}
