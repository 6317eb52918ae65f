//! The sandbox AI: the embedded default behind the `ai` interface
//! (kit/wit/ai.wit, world `ai-provider`), as the sandbox messenger and
//! carrier are behind theirs. It talks to no network and answers
//! deterministically, on documented rules, so tests and demos can rely on
//! every word:
//!
//! * [`reply`]: agent replies (`complete`, and `respond` with the `lookup`
//!   and `end_call` tools), grounded in the passages the instructions carry;
//! * [`assess`]: a campaign contact's summary and next action.
//!
//! `embed` answers `none` (an adapter never makes the index's vectors: they
//! come from the server's one embeddings model). The server asks this
//! component only when the business chose no `ai` plugin and `serve` has no
//! `--ai-endpoint`; `--component-override sandbox-ai=FILE` replaces it.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    wit_bindgen::generate!({ world: "ai-provider", path: "../../kit/wit" });
}

pub mod assess;
pub mod reply;

use bindings::exports::switchboard::provider::ai::{Answer, Assessment, AssessmentInput, Guest, Lookup, LookupSource};

struct SandboxAi;

impl Guest for SandboxAi {
    fn complete(instructions: String, history: Vec<(String, String)>) -> Result<String, String> {
        Ok(reply::offline(&instructions, &history))
    }

    fn respond(instructions: String, history: Vec<(String, String)>, sources: Vec<LookupSource>, done: Vec<(Lookup, String)>, end_call: bool) -> Result<Answer, String> {
        Ok(reply::respond(&instructions, &history, &sources, &done, end_call))
    }

    fn embed(_texts: Vec<String>) -> Result<Option<Vec<Vec<f32>>>, String> {
        Ok(None)
    }

    fn assess(input: AssessmentInput) -> Result<Assessment, String> {
        Ok(assess::offline(&input))
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(SandboxAi with_types_in bindings);
