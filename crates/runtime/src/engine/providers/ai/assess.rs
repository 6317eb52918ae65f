//! `ai.assess`: one contact's conclusion for a campaign summary run.
//!
//! Embedded default: a deterministic offline assessor (no network), on
//! these documented rules over the contact's final outcome (its last
//! iteration) and the last thing the contact said or wrote:
//!
//! | the contact | summary | next action | follow-up |
//! |---|---|---|---|
//! | declined ("not interested", "stop", "no thanks", "unsubscribe", "don't call") | `Reached by <channel> …; last said: "…"` | `Do not contact again: declined` | no |
//! | interested ("yes", "interested", "sure", "book", "call me", "sounds good", "please") | same | `Follow up: interested` | yes |
//! | reached otherwise | same | `Send a short recap of the conversation` | no |
//! | never reached (no_answer, busy, failed, sent, delivered, read) | `Not reached: <outcome> by <channel> after N attempt(s)` | `Try again on another channel or at another time` | yes |
//! | never contacted (cancelled, skipped, pending) | `Not contacted: <outcome>` | `None: not contacted` | no |
//!
//! With `serve --ai-endpoint URL --ai-model NAME` the OpenAI-compatible
//! endpoint answers: a chat-completions request whose system message
//! states the objective and asks for a JSON object `{summary, nextAction,
//! followUp}` (`response_format: json_object`), and whose user message is
//! the material (outcomes, then the conversation). An answer without those
//! fields is an error, which the summary job retries.

use super::{post, Endpoint, ENDPOINT};
use crate::engine::dispatcher_world::switchboard::provider::ai::{Assessment, AssessmentInput};

/// Longest summary and next action kept from a provider.
const SUMMARY_CHARS: usize = 600;
const NEXT_ACTION_CHARS: usize = 200;
/// Characters of the contact's words quoted by the offline summary.
const QUOTE_CHARS: usize = 160;

pub fn assess(input: &AssessmentInput) -> Result<Assessment, String> {
    match ENDPOINT.get() {
        None => Ok(offline(input)),
        Some(e) => remote(e, input),
    }
}

/// The phrases the offline assessor looks for, as whole words.
const DECLINED: [&str; 7] = ["not interested", "no thanks", "no thank you", "stop", "unsubscribe", "don't call", "do not call"];
const INTERESTED: [&str; 8] = ["yes", "interested", "sure", "book", "call me", "sounds good", "please", "ok"];

/// ` words ` of `text`: lower case, every run of other characters one space
/// (apostrophes kept), so phrases match on word boundaries.
fn words(text: &str) -> String {
    let mut out = String::from(" ");
    for c in text.to_lowercase().chars() {
        if c.is_alphanumeric() || c == '\'' {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

fn says(text: &str, phrases: &[&str]) -> bool {
    let w = words(text);
    phrases.iter().any(|p| w.contains(&format!(" {p} ")))
}

pub fn offline(input: &AssessmentInput) -> Assessment {
    let Some(last) = input.outcomes.last() else {
        return Assessment { summary: "Not contacted: no iteration".into(), next_action: "None: not contacted".into(), follow_up: false };
    };
    let plural = |n: u32| if n == 1 { "" } else { "s" };
    let said = input.conversation.iter().rev().find(|(role, _)| role == "user").map(|(_, t)| t.as_str());
    let reached = said.is_some() || matches!(last.outcome.as_str(), "completed" | "replied");
    if reached {
        let iterations = input.outcomes.len() as u32;
        let mut summary = format!("Reached by {} ({} iteration{})", last.channel, iterations, plural(iterations));
        if let Some(text) = said {
            let quoted: String = text.chars().take(QUOTE_CHARS).collect();
            summary.push_str(&format!("; last said: \"{quoted}\""));
        }
        let (next, follow_up) = match said {
            Some(t) if says(t, &DECLINED) => ("Do not contact again: declined", false),
            Some(t) if says(t, &INTERESTED) => ("Follow up: interested", true),
            _ => ("Send a short recap of the conversation", false),
        };
        return Assessment { summary, next_action: next.into(), follow_up };
    }
    match last.outcome.as_str() {
        "cancelled" | "skipped" | "pending" | "in_progress" => Assessment { summary: format!("Not contacted: {}", last.outcome), next_action: "None: not contacted".into(), follow_up: false },
        outcome => Assessment {
            summary: format!("Not reached: {outcome} by {} after {} attempt{}", last.channel, last.attempts, plural(last.attempts)),
            next_action: "Try again on another channel or at another time".into(),
            follow_up: true,
        },
    }
}

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

fn remote(e: &Endpoint, input: &AssessmentInput) -> Result<Assessment, String> {
    parse(&post(e, request_body(&e.model, input))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::dispatcher_world::switchboard::provider::ai::AssessmentOutcome;

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
    fn offline_rules() {
        let a = offline(&input(&[("voice", "completed", 1)], &[("assistant", "Hello"), ("user", "Yes, please book me in.")]));
        assert_eq!((a.summary.as_str(), a.next_action.as_str(), a.follow_up), ("Reached by voice (1 iteration); last said: \"Yes, please book me in.\"", "Follow up: interested", true));
        let a = offline(&input(&[("voice", "no_answer", 2), ("chatapp", "replied", 1)], &[("user", "Not interested, stop messaging me")]));
        assert_eq!((a.next_action.as_str(), a.follow_up), ("Do not contact again: declined", false));
        assert!(a.summary.starts_with("Reached by chatapp (2 iterations)"));
        let a = offline(&input(&[("voice", "busy", 3)], &[]));
        assert_eq!((a.summary.as_str(), a.follow_up), ("Not reached: busy by voice after 3 attempts", true));
        let a = offline(&input(&[("voice", "completed", 1)], &[("user", "Hmm, the weather is nice")]));
        assert_eq!((a.next_action.as_str(), a.follow_up), ("Send a short recap of the conversation", false));
        assert!(!says("yesterday was fine", &INTERESTED), "whole words only");
        assert!(says("I don't call back", &DECLINED));
        let a = offline(&input(&[("voice", "cancelled", 0)], &[]));
        assert_eq!((a.summary.as_str(), a.follow_up), ("Not contacted: cancelled", false));
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
