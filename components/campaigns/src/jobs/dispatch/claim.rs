//! Step 2 of a dispatch step: due members claimed in admission order, as
//! many as the business has free lines (voice) or a batch of openings
//! (chatapp), with a calling window a bounded sweep of those inside it,
//! and each voice member's call started (a chatapp member's opening is
//! `openings.rs`). Credit that runs out, the budget cap, or an agent that
//! can no longer call pauses the iteration.

use super::*;
use switchboard_sql::{FromRow, Mismatch, Row};

/// A due member: its id, contact and claim, and what decides its
/// contact's local time (the `timeZone` field as text, the mobile; NULL
/// once the contact is deleted).
pub(super) struct DueMember {
    pub(super) id: String,
    pub(super) contact_id: String,
    pub(super) claim: i64,
    zone: Option<String>,
    mobile: Option<String>,
}

impl FromRow for DueMember {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let (id, contact_id, claim, zone, mobile) = FromRow::from_row(row)?;
        Ok(DueMember { id, contact_id, claim, zone, mobile })
    }
}

/// What a step's claim did: how many members it took, and where a windowed
/// iteration's sweep resumes.
#[derive(Default)]
pub(super) struct Sweep {
    pub(super) claimed: usize,
    /// The last member read (None: the next sweep starts at the first).
    pub(super) cursor: Option<String>,
    /// The sweep stopped at [`WINDOW_SCAN`] with lines still free.
    pub(super) cut_short: bool,
    /// The sweep read to the last due member (the next starts over).
    pub(super) ended: bool,
}

/// Step 2: members into calls, as lines allow (voice), or their opening
/// messages sent (chatapp), in admission order; with a calling window, a
/// bounded sweep from `cursor` of those inside it.
pub(super) fn claim(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64, cursor: Option<&str>) -> Result<Sweep, Failure> {
    let free = free_slots(biz, it)?;
    if free <= 0 {
        return Ok(Sweep { cursor: cursor.map(String::from), ..Sweep::default() });
    }
    let (mut due, mut sweep) = due_members(biz, iteration_id, it, now_ms, cursor, free)?;
    due.truncate(free as usize);
    sweep.claimed = due.len();
    if due.is_empty() {
        return Ok(sweep);
    }
    if it.channel == Channel::Chatapp {
        openings::send_openings(biz, iteration_id, it, now_ms, &due)?;
        return Ok(sweep);
    }
    start_calls(biz, iteration_id, it, &due, sweep)
}

/// How many members this step may take: the business's free lines (its
/// lines less its calls not yet ended, direct ones included), or a batch
/// of openings.
fn free_slots(biz: &str, it: &Iteration) -> Result<i64, Failure> {
    if it.channel == Channel::Chatapp {
        return Ok(MESSAGE_BATCH);
    }
    let account = switchboard_voice_area::billing::account(biz)?;
    let busy =
        db::query_one_as::<i64>(&format!("SELECT COUNT(*) FROM calls WHERE business_id = ?1 AND status NOT IN ({})", switchboard_voice_area::model::terminal_sql_list()), &params![biz])?.unwrap_or(0);
    Ok(account.lines - busy)
}

