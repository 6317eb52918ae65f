//! `voice.call`: one job per call, from the start to the end, in steps that
//! each read the call, ask the carrier one or a few things, and then write
//! what changed (network mode: every remote call happens before the step's
//! first write, and the writes commit with the step's fenced completion).
//!
//! By the call's carrier state:
//! * `none`: lease a line. One conditional update under the write lock
//!   takes it only while fewer than the business's `lines` calls hold one;
//!   otherwise the call stays `queued` until the end of another call wakes
//!   it (`wake.rs`; the oldest waiting call first), or its safety-net poll
//!   asks again.
//! * `placing`: place the call. `jobs.begin-effect("place.<n>")` is
//!   committed first, and our call id is the carrier's idempotency key, so a
//!   placement is never made twice: a step that finds its effect started
//!   before (a crash, a lease take-over) does not place again but
//!   reconciles. Once the carrier has the call (placed, or found by our
//!   id) its price is the business's active price of that moment
//!   (`billing::price_at_placement`). A carrier that is down is retried
//!   with backoff (1, 2, 4 s) and the call fails with
//!   `carrier_unavailable` after [`MAX_PLACEMENTS`].
//! * `unknown`: a placement timed out or was interrupted: `poll` without a
//!   memo finds the call by our id; a carrier that never got it says
//!   `unknown_call` and the next placement attempt follows.
//! * `placed`: a stored hang-up intent reaches the carrier first; then
//!   `poll` reports what happened (applied in order; a status never moves
//!   backwards), and the conversation rules (`conversation.rs`) decide what the
//!   assistant says: the greeting after the answer, a reply (the `ai`
//!   import, the last 20 turns) once held input may be answered (with the
//!   sentence it interrupted said again, by `repeatInterruptedSentence`), a nudge, a
//!   silence goodbye, or the hang-up at the maximum duration.
//! * `ended` (any cause): the terminal status, `endedBy` from the stored
//!   intent when there is one, the charge and the release of the rest of the
//!   reservation, the line freed, the oldest waiting call woken and the
//!   contact's timeline entry, in the step's one transaction.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use switchboard_agent_runtime::turn::{self, Turn};
use switchboard_guest::carrier::{self, CallEvent, EndCause, Progress};
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::job::{retry, run_step};
use switchboard_guest::job_types::{Continuation, Job, Outcome};
use switchboard_guest::jobs::{self, EffectStart};
use switchboard_guest::{clock, log, now, time, timeline, Failure};

use crate::billing;
use crate::conversation::{self, Conversation, Next};
use crate::model::{self, duration_seconds, CallStatus, CarrierState, EndIntent};

mod ending;
mod heard;
mod placement;
mod turns;
pub mod wake;

pub use ending::append_timeline;
use ending::{classify, finish, finish_unplaced, Ending};
use turns::{agent_turn, rfc3339, utterance_id, with_interrupted_sentence, write_turns, NewTurn};

/// Placement attempts before a call fails with `carrier_unavailable`.
pub const MAX_PLACEMENTS: i64 = 4;
/// Transient carrier errors tolerated while reconciling or polling.
const MAX_ATTEMPTS: u32 = 8;
/// The longest pause between two steps of a connected call (the silence and
/// duration rules are checked at least this often).
const MAX_POLL_MS: u64 = 1_000;
/// Conversation history an agent turn sees (spec: last 20).
pub const HISTORY: i64 = 20;

/// Delay before placement attempt `n + 1` after `n` failed.
pub fn placement_retry_ms(n: i64) -> u64 {
    1000u64 << (n.clamp(1, 6) - 1)
}

const COLUMNS: &str = "status, carrier_state, placements, memo, requested_at_ms, callee_number, caller_number, settings_json, max_duration_s, \
     end_intent, hangup_sent, greeting, utterances, played, greeting_played, awaiting_reply, last_activity_ms, nudged, answered_ms, \
     reserved, price_per_block, agent_id, variables_json, interrupted_percent";

