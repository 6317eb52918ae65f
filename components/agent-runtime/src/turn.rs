//! One agent turn: the instructions its kind of turn gets ([`instructions`]),
//! the grounded answer ([`answer`]: the passages and lookups of
//! `grounding.rs`; a voice turn is offered the `end_call` tool, an
//! OpenAI-compatible function the model calls to hang up after its last
//! words). Also the greeting a voice conversation opens with
//! ([`greeting`]), filled by the template language.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

use switchboard_guest::Failure;

use crate::{grounding, template};

/// The tool a voice turn's model calls to end the call (offered by the
/// `ai` provider; the instructions of a voice turn name it).
pub const END_CALL_TOOL: &str = "end_call";

/// What a turn that ends the call without words says.
pub const GOODBYE: &str = "Goodbye.";

/// Appended to the instructions of a message reply by an agent with
/// `photoappCollectMobileEnabled`.
pub const COLLECT_MOBILE: &str = "\n\nIf the customer has not shared a mobile number yet, ask for it naturally when it helps.";

/// Appended to the instructions of a public reply to a photoapp comment.
pub const PUBLIC_REPLY: &str = "\n\nYou are answering a public comment on one of the business's posts: reply briefly and publicly, and never ask for personal details in public.";

/// The kind of turn an agent takes.
#[derive(Debug, Clone, Copy)]
pub enum Turn<'a> {
    /// A reply in a conversation of messages (chatapp, photoapp, …);
    /// `collect_mobile` is the agent's `photoappCollectMobileEnabled`.
    Message { collect_mobile: bool },
    /// A public reply to a photoapp comment.
    Comment,
    /// A turn of a phone call, with the call's variables.
    Call { variables: &'a BTreeMap<String, String> },
}

/// The instructions of a turn: the agent's own, then what its kind of turn
/// adds (the grounding passages are added by [`answer`]).
pub fn instructions(agent: &str, turn: Turn) -> String {
    match turn {
        Turn::Message { collect_mobile: false } => agent.to_string(),
        Turn::Message { collect_mobile: true } => format!("{agent}{COLLECT_MOBILE}"),
        Turn::Comment => format!("{agent}{PUBLIC_REPLY}"),
        Turn::Call { variables } => {
            let mut s = agent.to_string();
            s.push_str("\n\nYou are speaking with the customer on an outbound phone call. Keep each turn short.");
            if !variables.is_empty() {
                s.push_str("\nWhat you know for this call:");
                for (k, v) in variables {
                    s.push_str(&format!("\n- {k}: {v}"));
                }
            }
            s.push_str(&format!("\nWhen the conversation is over, call the {END_CALL_TOOL} tool with your goodbye as its message."));
            s
        }
    }
}

/// A turn's reply as said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub text: String,
    /// A call turn whose model called [`END_CALL_TOOL`]; never for messages.
    pub end_call: bool,
    /// What the turn drew on (`grounding::used_json`), kept with the reply.
    pub used: Option<String>,
}

/// One grounded turn of `agent_id` over `history` ((role, text), oldest
/// first): its instructions, the passages and lookups of its sources, the
/// AI's answer, parsed for a call. `Ok(Err(_))` is the AI's own failure
/// (the caller retries or gives up).
pub fn answer(biz: &str, agent_id: &str, agent_instructions: &str, turn: Turn, history: &[(String, String)]) -> Result<Result<Reply, String>, Failure> {
    let in_call = matches!(turn, Turn::Call { .. });
    Ok(grounding::answer(biz, agent_id, &instructions(agent_instructions, turn), history, in_call)?.map(|g| {
        let text = match (in_call, g.text.trim()) {
            (false, _) => g.text.clone(),
            // Ending the call without last words still says goodbye.
            (true, "") if g.end_call => GOODBYE.to_string(),
            (true, said) => said.to_string(),
        };
        Reply { text, end_call: g.end_call, used: g.used }
    }))
}

/// The agent's `firstGreeting` (from its voice settings), when it has one.
pub fn greeting_template(settings: &Map<String, Value>) -> Option<&str> {
    settings.get("firstGreeting").and_then(Value::as_str).map(str::trim).filter(|g| !g.is_empty())
}

/// The greeting a voice conversation opens with, its placeholders filled
/// from `values`; `Ok(None)` without one. The agents area checked it when
/// it was written, with the same parser.
pub fn greeting(settings: &Map<String, Value>, values: &BTreeMap<String, String>) -> Result<Option<String>, template::Unfilled> {
    greeting_template(settings).map(|t| template::fill(t, values)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_of_turn_adds_its_own() {
        assert_eq!(instructions("Be kind.", Turn::Message { collect_mobile: false }), "Be kind.");
        assert_eq!(instructions("Be kind.", Turn::Message { collect_mobile: true }), format!("Be kind.{COLLECT_MOBILE}"));
        assert_eq!(instructions("Be kind.", Turn::Comment), format!("Be kind.{PUBLIC_REPLY}"));
        let vars = BTreeMap::from([("name".to_string(), "Ada".to_string()), ("city".to_string(), "Paris".to_string())]);
        let call = instructions("Be kind.", Turn::Call { variables: &vars });
        assert!(call.starts_with("Be kind.\n\nYou are speaking with the customer on an outbound phone call."), "{call}");
        assert!(call.contains("\nWhat you know for this call:\n- city: Paris\n- name: Ada\n"), "{call}");
        assert!(call.ends_with("call the end_call tool with your goodbye as its message."), "{call}");
        let empty = BTreeMap::new();
        assert!(!instructions("x", Turn::Call { variables: &empty }).contains("What you know"));
    }

    #[test]
    fn greetings_fill_declared_variables() {
        let settings = |v: Value| v.as_object().unwrap().clone();
        let values = BTreeMap::from([("name".to_string(), "Ada".to_string())]);
        assert_eq!(greeting(&settings(json!({"firstGreeting": " Hello {{name}}, {{ name }}! "})), &values).unwrap().as_deref(), Some("Hello Ada, Ada!"));
        assert_eq!(greeting(&settings(json!({"firstGreeting": "Hello {{city}}"})), &values).unwrap_err(), template::Unfilled::Missing("city".into()));
        assert_eq!(greeting(&settings(json!({"firstGreeting": "  "})), &values).unwrap(), None);
        assert_eq!(greeting(&settings(json!({})), &values).unwrap(), None);
    }
}
