//! The sandbox carrier's call timelines, tested: destination rules, a
//! conversation, calls that never connect, a carrier that is down or timed
//! out, hang-ups, the recording, and events reported once.

use super::*;

const T0: i64 = 1_000_000;
const S: i64 = 20;

fn call(destination: &str) -> Call {
    Call { rule: Rule::of(destination), requested_at_ms: T0, step_ms: S, max_duration_seconds: 300 }
}

/// Polls at every step until the call ends (bounded); `on_step` may say
/// things or hang up at a given step.
fn run(c: &Call, mut on_step: impl FnMut(i64, Memo, &[(i64, Event)]) -> Memo) -> Vec<Event> {
    let mut memo = Memo::default();
    let mut all = Vec::new();
    for step in 0..200 {
        let now = T0 + step * S;
        let (fresh, next, check) = poll(c, Memo::decode(&memo.encode()).unwrap(), now);
        memo = on_step(now, next, &fresh);
        all.extend(fresh.into_iter().map(|(_, e)| e));
        if check.is_none() {
            return all;
        }
    }
    panic!("the call never ended: {all:?}");
}

fn end(events: &[Event]) -> (Cause, u64, u64) {
    match events.last() {
        Some(Event::Ended { cause, connected_ms, attempt_cost }) => (*cause, *connected_ms, *attempt_cost),
        other => panic!("not ended: {other:?}"),
    }
}

/// The host's side of a conversation: a greeting once answered, a reply
/// to each customer line, `end-call` after the goodbye.
fn converse(now: i64, mut memo: Memo, fresh: &[(i64, Event)]) -> Memo {
    for (_, e) in fresh {
        match e {
            Event::Answered => memo = say(memo, "u0".into(), "Hello, this is Ada from Acme.".into(), false, now),
            Event::CustomerSaid { text, .. } => {
                let n = memo.said.len();
                memo = say(memo, format!("u{n}"), format!("Reply {n}"), text.contains("Goodbye"), now);
            }
            _ => {}
        }
    }
    memo
}

#[test]
fn destination_rules() {
    assert_eq!(Rule::of("+15550000000"), Rule::Rejected);
    assert_eq!(Rule::of("+15550004444"), Rule::PlacementTimeout);
    assert_eq!(Rule::of("+15550008888"), Rule::BargesIn);
    assert_eq!(Rule::of("+15550001234"), Rule::Conversation);
    assert_eq!(Rule::of("7"), Rule::Conversation);
    assert_eq!(step_delay(None), 20);
    assert_eq!(step_delay(Some("0")), 0);
    assert_eq!(step_delay(Some("x")), 20);
    assert_eq!(step_delay(Some("99999999")), MAX_STEP_DELAY_MS);
}

#[test]
fn a_conversation_ends_completed_with_realistic_audio() {
    let c = call("+15550001234");
    assert_eq!(place(&c), Ok(()));
    let events = run(&c, converse);
    assert_eq!(events[..2], [Event::Ringing, Event::Answered]);
    let said: Vec<&str> = events.iter().filter_map(|e| if let Event::CustomerSaid { text, .. } = e { Some(text.as_str()) } else { None }).collect();
    assert_eq!(said, CUSTOMER_SCRIPT);
    // Receipts at 50 and 100% for each of the four utterances.
    assert_eq!(events.iter().filter(|e| matches!(e, Event::Played { .. })).count(), 8);
    let (cause, connected, cost) = end(&events);
    assert_eq!((cause, cost), (Cause::Completed, 0));
    // Greeting 29 chars (1740 ms), three replies at the 800 ms minimum,
    // the three customer lines with their pauses, and the tail.
    let customer: u64 = CUSTOMER_SCRIPT.iter().map(|t| audio_ms(t, MIN_CUSTOMER_MS) + 2 * PAUSE_MS).sum();
    assert_eq!(connected, 1740 + 3 * 800 + customer + HANGUP_TAIL_MS);
    // Offsets rise.
    let offsets: Vec<(u64, u64)> = events.iter().filter_map(|e| if let Event::CustomerSaid { offset_ms, end_offset_ms, .. } = e { Some((*offset_ms, *end_offset_ms)) } else { None }).collect();
    assert!(offsets.windows(2).all(|w| w[0].1 < w[1].0), "{offsets:?}");
}