/// The stored call, as a step sees it and changes it.
#[derive(Clone)]
struct Call {
    id: String,
    status: CallStatus,
    carrier_state: CarrierState,
    placements: i64,
    memo: Option<String>,
    requested_at_ms: Option<i64>,
    callee: String,
    caller: Option<String>,
    settings: Map<String, Value>,
    max_duration_s: i64,
    end_intent: Option<EndIntent>,
    hangup_sent: bool,
    greeting: Option<String>,
    utterances: i64,
    played: i64,
    greeting_played: i64,
    awaiting_reply: bool,
    last_activity_ms: Option<i64>,
    nudged: bool,
    answered_ms: Option<i64>,
    reserved: i64,
    price: i64,
    agent_id: String,
    variables: BTreeMap<String, String>,
    /// The share (percent) of the assistant's latest utterance played when
    /// the customer began speaking over it.
    interrupted: Option<i64>,
}

fn load(biz: &str, id: &str) -> Result<Option<Call>, Failure> {
    Ok(db::query_one(&format!("SELECT {COLUMNS} FROM calls WHERE business_id = ?1 AND id = ?2"), &[biz.into(), id.into()])?.map(|r| Call {
        id: id.to_string(),
        // Text no version wrote reads as ended (failed) or placed: the
        // step then leaves the call alone or asks the carrier.
        status: CallStatus::parse(&r.text(0)).unwrap_or(CallStatus::Failed),
        carrier_state: CarrierState::parse(&r.text(1)).unwrap_or(CarrierState::Placed),
        placements: r.int(2),
        memo: r.opt_text(3),
        requested_at_ms: r.opt_int(4),
        callee: r.text(5),
        caller: r.opt_text(6),
        settings: serde_json::from_str(&r.text(7)).unwrap_or_default(),
        max_duration_s: r.int(8),
        end_intent: r.opt_text(9).as_deref().and_then(EndIntent::parse),
        hangup_sent: r.boolean(10),
        greeting: r.opt_text(11),
        utterances: r.int(12),
        played: r.int(13),
        greeting_played: r.int(14),
        awaiting_reply: r.boolean(15),
        last_activity_ms: r.opt_int(16),
        nudged: r.boolean(17),
        answered_ms: r.opt_int(18),
        reserved: r.int(19),
        price: r.int(20),
        agent_id: r.text(21),
        variables: serde_json::from_str(&r.text(22)).unwrap_or_default(),
        interrupted: r.opt_int(23),
    }))
}

pub fn run(job: &Job, call_id: &str) -> Outcome {
    run_step("during a call step", || step(job, call_id))
}

fn again(delay_ms: u64, job: &Job) -> Outcome {
    Outcome::Continue(Continuation { delay_ms, payload_json: job.payload_json.clone() })
}

fn step(job: &Job, call_id: &str) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let Some(c) = load(biz, call_id)? else { return Ok(Outcome::Done) };
    if c.status.is_terminal() {
        return Ok(Outcome::Done);
    }
    match c.carrier_state {
        CarrierState::None => lease(job, &c),
        CarrierState::Placing => place(job, c),
        CarrierState::Unknown => reconcile(job, c),
        CarrierState::Placed => converse(job, c),
    }
}

/// `none` → `placing` once a line is free.
fn lease(job: &Job, c: &Call) -> Result<Outcome, Failure> {
    let leased = db::execute(
        "UPDATE calls SET holds_line = 1, carrier_state = 'placing' \
         WHERE business_id = ?1 AND id = ?2 AND carrier_state = 'none' AND status = 'queued' \
           AND (SELECT COUNT(*) FROM calls WHERE business_id = ?1 AND holds_line = 1) \
               < IFNULL((SELECT lines FROM voice_accounts WHERE business_id = ?1), ?3)",
        &[job.business_id.as_str().into(), c.id.as_str().into(), billing::DEFAULT_LINES.into()],
    )?;
    if leased == 1 {
        // The request time is read only now, after the line is ours: a
        // step's first write may wait (for the write gate, or the primary's
        // lock at a replica) while another call ends and frees the line,
        // and a time read before that wait would date this call's ringing
        // before that call's end.
        db::execute(
            "UPDATE calls SET requested_at_ms = IFNULL(requested_at_ms, ?3) WHERE business_id = ?1 AND id = ?2",
            &[job.business_id.as_str().into(), c.id.as_str().into(), clock::now_ms().into()],
        )?;
        return Ok(again(0, job));
    }
    // Every line is taken: the end of another call wakes this one; the poll
    // is the safety net (`wake.rs`).
    db::execute("UPDATE calls SET line_waits = line_waits + 1 WHERE business_id = ?1 AND id = ?2", &[job.business_id.as_str().into(), c.id.as_str().into()])?;
    Ok(again(wake::line_poll_ms()?, job))
}

