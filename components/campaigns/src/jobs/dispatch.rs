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

use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{clock, now, params, Failure};
use switchboard_voice_area::calls::{Attribution, Plan, Target};

use super::{CampaignsJob, IterationRef};
use crate::model::{self, IterationStatus};
use crate::window::{self, Window};
use switchboard_guest::job::{run_step, AreaJob};
use switchboard_messaging_area::status::MessageStatus;
use switchboard_voice_area::model::CallStatus;

mod claim;
mod openings;
mod settle;

use claim::{claim, Sweep};
use settle::{settle, settle_messages};

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
    channel: Channel,
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
    let Some((campaign_id, agent_id, status, max_retries, retry_delay_minutes, max_spend, window_start, window_end, channel, opening)) =
        db::query_one_as::<(String, String, String, i64, i64, Option<i64>, Option<i64>, Option<i64>, Channel, Option<String>)>(
            "SELECT campaign_id, agent_id, status, max_retries, retry_delay_minutes, max_spend, window_start, window_end, channel, opening_message \
             FROM campaign_iterations WHERE business_id = ?1 AND id = ?2",
            &params![biz, iteration_id],
        )?
    else {
        return Ok(Outcome::Dead("the iteration no longer exists".into()));
    };
    let it = Iteration {
        campaign_id,
        agent_id,
        // Text no version wrote: held like a pause (nothing claimed, nothing cancelled).
        status: IterationStatus::parse(&status).unwrap_or(IterationStatus::Paused),
        max_retries,
        retry_delay_minutes,
        max_spend,
        window: model::window_of(window_start, window_end),
        channel,
        opening,
    };
    let now_ms = clock::now_ms();
    let mut moved = if it.channel == Channel::Chatapp { settle_messages(biz, iteration_id, &it, now_ms)? } else { settle(biz, iteration_id, &it, now_ms)? };
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
    let (in_calls, waiting, pending, next_retry, open, next_close) = db::query_one_as::<(i64, i64, i64, Option<i64>, i64, Option<i64>)>(
        "SELECT IFNULL(SUM(outcome = 'in_progress'), 0), IFNULL(SUM(outcome = 'pending' OR retry_at_ms IS NOT NULL), 0), \
                IFNULL(SUM(outcome = 'pending'), 0), MIN(retry_at_ms), \
                IFNULL(SUM(outcome IN ('sent', 'delivered', 'read') AND open_until_ms > ?3), 0), \
                MIN(CASE WHEN outcome IN ('sent', 'delivered', 'read') AND open_until_ms > ?3 THEN open_until_ms END) \
         FROM campaign_members WHERE business_id = ?1 AND iteration_id = ?2",
        &params![biz, iteration_id, now_ms],
    )?
    .expect("an aggregate has a row");
    let status = db::query_one_as::<String>("SELECT status FROM campaign_iterations WHERE business_id = ?1 AND id = ?2", &params![biz, iteration_id])?.and_then(|s| IterationStatus::parse(&s));
    if status != Some(IterationStatus::Running) {
        // Paused (by an operator or for credit) or cancelled: only the calls
        // in progress are left to settle.
        return Ok(if in_calls > 0 { again(busy_poll) } else { Outcome::Done });
    }
    if in_calls == 0 && waiting == 0 && open == 0 {
        let now = now();
        db::execute(
            "UPDATE campaign_iterations SET status = 'completed', ended_at = ?3, updated_at = ?3 WHERE business_id = ?1 AND id = ?2 AND status = 'running'",
            &params![biz, iteration_id, &now],
        )?;
        db::execute("UPDATE campaigns SET updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &it.campaign_id, now])?;
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
}
