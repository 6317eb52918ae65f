//! The host side of the `ai` interface: replies for agent turns.
//!
//! Embedded default (no flags): a deterministic offline responder, no network.
//! Its reply is always
//!
//! ```text
//! Thanks for your message: "<last customer text, at most 200 characters>". An agent will follow up.
//! ```
//!
//! (without a customer message: `Thanks for your message. An agent will follow up.`).
//!
//! With `serve --ai-endpoint URL --ai-model NAME` the reply comes from an
//! OpenAI-compatible chat-completions endpoint: a POST of `{model, messages}`
//! with the agent's instructions as the `system` message followed by the
//! history as `user` / `assistant` messages; the reply is
//! `choices[0].message.content`. `SWITCHBOARD_AI_API_KEY`, when set, is sent as
//! `Authorization: Bearer …` and never logged. The call runs inside the job's
//! transaction, so it has a timeout well under the job deadline.

use std::sync::OnceLock;
use std::time::Duration;

/// At most this many characters of the customer's text are quoted.
pub const QUOTE_CHARS: usize = 200;
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
}

static ENDPOINT: OnceLock<Endpoint> = OnceLock::new();

/// Configures the remote endpoint (`serve` flags); without it the offline
/// responder answers.
pub fn configure(url: &str, model: &str) {
    let api_key = std::env::var("SWITCHBOARD_AI_API_KEY").ok().filter(|k| !k.is_empty());
    let _ = ENDPOINT.set(Endpoint { url: url.to_string(), model: model.to_string(), api_key });
}

/// `ai.complete`: the reply for `history` (oldest first, (role, text)).
pub fn complete(instructions: &str, history: &[(String, String)]) -> Result<String, String> {
    match ENDPOINT.get() {
        None => Ok(offline(instructions, history)),
        Some(e) => remote(e, instructions, history),
    }
}

/// The marker with which a voice turn ends the call (the voice area's
/// instructions name it; see `components/voice/src/runtime.rs`).
const END_CALL: &str = "[end_call]";

/// The heading under which an agent turn's instructions carry the passages
/// of its data sources, one `[Source name] text` line each (written by
/// `components/guest/src/knowledge.rs`).
const KNOWLEDGE: &str = "\n\nKnowledge from the business's data sources";

/// The first passage of the instructions' knowledge section: (source, text).
fn first_passage(instructions: &str) -> Option<(&str, &str)> {
    let section = &instructions[instructions.find(KNOWLEDGE)? + KNOWLEDGE.len()..];
    let line = section.lines().find(|l| l.starts_with('['))?;
    let (source, text) = line[1..].split_once("] ")?;
    Some((source, text))
}

/// The deterministic offline responder. Grounded like a model would be:
/// when the instructions carry passages of the agent's sources, it answers
/// from the best one and names its source. On a voice call (instructions
/// that name the end-call marker) a customer's goodbye is answered with one
/// and the marker, so sandbox calls end the way a model would end them.
pub fn offline(instructions: &str, history: &[(String, String)]) -> String {
    let last = history.iter().rev().find(|(role, _)| role == "user");
    let says_bye = last.is_some_and(|(_, text)| text.to_lowercase().contains("bye"));
    if let Some((source, text)) = first_passage(instructions).filter(|_| !says_bye) {
        return format!("From {source}: {text}");
    }
    if instructions.contains(END_CALL) {
        return match last {
            Some(_) if says_bye => format!("Thank you for your time. Goodbye. {END_CALL}"),
            Some((_, text)) => {
                let quoted: String = text.chars().take(QUOTE_CHARS).collect();
                format!("You said: \"{quoted}\". How can I help further?")
            }
            None => "Hello, thank you for taking my call.".to_string(),
        };
    }
    match last {
        Some((_, text)) => {
            let quoted: String = text.chars().take(QUOTE_CHARS).collect();
            format!("Thanks for your message: \"{quoted}\". An agent will follow up.")
        }
        None => "Thanks for your message. An agent will follow up.".to_string(),
    }
}

