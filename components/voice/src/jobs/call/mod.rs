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
use switchboard_guest::db;
use switchboard_guest::job::{retry, run_step};
use switchboard_guest::job_types::{Continuation, Job, Outcome};
use switchboard_guest::jobs::{self, EffectStart};
use switchboard_guest::{clock, log, now, params, time, timeline, Failure};
use switchboard_sql::{Columns, FromRow, Mismatch, Row};

use crate::billing;
use crate::conversation::{self, Conversation, Next};
use crate::model::{self, duration_seconds, CallStatus, CarrierState, EndIntent};

mod assistant;
mod ending;
mod events;
mod heard;
mod placement;
mod placing;
mod progress;
mod turns;
pub mod wake;

pub use ending::append_timeline;
use ending::{classify, finish, finish_unplaced, Ending};
use placing::{lease, place, reconcile};
use progress::{apply_progress, converse};
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
     reserved, price_per_block, agent_id, variables_json, interrupted_percent, iteration_id";

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
    /// The campaign iteration that placed the call, if one did.
    iteration_id: Option<String>,
}

/// Read from [`COLUMNS`]; the id is not among them ([`load`] sets it).
impl FromRow for Call {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let mut r = Columns::new(row);
        Ok(Call {
            id: String::new(),
            // Text no version wrote reads as ended (failed) or placed: the
            // step then leaves the call alone or asks the carrier.
            status: CallStatus::parse(&r.read::<String>()?).unwrap_or(CallStatus::Failed),
            carrier_state: CarrierState::parse(&r.read::<String>()?).unwrap_or(CarrierState::Placed),
            placements: r.read()?,
            memo: r.read()?,
            requested_at_ms: r.read()?,
            callee: r.read()?,
            caller: r.read()?,
            settings: serde_json::from_str(&r.read::<String>()?).unwrap_or_default(),
            max_duration_s: r.read()?,
            end_intent: r.read::<Option<String>>()?.as_deref().and_then(EndIntent::parse),
            hangup_sent: r.read()?,
            greeting: r.read()?,
            utterances: r.read()?,
            played: r.read()?,
            greeting_played: r.read()?,
            awaiting_reply: r.read()?,
            last_activity_ms: r.read()?,
            nudged: r.read()?,
            answered_ms: r.read()?,
            reserved: r.read()?,
            price: r.read()?,
            agent_id: r.read()?,
            variables: serde_json::from_str(&r.read::<String>()?).unwrap_or_default(),
            interrupted: r.read()?,
            iteration_id: r.read()?,
        })
    }
}

fn load(biz: &str, id: &str) -> Result<Option<Call>, Failure> {
    Ok(db::query_one_as::<Call>(&format!("SELECT {COLUMNS} FROM calls WHERE business_id = ?1 AND id = ?2"), &params![biz, id])?.map(|c| Call { id: id.to_string(), ..c }))
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
