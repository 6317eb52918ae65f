//! A placed call's step: what the carrier reports (`converse` asks it;
//! a placement's own answer comes from `placing.rs`), applied
//! (`events.rs`), the assistant's move (`assistant.rs`), and the whole step
//! written once every remote call is behind it, with the call's end when
//! the carrier reported one.

use super::*;
use assistant::Answer;
use events::Notes;

/// `placed`: the conversation.
pub(super) fn converse(job: &Job, mut c: Call) -> Result<Outcome, Failure> {
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
pub(super) fn apply_progress(job: &Job, mut c: Call, progress: Progress) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let mut notes = Notes::default();
    let ended = events::apply_events(biz, &mut c, progress.events, &mut notes)?;
    c.memo = Some(progress.memo);
    // A carrier that hears in turns: its posts the step has not answered.
    let posted = heard::latest(biz, &c.id)?;
    let driven = !posted.is_empty();
    let waiting: Vec<&heard::Posted> = posted.iter().filter(|p| p.waiting()).collect();
    let mut answers: Vec<Answer> = Vec::new();
    // The assistant's move, unless the call has ended.
    if ended.is_none() {
        events::apply_posts(&mut c, &posted, &waiting, &mut notes);
        if c.carrier_state == CarrierState::Placed {
            assistant::act(biz, &mut c, &mut notes.turns, &waiting, driven, &mut answers)?;
        }
        assistant::listen_again(&c, &waiting, &mut answers);
    }
    // An ended call that connected: does the carrier have its recording?
    let recording_ext = match &ended {
        Some(end) if end.connected_ms > 0 => match carrier::recording(&placement::of(&c), c.memo.as_deref().unwrap_or_default(), 0, 0) {
            Ok(piece) if piece.extension == "wav" || piece.extension == "opus" => Some(piece.extension),
            _ => None,
        },
        _ => None,
    };
    // Every remote call is behind us: write the step.
    write_step(biz, &c, &notes, &answers)?;
    if let Some(end) = ended {
        end_call(biz, &mut c, end, driven, recording_ext)?;
        return Ok(Outcome::Done);
    }
    Ok(again(progress.check_after_ms.unwrap_or(MAX_POLL_MS).min(MAX_POLL_MS), job))
}

/// Writes the step: its turns and the posts' answers, and the call. An
/// operator's cancel may have committed since this step read the call (a
/// step that calls out reads before it takes the write lock): its
/// `cancelling` and its intent are kept, never overwritten by this step's
/// older copy.
fn write_step(biz: &str, c: &Call, notes: &Notes, answers: &[Answer]) -> Result<(), Failure> {
    write_turns(biz, &c.id, &notes.turns, &notes.offsets)?;
    for (turn, answer) in answers {
        heard::answer(biz, &c.id, *turn, answer)?;
    }
    db::execute(
        "UPDATE calls SET status = CASE WHEN status = 'cancelling' THEN status ELSE ?3 END, memo = ?4, greeting_played = ?5, played = ?6, awaiting_reply = ?7, \
                          last_activity_ms = ?8, nudged = ?9, answered_ms = ?10, utterances = ?11, \
                          end_intent = CASE WHEN end_intent = 'operator' THEN end_intent ELSE ?12 END, hangup_sent = ?13, \
                          ringing_at = IFNULL(ringing_at, ?14), started_at = IFNULL(started_at, ?15), interrupted_percent = ?16 \
         WHERE business_id = ?1 AND id = ?2",
        &params![
            biz,
            &c.id,
            c.status.as_str(),
            c.memo.as_deref(),
            c.greeting_played,
            c.played,
            c.awaiting_reply,
            c.last_activity_ms,
            c.nudged,
            c.answered_ms,
            c.utterances,
            c.end_intent.map(EndIntent::as_str),
            c.hangup_sent,
            notes.ringing_at.as_deref(),
            notes.started_at.as_deref(),
            c.interrupted,
        ],
    )?;
    Ok(())
}

/// The call ended as the carrier reported: its terminal status by the
/// intent as it stands now, and everything an end writes (`ending.rs`).
fn end_call(biz: &str, c: &mut Call, end: carrier::Ended, driven: bool, recording_ext: Option<String>) -> Result<(), Failure> {
    // Read inside the step's write transaction: the intent as it stands.
    if let Some(intent) = db::query_one_as::<Option<String>>("SELECT end_intent FROM calls WHERE business_id = ?1 AND id = ?2", &params![biz, &c.id])? {
        c.end_intent = intent.as_deref().and_then(EndIntent::parse).or(c.end_intent);
    }
    // A carrier that hears in turns hangs up after an `end_call`
    // answer on its own: that hang-up is the agent's.
    let cause = match end.cause {
        EndCause::CustomerHungUp | EndCause::Completed if driven && c.end_intent == Some(EndIntent::Agent) => EndCause::AgentHungUp,
        cause => cause,
    };
    let (status, ended_by, reason) = classify(c.end_intent, cause);
    finish(biz, c, Ending { status, ended_by, reason, connected_ms: end.connected_ms, attempt_cost: end.attempt_cost_microcredits, recording_ext })
}