#[test]
fn calls_that_never_connect() {
    assert_eq!(end(&run(&call("+15550000000"), |_, m, _| m)), (Cause::Rejected, 0, 0));
    assert_eq!(end(&run(&call("+15550002222"), |_, m, _| m)), (Cause::Busy, 0, 0));
    let no_answer = run(&call("+15550001111"), |_, m, _| m);
    assert_eq!((no_answer[0].clone(), end(&no_answer)), (Event::Ringing, (Cause::NoAnswer, 0, 0)));
    assert_eq!(end(&run(&call("+15550005555"), |_, m, _| m)), (Cause::CarrierFailure, 0, FAILED_ATTEMPT_COST));
}

#[test]
fn a_carrier_that_is_down_places_nothing() {
    let c = call("+15550003333");
    assert!(place(&c).is_err_and(|e| e.retryable && e.code == "carrier_unavailable"));
    assert!(reconcile(&c, None).is_err_and(|e| e.code == "unknown_call"));
}

#[test]
fn a_placement_that_timed_out_is_found_by_our_call_id_and_goes_on() {
    let c = call("+15550004444");
    assert!(place(&c).is_err_and(|e| e.retryable && e.code == "placement_timeout"));
    let memo = reconcile(&c, None).unwrap();
    let (events, _, _) = poll(&c, memo, T0 + 2 * S);
    assert_eq!(events.into_iter().map(|(_, e)| e).collect::<Vec<_>>(), [Event::Ringing, Event::Answered]);
    assert_eq!(end(&run(&c, converse)).0, Cause::Completed);
}

#[test]
fn hang_ups_and_the_longest_call() {
    // Connected and silent: ends at its maximum duration.
    assert_eq!(end(&run(&call("+15550006666"), |_, m, _| m)), (Cause::MaxDuration, 300_000, 0));
    // An operator's hang-up ends it first; a second one changes nothing.
    let events = run(&call("+15550006666"), |now, m, _| if now >= T0 + 3 * S { hang_up(hang_up(m, now), now + 5) } else { m });
    assert_eq!(end(&events).0, Cause::OperatorHungUp);
    // Before an answer: nothing connected.
    let events = run(&call("+15550001234"), |now, m, _| if now == T0 { hang_up(m, now) } else { m });
    assert_eq!(end(&events), (Cause::OperatorHungUp, 0, 0));
    // The customer hangs up halfway through the greeting.
    let events = run(&call("+15550007777"), converse);
    let (cause, connected, _) = end(&events);
    assert_eq!(cause, Cause::CustomerHungUp);
    assert_eq!(connected, 1740 / 2 + HANGUP_TAIL_MS);
    assert!(events.iter().any(|e| matches!(e, Event::Played { utterance_id, percent: 50, .. } if utterance_id == "u0")));
    assert!(!events.iter().any(|e| matches!(e, Event::Played { percent: 100, .. })));
}

#[test]
fn an_ended_call_has_a_wav_recording_of_its_connected_time() {
    let c = call("+15550001234");
    let mut memo = Memo::default();
    let events = run(&c, |now, m, fresh| {
        let m = converse(now, m, fresh);
        memo = m.clone();
        m
    });
    let (_, connected, _) = end(&events);
    let (total, head) = recording(&c, &memo, 0, 64).unwrap();
    assert_eq!(total, 44 + connected * 8 * 2);
    assert_eq!(&head[..4], b"RIFF");
    assert_eq!(&head[8..16], b"WAVEfmt ");
    assert_eq!(u32::from_le_bytes(head[40..44].try_into().unwrap()) as u64, total - 44);
    // Pieces put together are the whole file.
    let (_, whole) = recording(&c, &memo, 0, u64::MAX).unwrap();
    let (_, tail) = recording(&c, &memo, 1000, 5000).unwrap();
    assert_eq!(&whole[1000..6000], &tail[..]);
    assert!(whole[44..].iter().any(|b| *b != 0), "speech is audible");
    // Nothing connected, or not ended: no recording.
    assert!(recording(&call("+15550002222"), &Memo::default(), 0, 10).is_none());
    assert!(recording(&c, &Memo::default(), 0, 10).is_none());
}

#[test]
fn events_are_reported_once_and_the_memo_round_trips() {
    let c = call("+15550001234");
    let (first, memo, _) = poll(&c, Memo::default(), T0 + 2 * S);
    assert_eq!(first.len(), 2);
    let (again, memo, check) = poll(&c, Memo::decode(&memo.encode()).unwrap(), T0 + 2 * S);
    assert!(again.is_empty());
    assert_eq!(check, Some(S as u64));
    let memo = say(say(memo, "u0".into(), "Hi".into(), false, T0 + 2 * S), "u0".into(), "Hi".into(), false, T0 + 2 * S);
    assert_eq!(memo.said.len(), 1, "a repeated utterance id is said once");
    assert!(reconcile(&c, Some("not a memo")).is_err_and(|e| !e.retryable));
}
