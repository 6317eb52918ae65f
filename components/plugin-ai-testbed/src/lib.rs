//! An AI plugin for the tests (world `ai-provider`, never embedded): a reply
//! is `<persona>: you said "<the customer's last words>"` (setting
//! `persona`, default `plugin-ai`), so a test sees that the business's
//! plugin, with the business's settings, wrote it. A customer's text
//! `trap` makes it trap. Assessments recommend a follow-up.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    wit_bindgen::generate!({ world: "ai-provider", path: "../../kit/wit" });
}

use bindings::exports::switchboard::provider::ai::{Answer, Assessment, AssessmentInput, Guest, Lookup, LookupSource};
use bindings::switchboard::provider::settings;

/// The reply to `history`.
pub fn reply(persona: &str, history: &[(String, String)]) -> String {
    let last = history.iter().rev().find(|(role, _)| role == "user").map(|(_, t)| t.as_str()).unwrap_or("");
    format!("{persona}: you said \"{last}\"")
}

struct AiTestbed;

impl Guest for AiTestbed {
    fn complete(_instructions: String, history: Vec<(String, String)>) -> Result<String, String> {
        if history.last().is_some_and(|(_, t)| t == "trap") {
            panic!("the AI testbed traps on purpose");
        }
        Ok(reply(&settings::get("persona").unwrap_or_else(|| "plugin-ai".into()), &history))
    }

    fn respond(instructions: String, history: Vec<(String, String)>, _sources: Vec<LookupSource>, _done: Vec<(Lookup, String)>, _end_call: bool) -> Result<Answer, String> {
        Self::complete(instructions, history).map(Answer::Text)
    }

    fn embed(_texts: Vec<String>) -> Result<Option<Vec<Vec<f32>>>, String> {
        Ok(None)
    }

    fn assess(input: AssessmentInput) -> Result<Assessment, String> {
        Ok(Assessment { summary: format!("assessed by the plugin ({} iterations)", input.outcomes.len()), next_action: "Call again".into(), follow_up: true })
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(AiTestbed with_types_in bindings);
