//! Provider interface `ai` (kit/wit/ai.wit): the replies of agent turns and
//! the assessments of campaign contacts. World `ai-provider`; the embedded
//! default is the `sandbox-ai` component (deterministic offline replies and
//! assessments, no network: `components/sandbox-ai`), replaced for the
//! whole process with `--component-override sandbox-ai=FILE`; a business
//! may choose an `ai` plugin instead. This file is the worked example of
//! ARCHITECTURE.md's "Add a provider interface": everything the host knows
//! of the interface is here, and one line in `interfaces!` (../mod.rs).
//!
//! Who answers a business's turn: its `ai` plugin if it chose one, else the
//! endpoint `serve --ai-endpoint` names ([`endpoint`], with [`assess`]),
//! else the sandbox AI. Embeddings: the business's plugin's when its
//! manifest declares `[embeddings]` (of the vector index's dimension), else
//! the server's model (`--ai-embeddings-model`), else none; the sandbox AI
//! is never asked.

pub mod assess;
pub mod endpoint;

pub use endpoint::{embeddings_url, Embeddings, Endpoint, ServerAi, API_KEY_VAR, DEFAULT_DIMENSIONS};

use super::adapter::{CallLimits, Interface, Provider, Settings, Unavailable};
use super::adapters::{ProviderCall, ProviderImports};
use super::calls::{self, ProviderState};
use crate::engine::bindings::dispatcher_world::switchboard::provider::ai as import;
use anyhow::Result;
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::Engine;

mod world {
    crate::engine::providers::calls::provider_world!("switchboard:provider/ai-provider");
}
use world::exports::switchboard::provider::ai as provider;

/// A linked AI adapter: the sandbox AI or a business's plugin. Called like
/// every adapter, in a fresh bounded store ([`calls::call`]); its errors and
/// faults become the `ai` import's error text.
pub struct Ai {
    engine: Engine,
    pre: world::AiProviderPre<ProviderState>,
    limits: CallLimits,
}

impl Provider for Ai {
    const NAME: &'static str = "ai";
    const WORLD: &'static str = "ai-provider";
    const COMPONENT: &'static str = "sandbox-ai";
    /// The server's own AI: the sandbox AI, or `--ai-endpoint`.
    const BUILT_IN: &'static str = "native";

    fn link(engine: &Engine, component: &Component, limits: CallLimits) -> Result<Ai> {
        let pre = calls::instance_pre(engine, component, &limits, |l| world::AiProvider::add_to_linker::<_, HasSelf<_>>(l, |s| s))?;
        Ok(Ai { engine: engine.clone(), pre: world::AiProviderPre::new(pre)?, limits })
    }
}

/// Links the `ai` import the areas and the dispatcher call; its host
/// side is on the call's [`ProviderCall`] (below).
pub fn add_to_linker<T: 'static>(linker: &mut Linker<T>, view: fn(&mut T) -> ProviderCall<'_>) -> Result<()> {
    Ok(import::add_to_linker::<T, ProviderImports>(linker, view)?)
}