/// The chat-completions request body.
pub fn request_body(model: &str, instructions: &str, history: &[(String, String)]) -> serde_json::Value {
    let mut messages = vec![serde_json::json!({"role": "system", "content": instructions})];
    for (role, text) in history {
        let role = if role == "assistant" { "assistant" } else { "user" };
        messages.push(serde_json::json!({"role": role, "content": text}));
    }
    serde_json::json!({"model": model, "messages": messages})
}

fn remote(e: &Endpoint, instructions: &str, history: &[(String, String)]) -> Result<String, String> {
    static CLIENT: OnceLock<reqwest::blocking::Client> = OnceLock::new();
    let client = CLIENT.get_or_init(|| {
        reqwest::blocking::Client::builder().timeout(TIMEOUT).redirect(reqwest::redirect::Policy::none()).build().expect("the AI HTTP client builds")
    });
    let mut req = client.post(&e.url).header("content-type", "application/json");
    if let Some(k) = &e.api_key {
        req = req.header("authorization", format!("Bearer {k}"));
    }
    let resp = match req.body(request_body(&e.model, instructions, history).to_string()).send() {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => return Err(format!("ai endpoint answered {}", r.status().as_u16())),
        Err(err) if err.is_timeout() => return Err("ai endpoint timed out".to_string()),
        Err(_) => return Err("ai endpoint unreachable".to_string()),
    };
    let text = resp.text().map_err(|_| "ai endpoint response unreadable".to_string())?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|_| "ai endpoint sent invalid JSON".to_string())?;
    match v.pointer("/choices/0/message/content").and_then(|c| c.as_str()) {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        _ => Err("ai endpoint response has no choices[0].message.content".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn offline_quotes_the_last_customer_text() {
        let r = offline("", &h(&[("user", "first"), ("assistant", "x"), ("user", "opening hours?")]));
        assert_eq!(r, "Thanks for your message: \"opening hours?\". An agent will follow up.");
        let long = "é".repeat(300);
        assert_eq!(offline("", &h(&[("user", &long)])), format!("Thanks for your message: \"{}\". An agent will follow up.", "é".repeat(200)));
        assert_eq!(offline("", &[]), "Thanks for your message. An agent will follow up.");
    }

    #[test]
    fn offline_voice_turns_end_the_call_on_a_goodbye() {
        let voice = "Be brief. When done, end your reply with [end_call].";
        assert_eq!(offline(voice, &[]), "Hello, thank you for taking my call.");
        assert!(offline(voice, &h(&[("user", "Could you tell me more?")])).starts_with("You said:"));
        assert!(offline(voice, &h(&[("user", "Thanks, that's all. Goodbye.")])).ends_with("[end_call]"));
        assert!(!offline("", &h(&[("user", "Goodbye.")])).contains("[end_call]"), "chat replies never carry the marker");
    }

    #[test]
    fn offline_replies_answer_from_the_first_passage() {
        let grounded = "Answer.\n\nKnowledge from the business's data sources (answer from it when it helps, and say which source):\n[Prices] Name: Widget; Price: 10\n[Hours] Open 9 to 5.";
        assert_eq!(offline(grounded, &h(&[("user", "How much is the widget?")])), "From Prices: Name: Widget; Price: 10");
        assert_eq!(offline("Answer.", &h(&[("user", "How much is the widget?")])), "Thanks for your message: \"How much is the widget?\". An agent will follow up.");
    }

    #[test]
    fn request_shape() {
        let b = request_body("m", "be nice", &h(&[("user", "hi"), ("assistant", "hello")]));
        assert_eq!(
            b,
            serde_json::json!({"model": "m", "messages": [
                {"role": "system", "content": "be nice"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
        );
    }
}

use crate::engine::dispatcher_world::switchboard::platform::ai;
use crate::engine::imports::RequestState;

/// This provider interface in the registry: answered natively (the offline
/// responder or the configured endpoint), no component.
pub fn add_to_linker(linker: &mut wasmtime::component::Linker<RequestState>) -> anyhow::Result<()> {
    Ok(ai::add_to_linker::<_, wasmtime::component::HasSelf<_>>(linker, |s| s)?)
}

impl ai::Host for RequestState {
    fn complete(&mut self, instructions: String, history: Vec<(String, String)>) -> Result<String, String> {
        complete(&instructions, &history)
    }
}