/// Up to `free` due members (pending, or with their retry time passed), in
/// admission order. With a calling window (the iteration's, else the
/// business's default) the due members are read in pages from `cursor`:
/// those whose local time is outside it wait (they are not failed) and the
/// next ones go first, up to [`WINDOW_SCAN`] members a step.
fn due_members(biz: &str, iteration_id: &str, it: &Iteration, now_ms: i64, cursor: Option<&str>, free: i64) -> Result<(Vec<DueMember>, Sweep), Failure> {
    let defaults = switchboard_voice_area::billing::account(biz)?;
    let default_zone = defaults.time_zone;
    let window = it.window.or_else(|| defaults.window.map(|(start, end)| Window { start: start as u32, end: end as u32 }));
    let page = if window.is_some() { WINDOW_PAGE } else { free };
    let mut due = Vec::new();
    let mut after = window.and(cursor).unwrap_or_default().to_string();
    let mut sweep = Sweep::default();
    let mut local = window::LocalTimes::new(now_ms, default_zone.as_deref());
    for pages in 1..=WINDOW_SCAN / WINDOW_PAGE {
        let rows: Vec<DueMember> = db::query_as(
            &format!(
                "SELECT m.id, m.contact_id, m.claim, CAST(json_extract(c.fields_json, '$.timeZone') AS TEXT), c.mobile FROM campaign_members m \
                 LEFT JOIN contacts c ON c.business_id = m.business_id AND c.id = m.contact_id \
                 WHERE m.business_id = ?1 AND m.iteration_id = ?2 AND m.id > ?4 \
                 AND (m.outcome = 'pending' OR (m.retry_at_ms IS NOT NULL AND m.retry_at_ms <= ?3)) ORDER BY m.id LIMIT {page}"
            ),
            &params![biz, iteration_id, now_ms, &after],
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
            after = m.id.clone();
            if w.contains(local.minute(m.zone.as_deref(), m.mobile.as_deref())) {
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
    Ok((due, sweep))
}

/// Each due member's call, through the voice area (`Plan::start_for`: the
/// contact's checks, the variables snapshot, the reservation), under a
/// claim one higher than before; a contact that cannot be called is
/// `skipped`.
fn start_calls(biz: &str, iteration_id: &str, it: &Iteration, due: &[DueMember], sweep: Sweep) -> Result<Sweep, Failure> {
    let plan = match Plan::new(biz, &it.agent_id, BTreeMap::new(), "campaign") {
        Ok(p) => p,
        // The agent was archived or the lines taken away: nothing can be called.
        Err(f) => return pause(biz, iteration_id, &f.code).map(|_| Sweep::default()),
    };
    for m in due {
        if let Some(cap) = it.max_spend {
            // What the iteration's calls hold reserved or were charged, plus this call's reservation.
            let committed = db::query_one_as::<i64>(
                "SELECT IFNULL(SUM(reserved + charged), 0) FROM calls WHERE business_id = ?1 AND campaign_id = ?2 AND iteration_id = ?3",
                &params![biz, &it.campaign_id, iteration_id],
            )?
            .unwrap_or(0);
            if committed + plan.reservation() > cap {
                return pause(biz, iteration_id, "budget_reached").map(|_| sweep);
            }
        }
        let (member, claim) = (m.id.as_str(), m.claim + 1);
        let attribution = Attribution { campaign_id: &it.campaign_id, iteration_id, member_id: member, claim };
        match plan.start_for(biz, Target::Contact(&m.contact_id), Some(&attribution)) {
            Ok((call_id, _, _)) => {
                db::execute(
                    "UPDATE campaign_members SET outcome = 'in_progress', attempts = attempts + 1, claim = ?4, call_id = ?5, retry_at_ms = NULL, updated_at = ?6 \
                     WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
                    &params![biz, iteration_id, member, claim, call_id, now()],
                )?;
                model::record(biz, member, "in_progress")?;
            }
            Err(f) if f.code == "insufficient_credit" => return pause(biz, iteration_id, "insufficient_credit").map(|_| sweep),
            Err(f) if f.status >= 500 => return Err(f),
            // Blocked, out of scope, deleted, a variable gone: never called on any channel.
            Err(_) => skip(biz, iteration_id, member, claim)?,
        }
    }
    Ok(sweep)
}

/// A member that is never called or sent to (blocked, out of scope,
/// deleted, a value its call or message needs gone) is `skipped` under its
/// new claim.
pub(super) fn skip(biz: &str, iteration_id: &str, member: &str, claim: i64) -> Result<(), Failure> {
    db::execute(
        "UPDATE campaign_members SET outcome = 'skipped', retry_at_ms = NULL, claim = ?4, updated_at = ?5 WHERE business_id = ?1 AND iteration_id = ?2 AND id = ?3",
        &params![biz, iteration_id, member, claim, now()],
    )?;
    model::record(biz, member, "skipped")
}

/// The iteration pauses itself, saying why.
pub(super) fn pause(biz: &str, iteration_id: &str, reason: &str) -> Result<(), Failure> {
    db::execute(
        "UPDATE campaign_iterations SET status = 'paused', paused_reason = ?3, updated_at = ?4 WHERE business_id = ?1 AND id = ?2 AND status = 'running'",
        &params![biz, iteration_id, reason, now()],
    )?;
    Ok(())
}
