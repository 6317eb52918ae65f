//! An AI plugin (world `ai-provider`): a business's agent turns and campaign
//! assessments answered by a plugin it chose instead of the server's native
//! AI. Called like every adapter, in a fresh bounded store
//! ([`super::super::call`]); its errors and faults become the `ai` import's
//! error text. `embed` is never asked of a plugin (one index, one model).

use super::super::{CallLimits, ProviderState, Settings};
use crate::engine::dispatcher_world::switchboard::provider::ai as import;
use anyhow::Result;
use wasmtime::component::{Component, HasSelf};
use wasmtime::Engine;

mod world {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "switchboard:provider/ai-provider",
        with: {
            "switchboard:provider/clock": crate::engine::switchboard::provider::clock,
            "switchboard:provider/ids": crate::engine::switchboard::provider::ids,
            "switchboard:provider/log": crate::engine::switchboard::provider::log,
            "switchboard:provider/settings": crate::engine::providers::messenger::world::switchboard::provider::settings,
            "switchboard:provider/http": crate::engine::providers::messenger::world::switchboard::provider::http,
        },
    });
}
use world::exports::switchboard::provider::ai as provider;

/// A linked AI plugin.
pub struct AiPlugin {
    engine: Engine,
    pre: world::AiProviderPre<ProviderState>,
    limits: CallLimits,
}

impl AiPlugin {
    pub fn link(engine: &Engine, component: &Component, limits: CallLimits) -> Result<AiPlugin> {
        let pre = super::super::instance_pre(engine, component, &limits, |l| world::AiProvider::add_to_linker::<_, HasSelf<_>>(l, |s| s))?;
        Ok(AiPlugin { engine: engine.clone(), pre: world::AiProviderPre::new(pre)?, limits })
    }

    fn call<T>(&self, settings: &Settings, f: impl FnOnce(&provider::Guest, &mut wasmtime::Store<ProviderState>) -> wasmtime::Result<Result<T, String>>) -> Result<T, String> {
        let answer = super::super::call(&self.engine, &self.limits, settings.clone(), "ai", |store, instantiated| {
            let instance = self.pre.instantiate(&mut *store)?;
            instantiated();
            f(instance.switchboard_provider_ai(), store)
        });
        match answer {
            Ok(answer) => answer,
            Err(fault) => {
                let (code, message, _) = fault.error(&self.limits, "ai_unavailable", "AI provider");
                Err(format!("{code}: {message}"))
            }
        }
    }

    pub fn complete(&self, settings: &Settings, instructions: &str, history: &[(String, String)]) -> Result<String, String> {
        self.call(settings, |g, s| g.call_complete(s, instructions, history))
    }

    pub fn respond(
        &self,
        settings: &Settings,
        instructions: &str,
        history: &[(String, String)],
        sources: &[import::LookupSource],
        done: &[(import::Lookup, String)],
    ) -> Result<import::Answer, String> {
        let sources: Vec<provider::LookupSource> = sources.iter().map(|x| provider::LookupSource { name: x.name.clone(), fields: x.fields.clone() }).collect();
        let done: Vec<(provider::Lookup, String)> = done.iter().map(|(l, rows)| (lookup_out(l), rows.clone())).collect();
        let answer = self.call(settings, |g, s| g.call_respond(s, instructions, history, &sources, &done))?;
        Ok(match answer {
            provider::Answer::Text(t) => import::Answer::Text(t),
            provider::Answer::Lookup(l) => import::Answer::Lookup(import::Lookup { id: l.id, source: l.source, field: l.field, value: l.value }),
        })
    }

    pub fn assess(&self, settings: &Settings, input: &import::AssessmentInput) -> Result<import::Assessment, String> {
        let input = provider::AssessmentInput {
            objective: input.objective.clone(),
            outcomes: input.outcomes.iter().map(|o| provider::AssessmentOutcome { sequence: o.sequence, channel: o.channel.clone(), outcome: o.outcome.clone(), attempts: o.attempts }).collect(),
            conversation: input.conversation.clone(),
        };
        let a = self.call(settings, |g, s| g.call_assess(s, &input))?;
        Ok(import::Assessment { summary: a.summary, next_action: a.next_action, follow_up: a.follow_up })
    }
}

fn lookup_out(l: &import::Lookup) -> provider::Lookup {
    provider::Lookup { id: l.id.clone(), source: l.source.clone(), field: l.field.clone(), value: l.value.clone() }
}
