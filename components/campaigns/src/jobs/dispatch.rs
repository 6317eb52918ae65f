//! `campaigns.dispatch`: runs one iteration, a bounded step at a time (one
//! lane per iteration, so never two steps of it at once; every step is
//! fenced by the job runner, so a stale step commits nothing).
//!
//! A step:
//!
//! 1. **settles** members whose call has ended: the member's outcome becomes
//!    the call's status — only while the member still holds the claim the
//!    call was placed under (`calls.member_claim = campaign_members.claim`),
//!    so a late or stale call can never complete a member it no longer
//!    owns. `busy`, `no_answer` and `failed` with retries left get a retry
//!    time (`retryDelayMinutes` later); `completed` and cancelled calls are
//!    never retried;
//! 2. while the iteration is `running`, **claims** as many due members
//!    (pending, or with their retry time passed; in admission order) as the
//!    business has free lines (lines minus its calls not yet ended, direct
//!    ones included), each with a claim one higher than before, and starts
//!    its call through the voice area (`Plan::start_for`: the contact's
//!    checks, the variables snapshot, the reservation; `voice.call` then
//!    leases the line before placing). A contact that became blocked or
//!    out of scope is `skipped`, never called; credit that runs out pauses
//!    the iteration with the reason `insufficient_credit`, and so does the
//!    budget cap (`budget_reached`: what the iteration's calls hold
//!    reserved plus what they were charged, with the next call's
//!    reservation, would pass `maxSpendMicrocredits`);
//! 3. **completes** the iteration when no member is pending, in a call or
//!    waiting for a retry; otherwise runs again shortly (sooner while calls
//!    are in progress).
//!
//! A paused or cancelled iteration's job only settles (calls in progress
//! finish) and ends when none is left.

use std::collections::BTreeMap;

use switchboard_guest::db::{self, RowExt};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{clock, now, Failure};
use switchboard_voice_area::calls::{Attribution, Plan, Target};

use super::{CampaignsJob, IterationRef};
use crate::model::{self, IterationStatus};
use crate::window::{self, Window};
use switchboard_guest::job::{run_step, AreaJob};
use switchboard_messaging_area::status::MessageStatus;
use switchboard_voice_area::model::CallStatus;

/// How soon a step runs again after one that settled or claimed members;
/// each quiet step after it doubles the wait, up to [`QUIET_POLL_MS`]. So
/// lines freed by short calls are refilled within tens of milliseconds,
/// and long calls cost a step a second.
const ACTIVE_POLL_MS: u64 = 25;
const QUIET_POLL_MS: u64 = 1_000;
/// The longest a step waits before looking again (a retry time far away).
const IDLE_POLL_MS: u64 = 10_000;
/// A wall-clock minute: local times, and so calling windows, change on it.
const MINUTE_MS: i64 = 60_000;

/// The wait before the next step after `quiet` quiet steps in a row.
pub fn poll_ms(quiet: u32) -> u64 {
    (ACTIVE_POLL_MS << quiet.min(6)).min(QUIET_POLL_MS)
}

pub fn run(job: &Job, r: &IterationRef) -> Outcome {
    run_step("while dispatching a campaign", || step(job, r))
}

struct Iteration {
    campaign_id: String,
    agent_id: String,
    status: IterationStatus,
    max_retries: i64,
    retry_delay_minutes: i64,
    max_spend: Option<i64>,
    window: Option<Window>,
    channel: String,
    opening: Option<String>,
}

/// With a calling window, due members are read this many at a time, at
/// most [`WINDOW_SCAN`] a step, to find those inside their window; the next
/// step's sweep resumes after the last member read (the job's
/// `windowCursor`), and a sweep that reaches the end starts over, so every
/// member is looked at in turn however many wait outside their window.
const WINDOW_PAGE: i64 = 500;
const WINDOW_SCAN: i64 = 5_000;
/// Opening messages sent per step of a chatapp iteration.
const MESSAGE_BATCH: i64 = 50;
/// How long a chatapp member's reply counts after its opening message: the
/// chat app's customer-care window, 24 hours (in campaign minutes).
pub const REPLY_WINDOW_MINUTES: i64 = 1_440;