fn set_state(biz: &str, c: &Call, state: CarrierState, placements: i64, memo: Option<&str>) -> Result<(), Failure> {
    db::execute(
        "UPDATE calls SET carrier_state = ?3, placements = ?4, memo = IFNULL(?5, memo) WHERE business_id = ?1 AND id = ?2",
        &[biz.into(), c.id.as_str().into(), state.as_str().into(), placements.into(), memo.into()],
    )?;
    Ok(())
}

/// The carrier has the call: it is billed at the price active now (spec:
/// "the business's active Voice price"), not the one of its start, and the
/// placement it got is kept for its recording (`placement_json`).
fn placed(biz: &str, c: &mut Call) -> Result<(), Failure> {
    (c.price, c.reserved) = billing::price_at_placement(biz, &c.id, c.max_duration_s, c.reserved)?;
    db::execute("UPDATE calls SET placement_json = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), c.id.as_str().into(), placement::to_json(&placement::of(c)).into()])?;
    Ok(())
}

/// `placing`: one placement attempt, made at most once.
fn place(job: &Job, mut c: Call) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let n = c.placements + 1;
    match jobs::begin_effect(&format!("place.{n}")).map_err(db::store_failure)? {
        EffectStart::Fresh => {}
        // An earlier step began this placement and never recorded how it
        // went: find out from the carrier instead of placing again.
        EffectStart::StartedBefore => {
            set_state(biz, &c, CarrierState::Unknown, n, None)?;
            return Ok(again(0, job));
        }
        EffectStart::Superseded => return Ok(Outcome::Dead("superseded: another node runs this call".into())),
    }
    match carrier::place(&placement::of(&c)) {
        Ok(progress) => {
            set_state(biz, &c, CarrierState::Placed, n, Some(&progress.memo))?;
            placed(biz, &mut c)?;
            c.carrier_state = CarrierState::Placed;
            c.placements = n;
            apply_progress(job, c, progress)
        }
        Err(e) if e.code == "placement_timeout" => {
            set_state(biz, &c, CarrierState::Unknown, n, None)?;
            Ok(again(200, job))
        }
        Err(e) if e.retryable => {
            set_state(biz, &c, CarrierState::Placing, n, None)?;
            if c.status == CallStatus::Cancelling {
                finish_unplaced(biz, &c, CallStatus::Cancelled, "operator", "operator_cancelled")
            } else if n >= MAX_PLACEMENTS {
                finish_unplaced(biz, &c, CallStatus::Failed, "provider", "carrier_unavailable")
            } else {
                log::log(log::Level::Warn, &format!("call {}: placement {n} failed ({}); retrying", c.id, e.code));
                Ok(again(placement_retry_ms(n), job))
            }
        }
        Err(e) => {
            set_state(biz, &c, CarrierState::Placing, n, None)?;
            finish_unplaced(biz, &c, CallStatus::Failed, "provider", &format!("carrier_refused_{}", safe_code(&e.code)))
        }
    }
}

/// The share (percent) of an utterance of audio `span` played when the
/// customer began speaking at `offset_ms`, if that was inside it.
fn spoken_over((start, end): (u64, u64), offset_ms: u64) -> Option<i64> {
    (start..end).contains(&offset_ms).then(|| ((offset_ms - start) * 100 / (end - start)) as i64)
}

/// A carrier's error code as part of an `endReason` (short, `[a-z0-9_]`).
fn safe_code(code: &str) -> String {
    code.chars().take(48).map(|ch| if ch.is_ascii_alphanumeric() { ch.to_ascii_lowercase() } else { '_' }).collect()
}