impl Ai {
    fn call<T>(&self, settings: &Settings, f: impl FnOnce(&provider::Guest, &mut wasmtime::Store<ProviderState>) -> wasmtime::Result<Result<T, String>>) -> Result<T, String> {
        let answer = calls::call(&self.engine, &self.limits, settings.clone(), "ai", |store, instantiated| {
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
        end_call: bool,
    ) -> Result<import::Answer, String> {
        let sources: Vec<provider::LookupSource> = sources.iter().map(|x| provider::LookupSource { name: x.name.clone(), fields: x.fields.clone() }).collect();
        let done: Vec<(provider::Lookup, String)> = done.iter().map(|(l, rows)| (lookup_out(l), rows.clone())).collect();
        let answer = self.call(settings, |g, s| g.call_respond(s, instructions, history, &sources, &done, end_call))?;
        Ok(match answer {
            provider::Answer::Text(t) => import::Answer::Text(t),
            provider::Answer::Lookup(l) => import::Answer::Lookup(import::Lookup { id: l.id, source: l.source, field: l.field, value: l.value }),
            // Only a turn that offered the tool may end the call.
            provider::Answer::EndCall(t) if end_call => import::Answer::EndCall(t),
            provider::Answer::EndCall(t) => import::Answer::Text(t),
        })
    }

    /// The vectors of `texts`, checked: one per text, each of `dimensions`.
    pub fn embed(&self, settings: &Settings, texts: &[String], dimensions: u32) -> Result<Vec<Vec<f32>>, String> {
        let vectors = self.call(settings, |g, s| g.call_embed(s, texts))?.ok_or("ai_bad_answer: the plugin declares embeddings but answered none")?;
        if vectors.len() != texts.len() {
            return Err(format!("ai_bad_answer: {} vectors for {} texts", vectors.len(), texts.len()));
        }
        if let Some(v) = vectors.iter().find(|v| v.len() != dimensions as usize || v.iter().any(|x| !x.is_finite())) {
            return Err(format!("ai_bad_answer: a vector of {} dimensions (or not finite); the plugin declares {dimensions}", v.len()));
        }
        Ok(vectors)
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

/// Who answers one call of the `ai` import.
enum Answerer<'a> {
    Adapter(Arc<Ai>, Settings),
    Endpoint(&'a ServerAi, &'a Endpoint),
}

/// Why no AI adapter can answer, as the `ai` import words its failures.
fn unavailable(u: Unavailable) -> String {
    let (code, message, _) = u.describe("ai");
    format!("{code}: {message}")
}

/// A prepare step's refusal, as the `ai` import words its failures.
fn refused(message: &str) -> String {
    format!("prepare_refused: {message}")
}

impl ProviderCall<'_> {
    /// The business's `ai` plugin, else the configured endpoint, else the
    /// sandbox AI.
    fn ai(&self) -> Result<Answerer<'_>, String> {
        let providers = self.providers;
        if let Some((plugin, settings)) = providers.plugin_for::<Ai>(self.connection().map_err(refused)?, self.business_id).map_err(unavailable)? {
            return Ok(Answerer::Adapter(plugin, settings));
        }
        if let Some(e) = providers.server_ai.endpoint() {
            return Ok(Answerer::Endpoint(&providers.server_ai, e));
        }
        providers.embedded::<Ai>().map(|(a, settings)| Answerer::Adapter(a, settings)).map_err(unavailable)
    }

    /// The business's `ai` plugin when it makes the business's embeddings,
    /// with the dimension it declares.
    fn embedder(&self) -> Result<Option<(Arc<Ai>, Settings, u32)>, String> {
        let choice = crate::plugins::choice::read(self.connection().map_err(refused)?, self.business_id, Interface::of::<Ai>())
            .map_err(|_| "provider_choice_unreadable: the business's AI choice could not be read".to_string())?;
        let Some(choice) = choice.filter(|c| c.embeddings_model.is_some()) else { return Ok(None) };
        let providers = self.providers;
        // The loaded version's declaration (a reload may have dropped it).
        let loaded = providers.plugins.get(&choice.plugin).ok_or_else(|| unavailable(Unavailable::PluginNotLoaded(choice.plugin.clone())))?;
        let dimensions = loaded.manifest.embeddings.as_ref().map(|e| e.dimensions).ok_or("plugin_embeddings_undeclared: the business's AI plugin no longer declares embeddings")?;
        let (plugin, settings) = providers.chosen::<Ai>(&choice, self.business_id).map_err(unavailable)?;
        Ok(Some((plugin, settings, dimensions)))
    }
}

/// `ai`: the business's adapter (or the endpoint) answers; embeddings come
/// from a plugin that declares them, else the server's model.
impl import::Host for ProviderCall<'_> {
    fn complete(&mut self, instructions: String, history: Vec<(String, String)>) -> Result<String, String> {
        match self.ai()? {
            Answerer::Adapter(a, settings) => a.complete(&settings, &instructions, &history),
            Answerer::Endpoint(server, e) => server.complete(e, &instructions, &history),
        }
    }

    fn respond(
        &mut self,
        instructions: String,
        history: Vec<(String, String)>,
        sources: Vec<import::LookupSource>,
        done: Vec<(import::Lookup, String)>,
        end_call: bool,
    ) -> Result<import::Answer, String> {
        match self.ai()? {
            Answerer::Adapter(a, settings) => a.respond(&settings, &instructions, &history, &sources, &done, end_call),
            Answerer::Endpoint(server, e) => server.respond(e, &instructions, &history, &sources, &done, end_call),
        }
    }

    fn embed(&mut self, texts: Vec<String>) -> Result<Option<Vec<Vec<f32>>>, String> {
        if let Some((plugin, settings, dimensions)) = self.embedder()? {
            return plugin.embed(&settings, &texts, dimensions).map(Some);
        }
        self.providers.server_ai.embed(&texts)
    }

