//! The simulated call, as pure functions of the placement, the memo and
//! the time: what the carrier reports, and when. See the crate docs for the
//! rules.

use serde::{Deserialize, Serialize};

/// The default and largest `step-delay-ms`.
pub const DEFAULT_STEP_DELAY_MS: u64 = 20;
pub const MAX_STEP_DELAY_MS: u64 = 60_000;
/// What a `5555` attempt costs.
pub const FAILED_ATTEMPT_COST: u64 = 15_000;
/// The customer's lines of a conversation, one after each of the first
/// three utterances.
pub const CUSTOMER_SCRIPT: [&str; 3] = ["Hi, yes, this is me.", "What are your prices?", "Thanks, that's all. Goodbye."];
/// How many steps a `6666` call stays connected before it reports its
/// maximum duration (2 s at the default step).
pub const STAYS_CONNECTED_STEPS: i64 = 100;
/// What an `8888` customer says over the greeting.
pub const BARGE_IN: &str = "Hello? Who is this?";
const MS_PER_CHAR: u64 = 60;
const MIN_UTTERANCE_MS: u64 = 800;
const MIN_CUSTOMER_MS: u64 = 600;
const PAUSE_MS: u64 = 400;
const HANGUP_TAIL_MS: u64 = 1_000;

/// `step-delay-ms` as configured, clamped; the default when unset or invalid.
pub fn step_delay(setting: Option<&str>) -> u64 {
    setting.and_then(|s| s.trim().parse::<u64>().ok()).map_or(DEFAULT_STEP_DELAY_MS, |d| d.min(MAX_STEP_DELAY_MS))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Rejected,
    NoAnswer,
    Busy,
    Down,
    PlacementTimeout,
    FailsWithCost,
    StaysConnected,
    HangsUpInGreeting,
    BargesIn,
    /// As `BargesIn`, the speech reported a poll after the receipts of the
    /// utterance it was spoken over.
    BargesInLate,
    Conversation,
}

impl Rule {
    /// The rule of a destination: its last four characters.
    pub fn of(destination: &str) -> Rule {
        let tail = destination.get(destination.len().saturating_sub(4)..).unwrap_or("");
        match tail {
            "0000" => Rule::Rejected,
            "1111" => Rule::NoAnswer,
            "2222" => Rule::Busy,
            "3333" => Rule::Down,
            "4444" => Rule::PlacementTimeout,
            "5555" => Rule::FailsWithCost,
            "6666" => Rule::StaysConnected,
            "7777" => Rule::HangsUpInGreeting,
            "8888" => Rule::BargesIn,
            "9999" => Rule::BargesInLate,
            _ => Rule::Conversation,
        }
    }

    fn answers(self) -> bool {
        matches!(self, Rule::PlacementTimeout | Rule::StaysConnected | Rule::HangsUpInGreeting | Rule::BargesIn | Rule::BargesInLate | Rule::Conversation)
    }
}

/// One call, from its placement.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub rule: Rule,
    /// When the placement was first requested: the call's time zero.
    pub requested_at_ms: i64,
    pub step_ms: i64,
    pub max_duration_seconds: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    Completed,
    NoAnswer,
    Busy,
    Rejected,
    CustomerHungUp,
    OperatorHungUp,
    MaxDuration,
    CarrierFailure,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Ringing,
    Answered,
    /// `offset_ms`..`end_offset_ms`: the utterance's place in the call audio.
    Played {
        utterance_id: String,
        percent: u8,
        offset_ms: u64,
        end_offset_ms: u64,
    },
    CustomerSaid {
        text: String,
        offset_ms: u64,
        end_offset_ms: u64,
    },
    Ended {
        cause: Cause,
        connected_ms: u64,
        attempt_cost: u64,
    },
}

/// An utterance the host asked the carrier to say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Said {
    pub id: String,
    pub text: String,
    pub at_ms: i64,
    pub end_call: bool,
}