/// `unknown`: does the carrier have the call under our id?
fn reconcile(job: &Job, mut c: Call) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    match carrier::poll(&placement::of(&c), None) {
        Ok(progress) => {
            set_state(biz, &c, CarrierState::Placed, c.placements, Some(&progress.memo))?;
            placed(biz, &mut c)?;
            c.carrier_state = CarrierState::Placed;
            apply_progress(job, c, progress)
        }
        Err(e) if e.code == "unknown_call" => {
            if c.status == CallStatus::Cancelling {
                return finish_unplaced(biz, &c, CallStatus::Cancelled, "operator", "operator_cancelled");
            }
            if c.placements >= MAX_PLACEMENTS {
                return finish_unplaced(biz, &c, CallStatus::Failed, "provider", "carrier_unavailable");
            }
            // Never placed: the next attempt places it (under a new effect key).
            set_state(biz, &c, CarrierState::Placing, c.placements, None)?;
            Ok(again(placement_retry_ms(c.placements), job))
        }
        Err(e) if e.retryable && job.attempt < MAX_ATTEMPTS => Ok(retry(job.attempt, format!("carrier: {}", e.code))),
        Err(_) => finish_unplaced(biz, &c, CallStatus::Failed, "provider", "carrier_unreachable"),
    }
}

/// `placed`: the conversation.
fn converse(job: &Job, mut c: Call) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let call = placement::of(&c);
    let mut memo = c.memo.clone().unwrap_or_default();
    // A stored hang-up intent (an operator's cancel) reaches the carrier
    // before anything else; repeating it is harmless.
    if c.end_intent == Some(EndIntent::Operator) && !c.hangup_sent {
        match carrier::hang_up(&call, Some(&memo)) {
            Ok(m) => {
                memo = m;
                c.hangup_sent = true;
            }
            Err(e) if e.retryable => return Ok(again(placement_retry_ms(1), job)),
            Err(e) => log::log(log::Level::Warn, &format!("call {}: hang-up refused: {}", c.id, e.code)),
        }
    }
    // A turn's post waits for its answer: the carrier is not asked what
    // happened first (a round trip to its API on every turn); the next
    // step polls.
    if heard::waiting(job.business_id.as_str(), &c.id)? {
        c.memo = Some(memo.clone());
        return apply_progress(job, c, Progress { events: Vec::new(), memo, check_after_ms: None });
    }
    let progress = match carrier::poll(&call, Some(&memo)) {
        Ok(p) => p,
        Err(e) if e.retryable && job.attempt < MAX_ATTEMPTS => return Ok(retry(job.attempt, format!("carrier: {}", e.code))),
        Err(e) => {
            log::log(log::Level::Warn, &format!("call {}: the carrier stopped answering: {}", c.id, e.code));
            c.memo = Some(memo);
            finish(biz, &c, Ending { status: CallStatus::Failed, ended_by: "provider", reason: "carrier_unreachable", connected_ms: 0, attempt_cost: 0, recording_ext: None })?;
            return Ok(Outcome::Done);
        }
    };
    apply_progress(job, c, progress)
}