    fn assess(&mut self, input: import::AssessmentInput) -> Result<import::Assessment, String> {
        match self.ai()? {
            Answerer::Adapter(a, settings) => a.assess(&settings, &input),
            Answerer::Endpoint(server, e) => assess::assess(server, e, &input),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The embedded sandbox AI, linked as `serve` links it.
    fn sandbox() -> Ai {
        let mut config = wasmtime::Config::new();
        config.allocation_strategy(crate::compiled::pooling(8, crate::engine::limits::INSTANCE_MEMORY_LIMIT)).wasm_component_model(true).epoch_interruption(true);
        let engine = Engine::new(&config).unwrap();
        let wasm = crate::engine::embedded::COMPONENTS.iter().find(|(name, _)| *name == Ai::COMPONENT).expect("build.rs embeds every sandbox-* component").1;
        let component = Component::new(&engine, wasm).unwrap();
        Ai::link(&engine, &component, CallLimits::embedded(Ai::COMPONENT)).unwrap()
    }

    fn h(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn the_sandbox_ai_answers_turns_lookups_and_assessments_through_wasmtime() {
        let ai = sandbox();
        let settings: Settings = Arc::new(HashMap::new());
        let grounded = "Answer.\n\nKnowledge from the business's data sources (answer from it when it helps, and say which source):\n[Prices] Name: Widget; Price: 10";
        assert_eq!(ai.complete(&settings, grounded, &h(&[("user", "How much is the widget?")])).unwrap(), "From Prices: Name: Widget; Price: 10");
        assert_eq!(ai.complete(&settings, "Answer.", &h(&[("user", "hi")])).unwrap(), "Thanks for your message: \"hi\". An agent will follow up.");
        let prices = [import::LookupSource { name: "Prices".into(), fields: vec!["sku".into()] }];
        let call = match ai.respond(&settings, "", &h(&[("user", "How much is B2?")]), &prices, &[], false).unwrap() {
            import::Answer::Lookup(l) => l,
            other => panic!("{other:?}"),
        };
        assert_eq!((call.source.as_str(), call.field.as_str(), call.value.as_str()), ("Prices", "sku", "B2"));
        let found = [(call, "sku: B2; price: 20".to_string())];
        assert!(matches!(ai.respond(&settings, "", &h(&[("user", "How much is B2?")]), &prices, &found, false).unwrap(), import::Answer::Text(t) if t == "From Prices (sku = B2): sku: B2; price: 20"));
        // A voice turn: the customer's goodbye is answered by the end_call tool.
        assert!(matches!(ai.respond(&settings, "", &h(&[("user", "Goodbye.")]), &[], &[], true).unwrap(), import::Answer::EndCall(t) if t == "Thank you for your time. Goodbye."));
        let input = import::AssessmentInput {
            objective: "Confirm renewals".into(),
            outcomes: vec![import::AssessmentOutcome { sequence: 1, channel: "voice".into(), outcome: "busy".into(), attempts: 3 }],
            conversation: Vec::new(),
        };
        let a = ai.assess(&settings, &input).unwrap();
        assert_eq!((a.summary.as_str(), a.follow_up), ("Not reached: busy by voice after 3 attempts", true));
    }

    /// What a turn pays for the sandbox AI being a component (issue 37; the
    /// figures are in ARCHITECTURE.md): `cargo test -p switchboard-runtime
    /// --release sandbox_ai_turn_cost -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn sandbox_ai_turn_cost() {
        let ai = sandbox();
        let settings: Settings = Arc::new(HashMap::new());
        // A grounded turn's instructions: the agent's text and eight passages.
        let mut grounded =
            String::from("You are the front desk of Acme. Answer briefly and politely.\n\nKnowledge from the business's data sources (answer from it when it helps, and say which source):\n");
        for i in 0..8 {
            grounded.push_str(&format!("[Catalogue] sku: SKU{i:06}; name: alpha bravo {i}; price: {}.5; city: Lisbon\n", i % 997));
        }
        let history = h(&[("user", "Hello"), ("assistant", "Hi, how can I help?"), ("user", "Do you have alpha bravo in Lisbon?")]);
        let mut took = Vec::new();
        for _ in 0..2000 {
            let t = std::time::Instant::now();
            let reply = ai.respond(&settings, &grounded, &history, &[], &[], false).unwrap();
            took.push(t.elapsed());
            assert!(matches!(reply, import::Answer::Text(t) if t.starts_with("From Catalogue:")));
        }
        took.sort();
        println!("sandbox-ai grounded respond: p50 {:?}, p99 {:?} over {} calls", took[took.len() / 2], took[took.len() * 99 / 100], took.len());
    }
}
