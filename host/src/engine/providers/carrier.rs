//! Provider interface `carrier` (wit/carrier.wit): the network that places
//! voice calls. World `carrier-provider`; the embedded default will be the
//! `sandbox-carrier` component, replaced by a real adapter with
//! `--component-override sandbox-carrier=FILE`, once the voice area calls
//! it (issue 12). Each call runs in a small, bounded store of its own, like
//! the messenger's; a trap becomes a retryable `carrier_unavailable`.
//!
//! Not registered in [`super::Providers`] yet: the voice area and its
//! `voice.call` job come next. The test below runs the real sandbox carrier
//! through wasmtime.

#![cfg_attr(not(test), allow(dead_code, unused_imports))]

use super::{ProviderState, PROVIDER_DEADLINE};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store};

mod world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "carrier-provider",
        with: {
            "switchboard:platform/clock": crate::engine::switchboard::platform::clock,
            "switchboard:platform/ids": crate::engine::switchboard::platform::ids,
            "switchboard:platform/log": crate::engine::switchboard::platform::log,
        },
    });
}
pub use world::exports::switchboard::platform::carrier::{CallEvent, CarrierError, EndCause, Placement, Progress, VoiceProfile};
use world::exports::switchboard::platform::carrier as provider;
use world::switchboard::platform::settings;

/// The embedded default, and the name `--component-override` will replace.
pub const COMPONENT: &str = "sandbox-carrier";

/// A linked carrier.
pub struct Carrier {
    engine: Engine,
    pre: world::CarrierProviderPre<ProviderState>,
    settings: Arc<HashMap<String, String>>,
}

impl settings::Host for ProviderState {
    fn get(&mut self, name: String) -> Option<String> {
        super::get_setting(self, &name)
    }
}

fn unavailable() -> CarrierError {
    CarrierError { code: "carrier_unavailable".into(), message: "the voice carrier failed".into(), retryable: true }
}

impl Carrier {
    pub fn link(engine: &Engine, component: &Component, settings: Arc<HashMap<String, String>>) -> Result<Carrier> {
        let mut linker: Linker<ProviderState> = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        world::CarrierProvider::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        let pre = linker.instantiate_pre(component).map_err(anyhow::Error::from).with_context(|| format!("linking component {COMPONENT}"))?;
        Ok(Carrier { engine: engine.clone(), pre: world::CarrierProviderPre::new(pre)?, settings })
    }

    /// Calls the carrier in a fresh, bounded store of its own.
    fn call<T>(&self, f: impl FnOnce(&provider::Guest, &mut Store<ProviderState>) -> wasmtime::Result<Result<T, CarrierError>>) -> Result<T, CarrierError> {
        let mut store = Store::new(&self.engine, ProviderState::new(COMPONENT, self.settings.clone()));
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(crate::engine::deadline_ticks(PROVIDER_DEADLINE));
        match self.pre.instantiate(&mut store).and_then(|inst| f(inst.switchboard_platform_carrier(), &mut store)) {
            Ok(answer) => answer,
            Err(e) => {
                // The trap's text stays in the log; it may not name the call's number.
                crate::logging::line("error", &format!("the voice carrier trapped: {e:#}"));
                Err(unavailable())
            }
        }
    }

    pub fn place(&self, call: &Placement) -> Result<Progress, CarrierError> {
        self.call(|g, s| g.call_place(s, call))
    }

    pub fn poll(&self, call: &Placement, memo: Option<&str>) -> Result<Progress, CarrierError> {
        self.call(|g, s| g.call_poll(s, call, memo))
    }

    pub fn say(&self, call: &Placement, memo: &str, utterance_id: &str, text: &str, end_call: bool) -> Result<String, CarrierError> {
        self.call(|g, s| g.call_say(s, call, memo, utterance_id, text, end_call))
    }

    pub fn hang_up(&self, call: &Placement, memo: Option<&str>) -> Result<String, CarrierError> {
        self.call(|g, s| g.call_hang_up(s, call, memo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(step_ms: u64) -> Carrier {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true).epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        let component = Component::from_file(&engine, env!("SWITCHBOARD_SANDBOX_CARRIER_WASM")).unwrap();
        let settings = Arc::new(HashMap::from([("step-delay-ms".to_string(), step_ms.to_string())]));
        Carrier::link(&engine, &component, settings).unwrap()
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
    fn until(carrier: &Carrier, call: &Placement, mut memo: Option<String>, want: impl Fn(&CallEvent) -> bool) -> (String, Vec<CallEvent>) {
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
        let (memo, seen) = until(&carrier, &call, Some(placed.memo), |e| matches!(e, CallEvent::Answered));
        assert!(matches!(seen[0], CallEvent::Ringing));
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