/// The simulated call's memory, carried by the host between calls.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memo {
    /// How many events were reported already.
    pub reported: usize,
    pub said: Vec<Said>,
    pub hung_up_at_ms: Option<i64>,
}

impl Memo {
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a memo serialises")
    }
    pub fn decode(s: &str) -> Option<Memo> {
        serde_json::from_str(s).ok()
    }
}

/// Why the carrier refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    pub code: &'static str,
    pub message: &'static str,
    pub retryable: bool,
}

/// Placement: `3333` is down; `4444` times out although the call exists.
pub fn place(call: &Call) -> Result<(), Refusal> {
    match call.rule {
        Rule::Down => Err(Refusal { code: "carrier_unavailable", message: "the carrier is not answering; try again later", retryable: true }),
        Rule::PlacementTimeout => Err(Refusal { code: "placement_timeout", message: "the placement timed out; its outcome is unknown", retryable: true }),
        _ => Ok(()),
    }
}

/// The memo to go on from: the given one, or, without one (a placement
/// whose outcome is unknown), the call as the carrier has it by our call
/// id; `3333` never placed anything.
pub fn reconcile(call: &Call, memo: Option<&str>) -> Result<Memo, Refusal> {
    match memo {
        Some(m) => Memo::decode(m).ok_or(Refusal { code: "invalid_memo", message: "the call's memo is not one this carrier wrote", retryable: false }),
        None if call.rule == Rule::Down => Err(Refusal { code: "unknown_call", message: "the carrier has no call under this id", retryable: false }),
        None => Ok(Memo::default()),
    }
}

/// Queues an utterance (a repeated id is said once).
pub fn say(mut memo: Memo, id: String, text: String, end_call: bool, now_ms: i64) -> Memo {
    if !memo.said.iter().any(|s| s.id == id) {
        memo.said.push(Said { id, text, at_ms: now_ms, end_call });
    }
    memo
}

/// An operator's hang-up (the first one counts).
pub fn hang_up(mut memo: Memo, now_ms: i64) -> Memo {
    memo.hung_up_at_ms.get_or_insert(now_ms);
    memo
}

fn audio_ms(text: &str, min: u64) -> u64 {
    (text.chars().count() as u64 * MS_PER_CHAR).max(min)
}

