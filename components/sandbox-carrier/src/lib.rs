//! The sandbox carrier: the default behind the `carrier` interface
//! (wit/carrier.wit) once the voice area links it (issue 12). It talks to
//! no network; it answers like a carrier would, deterministically, on rules
//! of the destination number, and keeps the whole simulated call in the
//! memo the host stores with the call, so it needs no store of its own.
//!
//! Destination rules (the last four digits):
//! * `0000`: rejected by the carrier (`ended: rejected`, no attempt cost);
//! * `1111`: rings, never answered (`no-answer`);
//! * `2222`: `busy`;
//! * `3333`: the carrier is down: `place` fails with `carrier_unavailable`
//!   (retryable) and nothing is placed;
//! * `4444`: `place` answers `placement_timeout` (retryable, outcome
//!   unknown) although the call *was* placed: `poll` without a memo finds
//!   it by our call id and it goes on like a conversation; placing it again
//!   returns the same call;
//! * `5555`: fails after ringing with an attempt cost of 15,000
//!   microcredits (`carrier-failure`);
//! * `6666`: answered, the customer never speaks: it stays connected until
//!   a hang-up, or reports `max-duration` (connected for the whole
//!   maximum duration) [`timeline::STAYS_CONNECTED_STEPS`] steps after the answer;
//! * `7777`: the customer hangs up halfway through the first utterance;
//! * `8888`: the customer speaks over the first utterance ("Hello? Who is
//!   this?", reported at its 50% receipt), then talks like a conversation;
//! * `9999`: as `8888`, the speech reported in a poll after the one that
//!   reports the utterance's receipts;
//! * anything else: a conversation. The customer speaks one step after
//!   each of the first three utterances has played ("Hi, yes, this is
//!   me." / "What are your prices?" / "Thanks, that's all. Goodbye."),
//!   then stays silent; an utterance said with `end-call` ends the call
//!   (`completed`) once it has played.
//!
//! Recordings: an ended call that connected has a WAV recording of its
//! connected time (8 kHz, 16-bit mono): assistant speech is a 330 Hz tone,
//! customer speech 220 Hz, the rest silence.
//!
//! Time: events happen on a real clock in steps of `step-delay-ms`
//! (setting, default 20) after the placement was first requested: ringing
//! after one step, answered after two; an utterance plays for one step
//! (receipts at 50% and 100%). The *reported* audio is realistic: 60 ms per
//! character of an utterance or a customer turn (at least 800 ms and 600
//! ms), 400 ms pauses between turns; the connected duration is the audio
//! up to the end plus one second.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

#[cfg(target_arch = "wasm32")]
mod bindings {
    wit_bindgen::generate!({ world: "carrier-provider", path: "../../kit/wit" });
}

pub mod timeline;

#[cfg(target_arch = "wasm32")]
mod export {
    use super::bindings::exports::switchboard::provider::carrier::{CallEvent, CarrierError, EndCause, Ended, Guest, Placement, Playback, Progress, RecordingPiece, Speech, TimedEvent};
    use super::bindings::switchboard::provider::{clock, settings};
    use super::timeline::{self, Call, Event, Memo, Rule};

    fn error(e: timeline::Refusal) -> CarrierError {
        CarrierError { code: e.code.into(), message: e.message.into(), retryable: e.retryable }
    }

    fn call_of(p: &Placement) -> Call {
        Call {
            rule: Rule::of(&p.destination),
            requested_at_ms: p.requested_at_ms,
            step_ms: timeline::step_delay(settings::get("step-delay-ms").as_deref()) as i64,
            max_duration_seconds: p.max_duration_seconds,
        }
    }

    fn cause(c: timeline::Cause) -> EndCause {
        use timeline::Cause::*;
        match c {
            Completed => EndCause::Completed,
            NoAnswer => EndCause::NoAnswer,
            Busy => EndCause::Busy,
            Rejected => EndCause::Rejected,
            CustomerHungUp => EndCause::CustomerHungUp,
            OperatorHungUp => EndCause::OperatorHungUp,
            MaxDuration => EndCause::MaxDuration,
            CarrierFailure => EndCause::CarrierFailure,
        }
    }

    fn progress(call: &Call, memo: Memo) -> Progress {
        let (events, memo, check_after) = timeline::poll(call, memo, clock::now_ms());
        Progress {
            events: events
                .into_iter()
                .map(|(at_ms, e)| TimedEvent {
                    at_ms,
                    event: match e {
                        Event::Ringing => CallEvent::Ringing,
                        Event::Answered => CallEvent::Answered,
                        Event::Played { utterance_id, percent, offset_ms, end_offset_ms } => {
                            CallEvent::Played(Playback { utterance_id, played_percent: percent, audio_offset_ms: offset_ms, audio_end_offset_ms: end_offset_ms })
                        }
                        Event::CustomerSaid { text, offset_ms, end_offset_ms } => CallEvent::CustomerSaid(Speech { text, audio_offset_ms: offset_ms, audio_end_offset_ms: end_offset_ms }),
                        Event::Ended { cause: c, connected_ms, attempt_cost } => CallEvent::Ended(Ended { cause: cause(c), connected_ms, attempt_cost_microcredits: attempt_cost }),
                    },
                })
                .collect(),
            memo: memo.encode(),
            check_after_ms: check_after,
        }
    }

    struct Sandbox;

    impl Guest for Sandbox {
        fn place(p: Placement) -> Result<Progress, CarrierError> {
            let call = call_of(&p);
            timeline::place(&call).map_err(error)?;
            Ok(progress(&call, Memo::default()))
        }

        fn poll(p: Placement, memo: Option<String>) -> Result<Progress, CarrierError> {
            let call = call_of(&p);
            let memo = timeline::reconcile(&call, memo.as_deref()).map_err(error)?;
            Ok(progress(&call, memo))
        }

        fn say(p: Placement, memo: String, utterance_id: String, text: String, end_call: bool) -> Result<String, CarrierError> {
            let call = call_of(&p);
            let memo = timeline::reconcile(&call, Some(&memo)).map_err(error)?;
            Ok(timeline::say(memo, utterance_id, text, end_call, clock::now_ms()).encode())
        }

        fn hang_up(p: Placement, memo: Option<String>) -> Result<String, CarrierError> {
            let call = call_of(&p);
            let memo = timeline::reconcile(&call, memo.as_deref()).map_err(error)?;
            Ok(timeline::hang_up(memo, clock::now_ms()).encode())
        }

        fn recording(p: Placement, memo: String, offset: u64, max_bytes: u32) -> Result<RecordingPiece, CarrierError> {
            let call = call_of(&p);
            let memo = timeline::reconcile(&call, Some(&memo)).map_err(error)?;
            let (total_bytes, bytes) = timeline::recording(&call, &memo, offset, u64::from(max_bytes)).ok_or_else(|| CarrierError {
                code: "no_recording".into(),
                message: "the call has no recording (it never connected or has not ended)".into(),
                retryable: false,
            })?;
            Ok(RecordingPiece { mime_type: "audio/wav".into(), extension: "wav".into(), total_bytes, bytes })
        }
    }

    super::bindings::export!(Sandbox with_types_in super::bindings);
}
