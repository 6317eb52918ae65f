//! Provider interface `carrier` (wit/carrier.wit): the network that places
//! voice calls. World `carrier-provider`; the embedded default is the
//! `sandbox-carrier` component, replaced by a real adapter with
//! `--component-override sandbox-carrier=FILE`. The host answers the
//! dispatcher's `carrier` import (the voice area's `voice.call` job) by
//! calling it in a small, bounded store of its own, like the messenger; a
//! trap becomes a retryable `carrier_unavailable`. Its settings come from
//! `--carrier-setting NAME=VALUE` and `SWITCHBOARD_CARRIER_<NAME>`.

use super::adapter::{CallLimits, Provider, Settings, SettingsFlag, Unavailable};
use super::adapters::{ProviderCall, ProviderImports, Providers};
use super::calls::{self, ProviderState};
use crate::engine::bindings::dispatcher_world::switchboard::provider::carrier as import;
use anyhow::Result;
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store};

mod world {
    crate::engine::providers::calls::provider_world!("switchboard:provider/carrier-provider");
}
/// The world of a carrier that calls back: the same imports, one more
/// export. A carrier plugin built for `carrier-provider` links as before;
/// one built for this world also gets its status callbacks.
mod hooks_world {
    crate::engine::providers::calls::provider_world!("switchboard:provider/carrier-webhooks-provider");
}
pub use hooks_world::exports::switchboard::provider::carrier_webhooks::{Heard, TurnAnswer};
use world::exports::switchboard::provider::carrier as provider;
#[cfg(test)]
pub use world::exports::switchboard::provider::carrier::{CallEvent, EndCause};
pub use world::exports::switchboard::provider::carrier::{CarrierError, Placement, Progress, RecordingPiece, VoiceProfile};

/// A linked carrier (embedded or a plugin).
pub struct Carrier {
    engine: Engine,
    pre: world::CarrierProviderPre<ProviderState>,
    /// When the component exports `carrier-webhooks`.
    hooks: Option<hooks_world::CarrierWebhooksProviderPre<ProviderState>>,
    limits: CallLimits,
}

impl Provider for Carrier {
    const NAME: &'static str = "carrier";
    const WORLD: &'static str = "carrier-provider";
    const COMPONENT: &'static str = "sandbox-carrier";
    const SETTINGS: Option<SettingsFlag> =
        Some(SettingsFlag { long: "carrier-setting", env_prefix: "SWITCHBOARD_CARRIER_", help: "A setting of the voice carrier component (also SWITCHBOARD_CARRIER_<NAME>); repeatable." });
    const TEMPLATE_SETTINGS: &'static [&'static str] = &["step-delay-ms"];

    fn link(engine: &Engine, component: &Component, limits: CallLimits) -> Result<Carrier> {
        let pre = calls::instance_pre(engine, component, &limits, |l| world::CarrierProvider::add_to_linker::<_, HasSelf<_>>(l, |s| s))?;
        let hooks = hooks_world::CarrierWebhooksProviderPre::new(pre.clone()).ok();
        Ok(Carrier { engine: engine.clone(), pre: world::CarrierProviderPre::new(pre)?, hooks, limits })
    }
}

/// Links the `carrier` import the areas and the dispatcher call; its host
/// side is on the call's [`ProviderCall`] (below).
pub fn add_to_linker<T: 'static>(linker: &mut Linker<T>, view: fn(&mut T) -> ProviderCall<'_>) -> Result<()> {
    Ok(import::add_to_linker::<T, ProviderImports>(linker, view)?)
}

impl Providers {
    /// The carrier that answers for `business`, with its settings.
    pub fn carrier_for(&self, conn: &crate::db::Connection, business: &str) -> Result<(Arc<Carrier>, Settings), Unavailable> {
        self.adapter_for::<Carrier>(conn, business)
    }
}

impl Carrier {
    /// Calls the carrier in a fresh, bounded store of its own.
    fn call<T>(&self, settings: &Settings, f: impl FnOnce(&provider::Guest, &mut Store<ProviderState>) -> wasmtime::Result<Result<T, CarrierError>>) -> Result<T, CarrierError> {
        let answer = calls::call(&self.engine, &self.limits, settings.clone(), "voice", |store, instantiated| {
            let instance = self.pre.instantiate(&mut *store)?;
            instantiated();
            f(instance.switchboard_provider_carrier(), store)
        });
        match answer {
            Ok(answer) => answer,
            Err(fault) => {
                let (code, message, retryable) = fault.error(&self.limits, "carrier_unavailable", "voice carrier");
                Err(CarrierError { code, message, retryable })
            }
        }
    }