/// Applies the carrier's events, then lets the assistant act, then writes
/// the whole step.
fn apply_progress(job: &Job, mut c: Call, progress: Progress) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let mut turns: Vec<NewTurn> = Vec::new();
    let mut offsets: Vec<(String, u64, u64)> = Vec::new();
    let (mut ringing_at, mut started_at) = (None, None);
    let mut ended = None;
    let greeting_id = utterance_id(&c.id, 0);
    // The audio span of the assistant's latest utterance, from a receipt of
    // this step (the sandbox carrier reports a barge-in with the receipt of
    // the utterance it interrupts) or, for a speech reported steps after
    // the receipt, the span that receipt stored on the utterance's turn.
    let mut speaking: Option<(u64, u64)> = None;
    for e in progress.events {
        match e.event {
            CallEvent::Ringing => {
                if c.status == CallStatus::Queued {
                    c.status = CallStatus::Ringing;
                }
                ringing_at.get_or_insert(rfc3339(e.at_ms));
            }
            CallEvent::Answered => {
                if matches!(c.status, CallStatus::Queued | CallStatus::Ringing) {
                    c.status = CallStatus::Answered;
                }
                if c.answered_ms.is_none() {
                    c.answered_ms = Some(e.at_ms);
                    c.last_activity_ms = Some(e.at_ms);
                    started_at = Some(rfc3339(e.at_ms));
                }
            }
            CallEvent::Played(p) => {
                let pct = i64::from(p.played_percent.min(100));
                if p.utterance_id == greeting_id {
                    c.greeting_played = c.greeting_played.max(pct);
                }
                let latest = p.utterance_id == utterance_id(&c.id, c.utterances - 1);
                if latest {
                    speaking = Some((p.audio_offset_ms, p.audio_end_offset_ms));
                }
                if pct >= 100 {
                    c.played += 1;
                    c.last_activity_ms = Some(e.at_ms);
                    offsets.push((p.utterance_id, p.audio_offset_ms, p.audio_end_offset_ms));
                } else if latest && p.audio_end_offset_ms > p.audio_offset_ms {
                    // Kept for a speech a later step reports.
                    offsets.push((p.utterance_id, p.audio_offset_ms, p.audio_end_offset_ms));
                }
            }
            CallEvent::CustomerSaid(s) => {
                if speaking.is_none() && c.utterances > 0 {
                    speaking = turns::stored_span(biz, &c.id, &utterance_id(&c.id, c.utterances - 1))?;
                }
                if let Some(share) = speaking.and_then(|span| spoken_over(span, s.audio_offset_ms)) {
                    c.interrupted = Some(share);
                }
                turns.push(NewTurn {
                    speaker: "customer",
                    text: s.text,
                    utterance_id: None,
                    offset_ms: Some(s.audio_offset_ms as i64),
                    end_offset_ms: Some(s.audio_end_offset_ms as i64),
                    at: rfc3339(e.at_ms),
                    grounding: None,
                });
                c.awaiting_reply = true;
                c.nudged = false;
                c.last_activity_ms = Some(e.at_ms);
            }
            CallEvent::Ended(end) => {
                ended = Some(end);
                break;
            }
        }
    }
    c.memo = Some(progress.memo);

    // A carrier that hears in turns: its posts the step has not answered.
    let posted = heard::latest(biz, &c.id)?;
    let driven = !posted.is_empty();
    let waiting: Vec<&heard::Posted> = posted.iter().filter(|p| p.waiting()).collect();
    if ended.is_none() {
        for p in &waiting {
            if p.turn == 0 {
                // The call's answer.
                if matches!(c.status, CallStatus::Queued | CallStatus::Ringing) {
                    c.status = CallStatus::Answered;
                }
                if c.answered_ms.is_none() {
                    c.answered_ms = Some(p.received_ms);
                    c.last_activity_ms = Some(p.received_ms);
                    started_at = Some(rfc3339(p.received_ms));
                }
                continue;
            }
            // Everything said before the post has played (or was cut).
            c.played = c.utterances;
            c.greeting_played = 100;
            if let Some(text) = p.speech() {
                if let Some(share) = heard::cut_in(&posted, p) {
                    c.interrupted = Some(share);
                }
                let since = |ms: i64| c.answered_ms.map(|a| (ms - a).max(0));
                turns.push(NewTurn {
                    speaker: "customer",
                    text,
                    utterance_id: None,
                    offset_ms: since(p.partial_ms.unwrap_or(p.received_ms)),
                    end_offset_ms: since(p.received_ms),
                    at: rfc3339(p.received_ms),
                    grounding: None,
                });
                c.awaiting_reply = true;
                c.nudged = false;
                c.last_activity_ms = Some(p.received_ms);
            }
        }
    }
    // Such a call speaks only in answers to its posts.
    let may_speak = !driven || !waiting.is_empty();
    let mut answers: Vec<(i64, Value)> = Vec::new();

    // The assistant's move, unless the call has ended.
    let mut hang_up_for_max = false;
    if ended.is_none() && c.carrier_state == CarrierState::Placed {
        let conversation = Conversation {
            answered_ms: c.answered_ms,
            utterances: c.utterances,
            played: c.played,
            greeting_played: c.greeting_played,
            awaiting_reply: c.awaiting_reply,
            last_activity_ms: c.last_activity_ms,
            nudged: c.nudged,
            ending: c.end_intent.is_some() || c.status == CallStatus::Cancelling,
            allow_interrupt: conversation::allow_interrupt(&c.settings),
            nudge_ms: conversation::nudge_ms(&c.settings),
            disconnect_ms: conversation::disconnect_ms(&c.settings),
            max_ms: c.max_duration_s * 1000,
        };
        let said = match conversation::next(&conversation, clock::now_ms()) {
            Next::Wait => None,
            next if !may_speak && next != Next::MaxDuration => None,
            Next::Greeting => match c.greeting.clone() {
                Some(g) => Some((g, false, None, None)),
                None => agent_turn(biz, &c, &turns)?.map(|(text, end, used)| (text, end, None, used)),
            },
            Next::Reply => match agent_turn(biz, &c, &turns)? {
                Some((text, end, used)) => Some((with_interrupted_sentence(biz, &c, text, end)?, end, None, used)),
                None => None,
            },
            Next::Nudge => Some((conversation::NUDGE.to_string(), false, Some("nudge"), None)),
            Next::SilenceGoodbye => Some((conversation::SILENCE_GOODBYE.to_string(), true, Some("silence"), None)),
            Next::MaxDuration => {
                hang_up_for_max = true;
                None
            }
        };
        if let Some((text, end_call, why, grounding)) = said {
            let id = utterance_id(&c.id, c.utterances);
            // Its place in the call's audio: said from now, for about its
            // length (a carrier that hears in turns reports no playback).
            let mut span = None;
            let spoken = match waiting.last() {
                // The answer to the latest post; the host says it.
                Some(p) if driven => {
                    let barge_in = c.utterances > 0 || conversation::allow_interrupt(&c.settings);
                    let mut after = c.clone();
                    after.nudged |= why == Some("nudge");
                    let listen = heard::listen_seconds(&after, clock::now_ms());
                    answers.push((p.turn, json!({"text": text, "endCall": end_call, "bargeIn": barge_in, "listenSeconds": listen})));
                    let at = c.answered_ms.map_or(0, |a| (clock::now_ms() - a).max(0));
                    span = Some((at, at + text.chars().count() as i64 * heard::MS_PER_CHAR));
                    Ok(c.memo.clone().unwrap_or_default())
                }
                _ => carrier::say(&placement::of(&c), c.memo.as_deref().unwrap_or_default(), &id, &text, end_call),
            };
            match spoken {
                Ok(memo) => {
                    c.memo = Some(memo);
                    c.utterances += 1;
                    c.interrupted = None;
                    if why == Some("nudge") {
                        c.nudged = true;
                    } else if why.is_none() {
                        c.awaiting_reply = false;
                    }
                    if end_call {
                        c.end_intent = Some(if why == Some("silence") { EndIntent::Silence } else { EndIntent::Agent });
                    }
                    turns.push(NewTurn { speaker: "assistant", text, utterance_id: Some(id), offset_ms: span.map(|s| s.0), end_offset_ms: span.map(|s| s.1), at: now(), grounding });
                }
                Err(e) => log::log(log::Level::Warn, &format!("call {}: the carrier refused an utterance: {}", c.id, e.code)),
            }
        }
        if hang_up_for_max {
            match carrier::hang_up(&placement::of(&c), c.memo.as_deref()) {
                Ok(memo) => {
                    c.memo = Some(memo);
                    c.end_intent = Some(EndIntent::MaxDuration);
                    c.hangup_sent = true;
                }
                Err(e) => log::log(log::Level::Warn, &format!("call {}: hang-up at the maximum duration refused: {}", c.id, e.code)),
            }
        }
    }

    // Every other post still waiting gets an answer: listen again.
    if ended.is_none() {
        let listen = heard::listen_seconds(&c, clock::now_ms());
        for p in &waiting {
            if !answers.iter().any(|(turn, _)| *turn == p.turn) {
                answers.push((p.turn, json!({"text": null, "endCall": false, "bargeIn": false, "listenSeconds": listen})));
            }
        }
    }

    // An ended call that connected: does the carrier have its recording?
    let recording_ext = match &ended {
        Some(end) if end.connected_ms > 0 => match carrier::recording(&placement::of(&c), c.memo.as_deref().unwrap_or_default(), 0, 0) {
            Ok(piece) if piece.extension == "wav" || piece.extension == "opus" => Some(piece.extension),
            _ => None,
        },
        _ => None,
    };

    // Every remote call is behind us: write the step. An operator's cancel
    // may have committed since this step read the call (a step that calls
    // out reads before it takes the write lock): its `cancelling` and its
    // intent are kept, never overwritten by this step's older copy.
    write_turns(biz, &c.id, &turns, &offsets)?;
    for (turn, answer) in &answers {
        heard::answer(biz, &c.id, *turn, answer)?;
    }
    db::execute(
        "UPDATE calls SET status = CASE WHEN status = 'cancelling' THEN status ELSE ?3 END, memo = ?4, greeting_played = ?5, played = ?6, awaiting_reply = ?7, \
                          last_activity_ms = ?8, nudged = ?9, answered_ms = ?10, utterances = ?11, \
                          end_intent = CASE WHEN end_intent = 'operator' THEN end_intent ELSE ?12 END, hangup_sent = ?13, \
                          ringing_at = IFNULL(ringing_at, ?14), started_at = IFNULL(started_at, ?15), interrupted_percent = ?16 \
         WHERE business_id = ?1 AND id = ?2",
        &[
            biz.into(),
            c.id.as_str().into(),
            c.status.as_str().into(),
            c.memo.as_deref().into(),
            c.greeting_played.into(),
            c.played.into(),
            c.awaiting_reply.into(),
            c.last_activity_ms.into(),
            c.nudged.into(),
            c.answered_ms.into(),
            c.utterances.into(),
            c.end_intent.map(EndIntent::as_str).into(),
            c.hangup_sent.into(),
            ringing_at.into(),
            started_at.into(),
            c.interrupted.into(),
        ],
    )?;
    if let Some(end) = ended {
        // Read inside the step's write transaction: the intent as it stands.
        if let Some(row) = db::query_one("SELECT end_intent FROM calls WHERE business_id = ?1 AND id = ?2", &[biz.into(), c.id.as_str().into()])? {
            c.end_intent = row.opt_text(0).as_deref().and_then(EndIntent::parse).or(c.end_intent);
        }
        // A carrier that hears in turns hangs up after an `end_call`
        // answer on its own: that hang-up is the agent's.
        let cause = match end.cause {
            EndCause::CustomerHungUp | EndCause::Completed if driven && c.end_intent == Some(EndIntent::Agent) => EndCause::AgentHungUp,
            cause => cause,
        };
        let (status, ended_by, reason) = classify(c.end_intent, cause);
        finish(biz, &c, Ending { status, ended_by, reason, connected_ms: end.connected_ms, attempt_cost: end.attempt_cost_microcredits, recording_ext })?;
        return Ok(Outcome::Done);
    }
    Ok(again(progress.check_after_ms.unwrap_or(MAX_POLL_MS).min(MAX_POLL_MS), job))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_backoff() {
        assert_eq!(placement_retry_ms(1), 1000);
        assert_eq!(placement_retry_ms(3), 4000);
        assert_eq!(safe_code("Carrier-Down!"), "carrier_down_");
        assert_eq!(spoken_over((1_000, 3_000), 2_000), Some(50));
        assert_eq!(spoken_over((1_000, 3_000), 3_000), None, "after it ended");
        assert_eq!(spoken_over((1_000, 3_000), 999), None);
        assert_eq!(spoken_over((1_000, 1_000), 1_000), None, "an empty span");
    }
}
