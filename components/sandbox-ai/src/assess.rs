//! The offline assessor: one contact's conclusion for a campaign summary
//! run, on these rules over the contact's final outcome (its last
//! iteration) and the last thing the contact said or wrote:
//!
//! | the contact | summary | next action | follow-up |
//! |---|---|---|---|
//! | declined ("not interested", "stop", "no thanks", "unsubscribe", "don't call") | `Reached by <channel> …; last said: "…"` | `Do not contact again: declined` | no |
//! | interested ("yes", "interested", "sure", "book", "call me", "sounds good", "please") | same | `Follow up: interested` | yes |
//! | reached otherwise | same | `Send a short recap of the conversation` | no |
//! | never reached (no_answer, busy, failed, sent, delivered, read) | `Not reached: <outcome> by <channel> after N attempt(s)` | `Try again on another channel or at another time` | yes |
//! | never contacted (cancelled, skipped, pending) | `Not contacted: <outcome>` | `None: not contacted` | no |

use crate::bindings::exports::switchboard::provider::ai::{Assessment, AssessmentInput};

/// Characters of the contact's words quoted by the summary.
const QUOTE_CHARS: usize = 160;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::exports::switchboard::provider::ai::AssessmentOutcome;

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
}