fn step(job: &Job, r: &IterationRef) -> Result<Outcome, Failure> {
    let (biz, iteration_id, quiet) = (job.business_id.as_str(), r.iteration_id.as_str(), r.quiet);
    let Some(row) = db::query_one(
        "SELECT campaign_id, agent_id, status, max_retries, retry_delay_minutes, max_spend, window_start, window_end, channel, opening_message \
         FROM campaign_iterations WHERE business_id = ?1 AND id = ?2",
        &[biz.into(), iteration_id.into()],
    )?
    else {
        return Ok(Outcome::Dead("the iteration no longer exists".into()));
    };
    let it = Iteration {
        campaign_id: row.text(0),
        agent_id: row.text(1),
        // Text no version wrote: held like a pause (nothing claimed, nothing cancelled).
        status: IterationStatus::parse(&row.text(2)).unwrap_or(IterationStatus::Paused),
        max_retries: row.int(3),
        retry_delay_minutes: row.int(4),
        max_spend: row.opt_int(5),
        window: match (row.opt_int(6), row.opt_int(7)) {
            (Some(start), Some(end)) => Some(Window { start: start as u32, end: end as u32 }),
            _ => None,
        },
        channel: row.text(8),
        opening: row.opt_text(9),
    };
    let now_ms = clock::now_ms();
    let mut moved = if it.channel == "chatapp" { settle_messages(biz, iteration_id, &it, now_ms)? } else { settle(biz, iteration_id, &it, now_ms)? };
    let mut sweep = Sweep::default();
    if it.status == IterationStatus::Running {
        sweep = claim(biz, iteration_id, &it, now_ms, r.window_cursor.as_deref())?;
        moved += sweep.claimed;
    }
    let quiet = if moved > 0 { 0 } else { quiet.saturating_add(1) };
    // A sweep cut short by its bound goes on at once: the members after it
    // may be inside their window.
    let busy_poll = if sweep.cut_short { ACTIVE_POLL_MS } else { poll_ms(quiet) };
    let again = |delay_ms: u64| again(iteration_id, delay_ms, quiet, sweep.cursor.clone());
    // What is left of the members, in one pass: in calls (or messages not
    // sent yet), waiting (pending or for a retry) and open for a reply.
    let left = db::query_one(
        "SELECT IFNULL(SUM(outcome = 'in_progress'), 0), IFNULL(SUM(outcome = 'pending' OR retry_at_ms IS NOT NULL), 0), \
                IFNULL(SUM(outcome = 'pending'), 0), MIN(retry_at_ms), \
                IFNULL(SUM(outcome IN ('sent', 'delivered', 'read') AND open_until_ms > ?3), 0), \
                MIN(CASE WHEN outcome IN ('sent', 'delivered', 'read') AND open_until_ms > ?3 THEN open_until_ms END) \
         FROM campaign_members WHERE business_id = ?1 AND iteration_id = ?2",
        &[biz.into(), iteration_id.into(), now_ms.into()],
    )?
    .expect("an aggregate has a row");
    let (in_calls, waiting, pending, next_retry, open, next_close) = (left.int(0), left.int(1), left.int(2), left.opt_int(3), left.int(4), left.opt_int(5));
    let status = db::query_one("SELECT status FROM campaign_iterations WHERE business_id = ?1 AND id = ?2", &[biz.into(), iteration_id.into()])?.and_then(|r| IterationStatus::parse(&r.text(0)));
    if status != Some(IterationStatus::Running) {
        // Paused (by an operator or for credit) or cancelled: only the calls
        // in progress are left to settle.
        return Ok(if in_calls > 0 { again(busy_poll) } else { Outcome::Done });
    }
    if in_calls == 0 && waiting == 0 && open == 0 {
        let now = now();
        db::execute(
            "UPDATE campaign_iterations SET status = 'completed', ended_at = ?3, updated_at = ?3 WHERE business_id = ?1 AND id = ?2 AND status = 'running'",
            &[biz.into(), iteration_id.into(), now.as_str().into()],
        )?;
        db::execute("UPDATE campaigns SET updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), it.campaign_id.as_str().into(), now.into()])?;
        return Ok(Outcome::Done);
    }
    let delay = if in_calls == 0 && open == 0 && moved == 0 && sweep.ended {
        // A windowed sweep read to the end and found nobody inside their
        // window, and nothing is in progress: windows open on the minute,
        // so the next sweep waits for the next minute (or an earlier retry).
        let next_minute = MINUTE_MS - now_ms.rem_euclid(MINUTE_MS);
        let retry = next_retry.filter(|at| *at > now_ms).map_or(i64::MAX, |at| at - now_ms);
        (next_minute.min(retry).max(ACTIVE_POLL_MS as i64)) as u64
    } else if in_calls > 0 || pending > 0 {
        busy_poll
    } else {
        // Only retries or replies are awaited: look again when the first is
        // due, and meanwhile for replies as often as the backoff says.
        let next = [next_retry, next_close].into_iter().flatten().min();
        let until = next.map_or(IDLE_POLL_MS, |at| (at - now_ms).clamp(ACTIVE_POLL_MS as i64, IDLE_POLL_MS as i64) as u64);
        if open > 0 {
            until.min(busy_poll)
        } else {
            until
        }
    };
    Ok(again(delay))
}

fn again(iteration_id: &str, delay_ms: u64, quiet: u32, window_cursor: Option<String>) -> Outcome {
    CampaignsJob::Dispatch(IterationRef { iteration_id: iteration_id.to_string(), quiet, window_cursor }).continue_after(delay_ms)
}

/// Whether a member whose call ended `status` after `attempts` attempts is
/// called again.
pub fn retried(status: CallStatus, attempts: i64, max_retries: i64) -> bool {
    matches!(status, CallStatus::Busy | CallStatus::NoAnswer | CallStatus::Failed) && attempts <= max_retries
}

/// Step 1: the outcomes of ended calls; how many were settled.
fn settle(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64) -> Result<usize, Failure> {
    let ended = db::query(
        &format!(
            "SELECT m.id, m.claim, m.attempts, c.status FROM campaign_members m \
             JOIN calls c ON c.business_id = m.business_id AND c.id = m.call_id AND c.member_claim = m.claim \
             WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND m.outcome = 'in_progress' AND c.status IN ({})",
            switchboard_voice_area::model::terminal_sql_list()
        ),
        &[biz.into(), iteration_id.into()],
    )?;
    let delay_ms = it.retry_delay_minutes * model::minute_ms()?;
    for r in &ended {
        let (member, claim, attempts, stored) = (r.text(0), r.int(1), r.int(2), r.text(3));
        // Read by the terminal list above, so always a known call status.
        let Some(status) = CallStatus::parse(&stored) else { continue };
        // A running iteration retries; a paused one keeps the retry for when it resumes; a cancelled one never.
        let cancelled = it.status == IterationStatus::Cancelled;
        let retry_at = (!cancelled && retried(status, attempts, it.max_retries)).then_some(now_ms + delay_ms);
        // A call's terminal status is the member's outcome of the same name.
        let outcome = if cancelled && status != CallStatus::Completed { "cancelled" } else { status.as_str() };
        db::execute(
            "UPDATE campaign_members SET outcome = ?4, retry_at_ms = ?5, updated_at = ?6 WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3 AND claim = ?7",
            &[biz.into(), iteration_id.into(), member.as_str().into(), outcome.into(), retry_at.into(), now().into(), claim.into()],
        )?;
        model::record(biz, &member, outcome)?;
    }
    Ok(ended.len())
}

/// Step 1 of a chatapp iteration: members follow their opening message's
/// delivery (`sent`, `delivered`, `read`, `failed`) and become `replied`
/// once the contact wrote in the conversation after it, while its reply
/// window is open; a `failed` opening with retries left gets a retry time,
/// as a failed call does; how many moved.
fn settle_messages(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64) -> Result<usize, Failure> {
    let rows = db::query(
        "SELECT m.id, m.outcome, k.status, m.attempts, \
                EXISTS (SELECT 1 FROM messages i WHERE i.business_id = k.business_id AND i.conversation_id = k.conversation_id \
                        AND i.direction = 'inbound' AND i.created_at > k.created_at) \
         FROM campaign_members m JOIN messages k ON k.business_id = m.business_id AND k.id = m.message_id \
         WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND m.outcome IN ('in_progress', 'sent', 'delivered', 'read') \
           AND (m.outcome = 'in_progress' OR m.open_until_ms > ?3)",
        &[biz.into(), iteration_id.into(), now_ms.into()],
    )?;
    let delay_ms = it.retry_delay_minutes * model::minute_ms()?;
    let mut moved = 0;
    for r in &rows {
        let (member, before, attempts) = (r.text(0), r.text(1), r.int(3));
        let after = if r.boolean(4) { "replied" } else { message_outcome(&r.text(2)) };
        if after != before {
            // A running iteration retries; a paused one keeps the retry for when it resumes; a cancelled one never.
            let retry_at = (it.status != IterationStatus::Cancelled && opening_retried(after, attempts, it.max_retries)).then_some(now_ms + delay_ms);
            db::execute(
                "UPDATE campaign_members SET outcome = ?4, retry_at_ms = ?5, updated_at = ?6 WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
                &[biz.into(), iteration_id.into(), member.as_str().into(), after.into(), retry_at.into(), now().into()],
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

/// What a step's claim did: how many members it took, and where a windowed
/// iteration's sweep resumes.
#[derive(Default)]
struct Sweep {
    claimed: usize,
    /// The last member read (None: the next sweep starts at the first).
    cursor: Option<String>,
    /// The sweep stopped at [`WINDOW_SCAN`] with lines still free.
    cut_short: bool,
    /// The sweep read to the last due member (the next starts over).
    ended: bool,
}

/// Step 2: members into calls, as lines allow (voice), or their opening
/// messages sent (chatapp), in admission order; with a calling window, a
/// bounded sweep from `cursor` of those inside it.
fn claim(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64, cursor: Option<&str>) -> Result<Sweep, Failure> {
    let free = if it.channel == "chatapp" {
        MESSAGE_BATCH
    } else {
        let account = switchboard_voice_area::billing::account(biz)?;
        let busy = db::query_one(&format!("SELECT COUNT(*) FROM calls WHERE business_id = ?1 AND status NOT IN ({})", switchboard_voice_area::model::terminal_sql_list()), &[biz.into()])?
            .map_or(0, |r| r.int(0));
        account.lines - busy
    };
    if free <= 0 {
        return Ok(Sweep { cursor: cursor.map(String::from), ..Sweep::default() });
    }
    // The calling window: the iteration's, else the business's default.
    let defaults = switchboard_voice_area::billing::account(biz)?;
    let default_zone = defaults.time_zone;
    let window = it.window.or_else(|| defaults.window.map(|(start, end)| Window { start: start as u32, end: end as u32 }));
    // With a window, the due members are read in pages from the cursor:
    // those whose local time is outside it wait (they are not failed) and
    // the next ones go first, up to WINDOW_SCAN members a step.
    let page = if window.is_some() { WINDOW_PAGE } else { free };
    let mut due = Vec::new();
    let mut after = window.and(cursor).unwrap_or_default().to_string();
    let mut sweep = Sweep::default();
    let mut local = window::LocalTimes::new(now_ms, default_zone.as_deref());
    for pages in 1..=WINDOW_SCAN / WINDOW_PAGE {
        let rows = db::query(
            &format!(
                "SELECT m.id, m.contact_id, m.claim, json_extract(c.fields_json, '$.timeZone'), c.mobile FROM campaign_members m \
                 LEFT JOIN contacts c ON c.business_id = m.business_id AND c.id = m.contact_id \
                 WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND m.id > ?4 \
                 AND (m.outcome = 'pending' OR (m.retry_at_ms IS NOT NULL AND m.retry_at_ms <= ?3)) ORDER BY m.id LIMIT {page}"
            ),
            &[biz.into(), iteration_id.into(), now_ms.into(), after.as_str().into()],
        )?;
        let full = rows.len() as i64 == page;
        let Some(w) = window else {
            due = rows;
            break;
        };
        for m in rows {
            if due.len() as i64 == free {
                break;
            }
            after = m.text(0);
            if w.contains(local.minute(m.opt_text(3).as_deref(), m.opt_text(4).as_deref())) {
                due.push(m);
            }
        }
        // Lines full: the next sweep goes on after the last member taken.
        // The end reached: it starts over. Else, within the bound, read on.
        if due.len() as i64 == free {
            sweep.cursor = Some(after);
            break;
        }
        if !full {
            sweep.ended = true;
            break;
        }
        if pages == WINDOW_SCAN / WINDOW_PAGE {
            (sweep.cursor, sweep.cut_short) = (Some(after), true);
            break;
        }
    }
    due.truncate(free as usize);
    sweep.claimed = due.len();
    if due.is_empty() {
        return Ok(sweep);
    }
    if it.channel == "chatapp" {
        send_openings(biz, iteration_id, it, now_ms, &due)?;
        return Ok(sweep);
    }
    let plan = match Plan::new(biz, &it.agent_id, BTreeMap::new(), "campaign") {
        Ok(p) => p,
        // The agent was archived or the lines taken away: nothing can be called.
        Err(f) => return pause(biz, iteration_id, &f.code).map(|_| Sweep::default()),
    };
    for m in &due {
        if let Some(cap) = it.max_spend {
            // What the iteration's calls hold reserved or were charged, plus this call's reservation.
            let committed = db::query_one(
                "SELECT IFNULL(SUM(reserved + charged), 0) FROM calls WHERE business_id = ?1 AND campaign_id = ?2 AND iteration_id = ?3",
                &[biz.into(), it.campaign_id.as_str().into(), iteration_id.into()],
            )?
            .map_or(0, |r| r.int(0));
            if committed + plan.reservation() > cap {
                return pause(biz, iteration_id, "budget_reached").map(|_| sweep);
            }
        }
        let (member, contact, claim) = (m.text(0), m.text(1), m.int(2) + 1);
        let attribution = Attribution { campaign_id: &it.campaign_id, iteration_id, member_id: &member, claim };
        match plan.start_for(biz, Target::Contact(&contact), Some(&attribution)) {
            Ok((call_id, _, _)) => {
                db::execute(
                    "UPDATE campaign_members SET outcome = 'in_progress', attempts = attempts + 1, claim = ?4, call_id = ?5, retry_at_ms = NULL, updated_at = ?6 \
                     WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
                    &[biz.into(), iteration_id.into(), member.as_str().into(), claim.into(), call_id.into(), now().into()],
                )?;
                model::record(biz, &member, "in_progress")?;
            }
            Err(f) if f.code == "insufficient_credit" => return pause(biz, iteration_id, "insufficient_credit").map(|_| sweep),
            Err(f) if f.status >= 500 => return Err(f),
            // Blocked, out of scope, deleted, a variable gone: never called on any channel.
            Err(_) => {
                db::execute(
                    "UPDATE campaign_members SET outcome = 'skipped', retry_at_ms = NULL, claim = ?4, updated_at = ?5 WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
                    &[biz.into(), iteration_id.into(), member.as_str().into(), claim.into(), now().into()],
                )?;
                model::record(biz, &member, "skipped")?;
            }
        }
    }
    Ok(sweep)
}

/// The opening message of each due member of a chatapp iteration, through
/// the same outbound path as `POST /messages` (the agent's assigned number,
/// the delivery job, delivery events and webhooks), its placeholders filled
/// by the agent runtime's template language. A member whose contact is
/// blocked, out of the agent's scope or without a value the message uses
/// is skipped (so is every member when the message breaks the language's
/// rules, an unclosed `{{` for one).
fn send_openings(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64, due: &[db::Row]) -> Result<(), Failure> {
    use switchboard_agent_runtime::template;
    use switchboard_messaging_area::conversation;
    use switchboard_voice_area::resolve;
    let Some(sender) = crate::campaigns::sender(biz, &it.agent_id)? else {
        return pause(biz, iteration_id, "agent_not_assigned");
    };
    let agent = resolve::Agent { id: it.agent_id.clone(), name: String::new(), instructions: String::new(), contact_required: true, settings: Default::default() };
    let opening = it.opening.clone().unwrap_or_default();
    let open_until = now_ms + REPLY_WINDOW_MINUTES * model::minute_ms()?;
    for m in due {
        let (member, contact, claim) = (m.text(0), m.text(1), m.int(2) + 1);
        let text = match resolve::contact(biz, &agent, &contact) {
            Err(f) if f.status >= 500 => return Err(f),
            Err(_) => None,
            Ok(target) => template::fill(&opening, &target.values).ok().map(|text| (target, text)),
        };
        let Some((target, text)) = text else {
            db::execute(
                "UPDATE campaign_members SET outcome = 'skipped', retry_at_ms = NULL, claim = ?4, updated_at = ?5 WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
                &[biz.into(), iteration_id.into(), member.as_str().into(), claim.into(), now().into()],
            )?;
            model::record(biz, &member, "skipped")?;
            continue;
        };
        let now = now();
        let conversation_id = conversation::conversation(biz, &sender, &target.id, &now)?;
        let (message_id, _, _) = conversation::queue_outbound(&conversation::Outbound {
            business: biz,
            channel: "chatapp",
            conversation_id: &conversation_id,
            contact_id: Some(&target.id),
            phone_number_id: &sender,
            recipient: &target.mobile,
            kind: "text",
            text: Some(text),
            media_id: None,
            now: &now,
        })?;
        db::execute(
            "UPDATE campaign_members SET outcome = 'in_progress', attempts = attempts + 1, claim = ?4, message_id = ?5, open_until_ms = ?6, retry_at_ms = NULL, updated_at = ?7 \
             WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
            &[biz.into(), iteration_id.into(), member.as_str().into(), claim.into(), message_id.as_str().into(), open_until.into(), now.as_str().into()],
        )?;
        // Every opening is an activity of the campaign, retries included.
        db::execute(
            "INSERT INTO campaign_openings (business_id, message_id, campaign_id, iteration_id, member_id, contact_id, contact_name) \
             SELECT business_id, ?3, campaign_id, iteration_id, id, contact_id, contact_name FROM campaign_members WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?4",
            &[biz.into(), iteration_id.into(), message_id.into(), member.as_str().into()],
        )?;
        model::record(biz, &member, "in_progress")?;
    }
    Ok(())
}

/// The iteration pauses itself, saying why.
fn pause(biz: &str, iteration_id: &str, reason: &str) -> Result<(), Failure> {
    db::execute(
        "UPDATE campaign_iterations SET status = 'paused', paused_reason = ?3, updated_at = ?4 WHERE business_id = ?1 AND id = ?2 AND status = 'running'",
        &[biz.into(), iteration_id.into(), reason.into(), now().into()],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_backs_off_while_nothing_moves() {
        assert_eq!(poll_ms(0), 25);
        assert_eq!(poll_ms(1), 50);
        assert_eq!(poll_ms(5), 800);
        assert_eq!(poll_ms(6), 1_000);
        assert_eq!(poll_ms(u32::MAX), 1_000);
    }

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