    /// A status callback the carrier sent: our ids of the calls it is
    /// about, once the adapter checked its signature; `not_supported` when
    /// the adapter takes no callbacks.
    pub fn receive(&self, settings: &Settings, url: &str, headers: &[(String, String)], body: &[u8]) -> Result<Vec<String>, CarrierError> {
        let Some(hooks) = &self.hooks else {
            return Err(CarrierError { code: "not_supported".into(), message: "this carrier adapter takes no callbacks".into(), retryable: false });
        };
        let answer = calls::call(&self.engine, &self.limits, settings.clone(), "voice", |store, instantiated| {
            let instance = hooks.instantiate(&mut *store)?;
            instantiated();
            instance.switchboard_provider_carrier_webhooks().call_receive(store, url, headers, body)
        });
        match answer {
            Ok(Ok(ids)) => Ok(ids),
            Ok(Err(e)) => Err(CarrierError { code: e.code, message: e.message, retryable: e.retryable }),
            Err(fault) => {
                let (code, message, retryable) = fault.error(&self.limits, "carrier_unavailable", "voice carrier");
                Err(CarrierError { code, message, retryable })
            }
        }
    }

    /// A turn's post (`carrier-webhooks.hear`): the call, the turn and what
    /// the customer said, once the adapter checked its signature.
    pub fn hear(&self, settings: &Settings, url: &str, headers: &[(String, String)], body: &[u8]) -> Result<Heard, CarrierError> {
        self.hooks_call(settings, |hooks, store| hooks.call_hear(store, url, headers, body))
    }

    /// The document that answers a turn's post (`carrier-webhooks.answer`):
    /// its content type and body.
    pub fn answer(&self, settings: &Settings, answer: &TurnAnswer) -> Result<(String, String), CarrierError> {
        self.hooks_call(settings, |hooks, store| hooks.call_answer(store, answer))
    }

    fn hooks_call<T>(
        &self,
        settings: &Settings,
        f: impl FnOnce(
            &hooks_world::exports::switchboard::provider::carrier_webhooks::Guest,
            &mut Store<ProviderState>,
        ) -> wasmtime::Result<Result<T, hooks_world::exports::switchboard::provider::carrier::CarrierError>>,
    ) -> Result<T, CarrierError> {
        let Some(hooks) = &self.hooks else {
            return Err(CarrierError { code: "not_supported".into(), message: "this carrier adapter takes no callbacks".into(), retryable: false });
        };
        let answer = calls::call(&self.engine, &self.limits, settings.clone(), "voice", |store, instantiated| {
            let instance = hooks.instantiate(&mut *store)?;
            instantiated();
            f(instance.switchboard_provider_carrier_webhooks(), store)
        });
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(CarrierError { code: e.code, message: e.message, retryable: e.retryable }),
            Err(fault) => {
                let (code, message, retryable) = fault.error(&self.limits, "carrier_unavailable", "voice carrier");
                Err(CarrierError { code, message, retryable })
            }
        }
    }

    /// Whether the adapter exports `carrier-webhooks`.
    pub fn takes_callbacks(&self) -> bool {
        self.hooks.is_some()
    }

    pub fn place(&self, settings: &Settings, call: &Placement) -> Result<Progress, CarrierError> {
        self.call(settings, |g, s| g.call_place(s, call))
    }

    pub fn poll(&self, settings: &Settings, call: &Placement, memo: Option<&str>) -> Result<Progress, CarrierError> {
        self.call(settings, |g, s| g.call_poll(s, call, memo))
    }

    pub fn say(&self, settings: &Settings, call: &Placement, memo: &str, utterance_id: &str, text: &str, end_call: bool) -> Result<String, CarrierError> {
        self.call(settings, |g, s| g.call_say(s, call, memo, utterance_id, text, end_call))
    }

    pub fn hang_up(&self, settings: &Settings, call: &Placement, memo: Option<&str>) -> Result<String, CarrierError> {
        self.call(settings, |g, s| g.call_hang_up(s, call, memo))
    }

    /// A piece of an ended call's recording (served by `recordings.rs`).
    pub fn recording(&self, settings: &Settings, call: &Placement, memo: &str, offset: u64, max_bytes: u32) -> Result<RecordingPiece, CarrierError> {
        self.call(settings, |g, s| g.call_recording(s, call, memo, offset, max_bytes))
    }
}

// The import's types and the provider's are generated from one WIT file
// into two worlds; these move a value from one to the other.