/// Every event of the call as things stand, in time order (some may lie in
/// the future).
pub fn timeline(call: &Call, memo: &Memo) -> Vec<(i64, Event)> {
    let (t0, s) = (call.requested_at_ms, call.step_ms.max(1));
    let hang = memo.hung_up_at_ms;
    let ended = |cause, connected_ms, attempt_cost| Event::Ended { cause, connected_ms, attempt_cost };
    let mut ev = Vec::new();
    // Before an answer, an operator's hang-up ends the call with nothing connected.
    let hung_before = |t: i64| hang.is_some_and(|h| h < t);
    match call.rule {
        Rule::Down => return ev,
        Rule::Rejected => ev.push((t0 + s, ended(Cause::Rejected, 0, 0))),
        Rule::Busy => ev.push((t0 + s, ended(Cause::Busy, 0, 0))),
        Rule::NoAnswer | Rule::FailsWithCost => {
            ev.push((t0 + s, Event::Ringing));
            let (end_at, end) = match call.rule {
                Rule::NoAnswer => (t0 + 4 * s, ended(Cause::NoAnswer, 0, 0)),
                _ => (t0 + 2 * s, ended(Cause::CarrierFailure, 0, FAILED_ATTEMPT_COST)),
            };
            match hang {
                Some(h) if h < end_at => ev.push((h.max(t0 + s) + s, ended(Cause::OperatorHungUp, 0, 0))),
                _ => ev.push((end_at, end)),
            }
        }
        rule => {
            debug_assert!(rule.answers());
            ev.push((t0 + s, Event::Ringing));
            let answered_at = t0 + 2 * s;
            if let Some(h) = hang.filter(|_| hung_before(answered_at)) {
                ev.push((h.max(t0 + s) + s, ended(Cause::OperatorHungUp, 0, 0)));
                return ev;
            }
            ev.push((answered_at, Event::Answered));
            let mut free_at = answered_at; // real time the line is free to play
            let mut sim: u64 = 0; // call audio since the answer
            for (i, u) in memo.said.iter().enumerate() {
                let start = free_at.max(u.at_ms);
                if hung_before(start) {
                    break;
                }
                let dur = audio_ms(&u.text, MIN_UTTERANCE_MS);
                let (offset_ms, end_offset_ms) = (sim, sim + dur);
                ev.push((start + s / 2, Event::Played { utterance_id: u.id.clone(), percent: 50, offset_ms, end_offset_ms }));
                if rule == Rule::HangsUpInGreeting && i == 0 {
                    ev.push((start + s / 2, ended(Cause::CustomerHungUp, sim + dur / 2 + HANGUP_TAIL_MS, 0)));
                    return ev;
                }
                if rule == Rule::BargesIn && i == 0 {
                    // Spoken over the greeting's second half.
                    let offset = sim + dur / 2;
                    let end = offset + audio_ms(BARGE_IN, MIN_CUSTOMER_MS);
                    ev.push((start + s / 2, Event::CustomerSaid { text: BARGE_IN.to_string(), offset_ms: offset, end_offset_ms: end }));
                }
                ev.push((start + s, Event::Played { utterance_id: u.id.clone(), percent: 100, offset_ms, end_offset_ms }));
                if rule == Rule::BargesInLate && i == 0 {
                    // Spoken over the greeting's second half, reported after
                    // its receipts ([`poll`] holds it for the next poll).
                    let offset = sim + dur / 2;
                    let end = offset + audio_ms(BARGE_IN, MIN_CUSTOMER_MS);
                    ev.push((start + s, Event::CustomerSaid { text: BARGE_IN.to_string(), offset_ms: offset, end_offset_ms: end }));
                }
                sim += dur;
                free_at = start + s;
                if u.end_call {
                    ev.push((free_at, ended(Cause::Completed, sim + HANGUP_TAIL_MS, 0)));
                    return ev;
                }
                let line = match rule {
                    Rule::Conversation | Rule::PlacementTimeout | Rule::BargesIn | Rule::BargesInLate => CUSTOMER_SCRIPT.get(i),
                    _ => None,
                };
                if let Some(text) = line {
                    if hung_before(free_at + s) {
                        break;
                    }
                    let d = audio_ms(text, MIN_CUSTOMER_MS);
                    let offset = sim + PAUSE_MS;
                    ev.push((free_at + s, Event::CustomerSaid { text: text.to_string(), offset_ms: offset, end_offset_ms: offset + d }));
                    sim = offset + d + PAUSE_MS;
                    free_at += s;
                }
            }
            let max_at = answered_at + STAYS_CONNECTED_STEPS * s;
            match hang {
                Some(h) => ev.push((h.max(free_at) + s, ended(Cause::OperatorHungUp, sim + HANGUP_TAIL_MS, 0))),
                None if rule == Rule::StaysConnected => ev.push((max_at, ended(Cause::MaxDuration, u64::from(call.max_duration_seconds) * 1000, 0))),
                None => {}
            }
        }
    }
    ev.sort_by_key(|(at, _)| *at);
    ev
}

/// The recording's sample rate (8 kHz, 16-bit mono PCM in a WAV file).
pub const SAMPLE_RATE: u64 = 8_000;
const WAV_HEADER: u64 = 44;

