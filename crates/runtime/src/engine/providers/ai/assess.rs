//! `ai.assess` at the endpoint (`serve --ai-endpoint URL --ai-model
//! NAME`): one contact's conclusion for a campaign summary run. A
//! chat-completions request whose system message states the objective and
//! asks for a JSON object `{summary, nextAction, followUp}`
//! (`response_format: json_object`), and whose user message is the material
//! (outcomes, then the conversation). An answer without those fields is an
//! error, which the summary job retries. (The sandbox AI's offline rules are
//! in `components/sandbox-ai/src/assess.rs`.)

use super::endpoint::{Endpoint, ServerAi};
use crate::engine::bindings::dispatcher_world::switchboard::provider::ai::{Assessment, AssessmentInput};

/// Longest summary and next action kept from a provider.
const SUMMARY_CHARS: usize = 600;
const NEXT_ACTION_CHARS: usize = 200;
/// The material as the user message of a chat-completions request.
pub fn material_text(input: &AssessmentInput) -> String {
    let mut out = String::from("Outcomes, oldest first:\n");
    for o in &input.outcomes {
        out.push_str(&format!("- iteration {}, {}: {} after {} attempt(s)\n", o.sequence, o.channel, o.outcome, o.attempts));
    }
    out.push_str("\nConversation, oldest first:\n");
    if input.conversation.is_empty() {
        out.push_str("(nothing was said or written)\n");
    }
    for (role, text) in &input.conversation {
        out.push_str(if role == "user" { "Contact: " } else { "Agent: " });
        out.push_str(text);
        out.push('\n');
    }
    out
}

/// The chat-completions request body of an assessment.
pub fn request_body(model: &str, input: &AssessmentInput) -> serde_json::Value {
    let system = format!(
        "You assess one contact of a business's outreach campaign. The campaign's objective: {}\n\
         Answer with only a JSON object: {{\"summary\": string (at most 300 characters: what happened and where the contact stands), \
         \"nextAction\": string (at most 120 characters: what the business should do next), \
         \"followUp\": boolean (true when the business should contact them again)}}.",
        input.objective
    );
    serde_json::json!({
        "model": model,
        "response_format": {"type": "json_object"},
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": material_text(input)}],
    })
}

/// The assessment in a chat-completions answer.
pub fn parse(answer: &serde_json::Value) -> Result<Assessment, String> {
    let content = answer.pointer("/choices/0/message/content").and_then(|c| c.as_str()).ok_or("ai endpoint response has no choices[0].message.content")?;
    let v: serde_json::Value = serde_json::from_str(content.trim()).map_err(|_| "ai endpoint answered an assessment that is not a JSON object".to_string())?;
    let text = |k: &str, max: usize| -> Result<String, String> {
        match v.get(k).and_then(|s| s.as_str()).map(str::trim) {
            Some(s) if !s.is_empty() => Ok(s.chars().take(max).collect()),
            _ => Err(format!("ai endpoint answered an assessment without `{k}`")),
        }
    };
    let follow_up = v.get("followUp").and_then(|b| b.as_bool()).ok_or("ai endpoint answered an assessment without a boolean `followUp`")?;
    Ok(Assessment { summary: text("summary", SUMMARY_CHARS)?, next_action: text("nextAction", NEXT_ACTION_CHARS)?, follow_up })
}

/// The endpoint's assessment of `input`.
pub fn assess(ai: &ServerAi, e: &Endpoint, input: &AssessmentInput) -> Result<Assessment, String> {
    parse(&ai.post(e, request_body(&e.model, input))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::bindings::dispatcher_world::switchboard::provider::ai::AssessmentOutcome;

    fn input(outcomes: &[(&str, &str, u32)], said: &[(&str, &str)]) -> AssessmentInput {
        AssessmentInput {
            objective: "Confirm renewals".into(),
            outcomes: outcomes
                .iter()
                .enumerate()
                .map(|(i, (channel, outcome, attempts))| AssessmentOutcome { sequence: i as u32 + 1, channel: channel.to_string(), outcome: outcome.to_string(), attempts: *attempts })
                .collect(),
            conversation: said.iter().map(|(r, t)| (r.to_string(), t.to_string())).collect(),
        }
    }

    #[test]
    fn remote_shape() {
        let i = input(&[("voice", "completed", 1)], &[("user", "hi")]);
        let b = request_body("m", &i);
        assert_eq!(b["response_format"]["type"], "json_object");
        assert!(b["messages"][1]["content"].as_str().unwrap().contains("- iteration 1, voice: completed after 1 attempt(s)\n"));
        let answer = |content: &str| serde_json::json!({"choices": [{"message": {"content": content}}]});
        let a = parse(&answer(r#"{"summary": " Talked ", "nextAction": "Call back", "followUp": true}"#)).unwrap();
        assert_eq!((a.summary.as_str(), a.next_action.as_str(), a.follow_up), ("Talked", "Call back", true));
        assert!(parse(&answer("not json")).is_err());
        assert!(parse(&answer(r#"{"summary": "x", "nextAction": "", "followUp": true}"#)).is_err());
        assert!(parse(&answer(r#"{"summary": "x", "nextAction": "y"}"#)).is_err());
    }
}