fn placement(p: import::Placement) -> Placement {
    let v = p.voice;
    Placement {
        call_id: p.call_id,
        destination: p.destination,
        caller_number: p.caller_number,
        voice: provider::VoiceProfile {
            live_voice_id: v.live_voice_id,
            language: v.language,
            agent_gender: v.agent_gender,
            background_noise_key: v.background_noise_key,
            background_noise_level_percent: v.background_noise_level_percent,
        },
        max_duration_seconds: p.max_duration_seconds,
        requested_at_ms: p.requested_at_ms,
    }
}

fn error(e: CarrierError) -> import::CarrierError {
    import::CarrierError { code: e.code, message: e.message, retryable: e.retryable }
}

fn cause(c: provider::EndCause) -> import::EndCause {
    use import::EndCause as I;
    use provider::EndCause as P;
    match c {
        P::Completed => I::Completed,
        P::NoAnswer => I::NoAnswer,
        P::Busy => I::Busy,
        P::Rejected => I::Rejected,
        P::CustomerHungUp => I::CustomerHungUp,
        P::AgentHungUp => I::AgentHungUp,
        P::OperatorHungUp => I::OperatorHungUp,
        P::MaxDuration => I::MaxDuration,
        P::CarrierFailure => I::CarrierFailure,
    }
}

fn progress(p: Progress) -> import::Progress {
    use import::CallEvent as I;
    use provider::CallEvent as P;
    let events = p
        .events
        .into_iter()
        .map(|e| import::TimedEvent {
            at_ms: e.at_ms,
            event: match e.event {
                P::Ringing => I::Ringing,
                P::Answered => I::Answered,
                P::Played(x) => {
                    I::Played(import::Playback { utterance_id: x.utterance_id, played_percent: x.played_percent, audio_offset_ms: x.audio_offset_ms, audio_end_offset_ms: x.audio_end_offset_ms })
                }
                P::CustomerSaid(x) => I::CustomerSaid(import::Speech { text: x.text, audio_offset_ms: x.audio_offset_ms, audio_end_offset_ms: x.audio_end_offset_ms }),
                P::Ended(x) => I::Ended(import::Ended { cause: cause(x.cause), connected_ms: x.connected_ms, attempt_cost_microcredits: x.attempt_cost_microcredits }),
            },
        })
        .collect();
    import::Progress { events, memo: p.memo, check_after_ms: p.check_after_ms }
}

impl ProviderCall<'_> {
    /// The carrier of the business this call runs for.
    fn carrier(&self) -> Result<(Arc<Carrier>, Settings), import::CarrierError> {
        let conn = self.connection().map_err(|m| import::CarrierError { code: "prepare_refused".into(), message: m.into(), retryable: false })?;
        self.providers.carrier_for(conn, self.business_id).map_err(|u| {
            let (code, message, retryable) = u.describe("carrier");
            import::CarrierError { code, message, retryable }
        })
    }
}