/// The recording of an ended call that connected: its total size and the
/// bytes in `offset..offset + max`. Assistant speech is a 330 Hz tone,
/// customer speech 220 Hz, the rest silence, so a player shows the turns
/// where the transcript puts them. `None` for a call that never connected
/// or has not ended.
pub fn recording(call: &Call, memo: &Memo, offset: u64, max: u64) -> Option<(u64, Vec<u8>)> {
    let events = timeline(call, memo);
    let connected_ms = events.iter().find_map(|(_, e)| match e {
        Event::Ended { connected_ms, .. } => Some(*connected_ms),
        _ => None,
    })?;
    if connected_ms == 0 {
        return None;
    }
    let mut spans: Vec<(u64, u64, f64)> = Vec::new();
    for (_, e) in &events {
        match e {
            Event::Played { percent: 100, offset_ms, end_offset_ms, .. } => spans.push((*offset_ms, *end_offset_ms, 330.0)),
            Event::CustomerSaid { offset_ms, end_offset_ms, .. } => spans.push((*offset_ms, *end_offset_ms, 220.0)),
            _ => {}
        }
    }
    let samples = connected_ms * SAMPLE_RATE / 1000;
    let data_len = samples * 2;
    let total = WAV_HEADER + data_len;
    let mut header = Vec::with_capacity(WAV_HEADER as usize);
    header.extend_from_slice(b"RIFF");
    header.extend_from_slice(&((total - 8) as u32).to_le_bytes());
    header.extend_from_slice(b"WAVEfmt ");
    header.extend_from_slice(&16u32.to_le_bytes());
    header.extend_from_slice(&1u16.to_le_bytes()); // PCM
    header.extend_from_slice(&1u16.to_le_bytes()); // mono
    header.extend_from_slice(&(SAMPLE_RATE as u32).to_le_bytes());
    header.extend_from_slice(&((SAMPLE_RATE * 2) as u32).to_le_bytes());
    header.extend_from_slice(&2u16.to_le_bytes());
    header.extend_from_slice(&16u16.to_le_bytes());
    header.extend_from_slice(b"data");
    header.extend_from_slice(&(data_len as u32).to_le_bytes());
    let end = total.min(offset.saturating_add(max));
    let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
    let mut i = offset;
    while i < end {
        if i < WAV_HEADER {
            out.push(header[i as usize]);
        } else {
            let n = (i - WAV_HEADER) / 2;
            let ms = n * 1000 / SAMPLE_RATE;
            let value = spans.iter().find(|(a, b, _)| (*a..*b).contains(&ms)).map_or(0i16, |(_, _, hz)| (3000.0 * (2.0 * std::f64::consts::PI * hz * n as f64 / SAMPLE_RATE as f64).sin()) as i16);
            out.push(value.to_le_bytes()[((i - WAV_HEADER) % 2) as usize]);
        }
        i += 1;
    }
    Some((total, out))
}

/// The events due by `now` that were not reported yet, the memo that
/// remembers them, and when to ask again (none once ended).
pub fn poll(call: &Call, mut memo: Memo, now_ms: i64) -> (Vec<(i64, Event)>, Memo, Option<u64>) {
    let due: Vec<(i64, Event)> = timeline(call, &memo).into_iter().take_while(|(at, _)| *at <= now_ms).collect();
    let ended = due.iter().any(|(_, e)| matches!(e, Event::Ended { .. }));
    let mut fresh = due.into_iter().skip(memo.reported).collect::<Vec<_>>();
    // A late barge-in comes in a poll of its own, after the receipts.
    if call.rule == Rule::BargesInLate {
        let late = fresh.iter().position(|(_, e)| matches!(e, Event::CustomerSaid { text, .. } if text == BARGE_IN));
        if let Some(at) = late.filter(|at| fresh[..*at].iter().any(|(_, e)| matches!(e, Event::Played { .. }))) {
            fresh.truncate(at);
        }
    }
    memo.reported += fresh.len();
    (fresh, memo, (!ended).then_some(call.step_ms.max(1) as u64))
}

#[cfg(test)]
mod tests;
