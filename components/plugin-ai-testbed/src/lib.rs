//! An AI plugin for the tests (world `ai-provider`, never embedded): a reply
//! is `<persona>: you said "<the customer's last words>"` (setting
//! `persona`, default `plugin-ai`), so a test sees that the business's
//! plugin, with the business's settings, wrote it. A customer's text
//! `trap` makes it trap. Assessments recommend a follow-up.
//!
//! Embeddings (when its manifest declares `[embeddings]`, 1536 dimensions):
//! a text's vector marks the concepts of [`CONCEPTS`] its words name, so
//! `refund` and `reimbursement` are near though no word is shared; a text
//! naming none gets the vector of "no concept".

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

/// Words and the concept (a position of the vector) each names.
pub const CONCEPTS: &[(&str, usize)] = &[("refund", 1), ("refunds", 1), ("reimbursement", 1), ("reimbursed", 1), ("parking", 2), ("car", 2)];
pub const DIMENSIONS: usize = 1536;

/// The unit vector of the concepts `text` names.
pub fn embedding(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMENSIONS];
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if let Some((_, at)) = CONCEPTS.iter().find(|(w, _)| w.eq_ignore_ascii_case(word)) {
            v[*at] = 1.0;
        }
    }
    if v.iter().all(|x| *x == 0.0) {
        v[0] = 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
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

    fn embed(texts: Vec<String>) -> Result<Option<Vec<Vec<f32>>>, String> {
        Ok(Some(texts.iter().map(|t| embedding(t)).collect()))
    }

    fn assess(input: AssessmentInput) -> Result<Assessment, String> {
        Ok(Assessment { summary: format!("assessed by the plugin ({} iterations)", input.outcomes.len()), next_action: "Call again".into(), follow_up: true })
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(AiTestbed with_types_in bindings);