/// `carrier`: the business's carrier answers.
impl import::Host for ProviderCall<'_> {
    fn place(&mut self, call: import::Placement) -> Result<import::Progress, import::CarrierError> {
        let (c, settings) = self.carrier()?;
        c.place(&settings, &placement(call)).map(progress).map_err(error)
    }

    fn poll(&mut self, call: import::Placement, memo: Option<String>) -> Result<import::Progress, import::CarrierError> {
        let (c, settings) = self.carrier()?;
        c.poll(&settings, &placement(call), memo.as_deref()).map(progress).map_err(error)
    }

    fn say(&mut self, call: import::Placement, memo: String, utterance_id: String, text: String, end_call: bool) -> Result<String, import::CarrierError> {
        let (c, settings) = self.carrier()?;
        c.say(&settings, &placement(call), &memo, &utterance_id, &text, end_call).map_err(error)
    }

    fn hang_up(&mut self, call: import::Placement, memo: Option<String>) -> Result<String, import::CarrierError> {
        let (c, settings) = self.carrier()?;
        c.hang_up(&settings, &placement(call), memo.as_deref()).map_err(error)
    }

    fn recording(&mut self, call: import::Placement, memo: String, offset: u64, max_bytes: u32) -> Result<import::RecordingPiece, import::CarrierError> {
        let (c, settings) = self.carrier()?;
        let p = c.recording(&settings, &placement(call), &memo, offset, max_bytes).map_err(error)?;
        Ok(import::RecordingPiece { mime_type: p.mime_type, extension: p.extension, total_bytes: p.total_bytes, bytes: p.bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded carrier with its settings.
    struct Sandbox(Carrier, Settings);

    impl Sandbox {
        fn place(&self, call: &Placement) -> Result<Progress, CarrierError> {
            self.0.place(&self.1, call)
        }
        fn poll(&self, call: &Placement, memo: Option<&str>) -> Result<Progress, CarrierError> {
            self.0.poll(&self.1, call, memo)
        }
        fn say(&self, call: &Placement, memo: &str, utterance_id: &str, text: &str, end_call: bool) -> Result<String, CarrierError> {
            self.0.say(&self.1, call, memo, utterance_id, text, end_call)
        }
    }

    fn sandbox(step_ms: u64) -> Sandbox {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        let wasm = crate::engine::embedded::COMPONENTS.iter().find(|(name, _)| *name == Carrier::COMPONENT).unwrap().1;
        let component = Component::new(&engine, wasm).unwrap();
        let settings: Settings = Arc::new(std::collections::HashMap::from([("step-delay-ms".to_string(), step_ms.to_string())]));
        Sandbox(Carrier::link(&engine, &component, CallLimits::embedded(Carrier::COMPONENT)).unwrap(), settings)
    }

    fn placement(destination: &str) -> Placement {
        Placement {
            call_id: "0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b".into(),
            destination: destination.into(),
            caller_number: None,
            voice: VoiceProfile { live_voice_id: None, language: None, agent_gender: None, background_noise_key: None, background_noise_level_percent: None },
            max_duration_seconds: 120,
            requested_at_ms: crate::clock::now_ms(),
        }
    }

    /// Polls (bounded) until an event matching `want` arrives; returns the memo.
    fn until(carrier: &Sandbox, call: &Placement, mut memo: Option<String>, want: impl Fn(&CallEvent) -> bool) -> (String, Vec<CallEvent>) {
        let mut seen = Vec::new();
        for _ in 0..500 {
            let p = carrier.poll(call, memo.as_deref()).unwrap();
            memo = Some(p.memo);
            let hit = p.events.iter().any(|e| want(&e.event));
            seen.extend(p.events.into_iter().map(|e| e.event));
            if hit {
                return (memo.unwrap(), seen);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        panic!("never saw the event; saw {seen:?}");
    }

    #[test]
    fn the_sandbox_carrier_places_talks_and_ends_a_call_through_wasmtime() {
        let carrier = sandbox(5);
        let call = placement("+15550001234");
        let placed = carrier.place(&call).unwrap();
        // A placement answered more than a step after it was asked for (a
        // loaded machine) already brings the ringing.
        let placed_events: Vec<CallEvent> = placed.events.into_iter().map(|e| e.event).collect();
        let answered = |e: &CallEvent| matches!(e, CallEvent::Answered);
        let (memo, seen) = if placed_events.iter().any(answered) { (placed.memo, Vec::new()) } else { until(&carrier, &call, Some(placed.memo), answered) };
        let seen: Vec<&CallEvent> = placed_events.iter().chain(&seen).collect();
        assert!(matches!(seen[0], CallEvent::Ringing), "{seen:?}");
        let memo = carrier.say(&call, &memo, "u0", "Hello, this is Ada from Acme.", false).unwrap();
        let (memo, seen) = until(&carrier, &call, Some(memo), |e| matches!(e, CallEvent::CustomerSaid(_)));
        assert!(seen.iter().any(|e| matches!(e, CallEvent::Played(p) if p.utterance_id == "u0" && p.played_percent == 100)));
        let memo = carrier.say(&call, &memo, "u1", "Goodbye.", true).unwrap();
        let (_, seen) = until(&carrier, &call, Some(memo), |e| matches!(e, CallEvent::Ended(_)));
        match seen.last() {
            Some(CallEvent::Ended(end)) => {
                assert!(matches!(end.cause, EndCause::Completed));
                assert!(end.connected_ms > 0);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_sandbox_carrier_refuses_and_reconciles_by_rule() {
        let carrier = sandbox(5);
        let down = placement("+15550003333");
        let e = carrier.place(&down).unwrap_err();
        assert!(e.retryable && e.code == "carrier_unavailable");
        assert_eq!(carrier.poll(&down, None).unwrap_err().code, "unknown_call");
        // A placement that timed out is found by our call id.
        let timed_out = placement("+15550004444");
        assert_eq!(carrier.place(&timed_out).unwrap_err().code, "placement_timeout");
        until(&carrier, &timed_out, None, |e| matches!(e, CallEvent::Answered));
        // Busy ends at once, nothing connected.
        let busy = placement("+15550002222");
        let placed = carrier.place(&busy).unwrap();
        let (_, seen) = until(&carrier, &busy, Some(placed.memo), |e| matches!(e, CallEvent::Ended(_)));
        assert!(matches!(seen.last(), Some(CallEvent::Ended(end)) if matches!(end.cause, EndCause::Busy) && end.connected_ms == 0));
        // A memo this carrier never wrote is refused, not trusted.
        assert_eq!(carrier.poll(&busy, Some("{not a memo")).unwrap_err().code, "invalid_memo");
    }
}
