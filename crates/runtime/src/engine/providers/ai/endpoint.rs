//! The OpenAI-compatible endpoint behind the `ai` interface, when `serve
//! --ai-endpoint URL --ai-model NAME` names one (and the business chose no
//! `ai` plugin): a POST of `{model, messages}` with the agent's instructions
//! as the `system` message followed by the history as `user` / `assistant`
//! messages; the reply is `choices[0].message.content`, or a call of one of
//! the tools offered: `lookup` (over the agent's structured sources) and,
//! for a turn of a phone call, `end_call` (its `message`, else the content,
//! is said before the call ends). `SWITCHBOARD_AI_API_KEY`, when set, is sent as `Authorization:
//! Bearer …` and never logged. The call runs inside the job's step, so it
//! has a timeout well under the job deadline. Embeddings (`serve
//! --ai-embeddings-model`) come from the same provider, whoever answers the
//! turns: one index, one model.

use crate::engine::bindings::dispatcher_world::switchboard::provider::ai;
pub use crate::knowledge::{Embeddings, DEFAULT_DIMENSIONS};
use std::sync::OnceLock;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);

/// The variable whose value, when set, is the provider's API key.
pub const API_KEY_VAR: &str = "SWITCHBOARD_AI_API_KEY";

/// The chat-completions endpoint (`--ai-endpoint`, `--ai-model`).
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    pub model: String,
    pub api_key: Option<String>,
}

/// The server's own AI, configured once by `serve` (host/src/main.rs) and
/// held by the provider registry: the endpoint that answers a business
/// that chose no `ai` plugin (without one the sandbox AI answers), and the
/// embeddings model (without one retrieval is full-text only).
#[derive(Default)]
pub struct ServerAi {
    endpoint: Option<Endpoint>,
    embeddings: Option<Embeddings>,
    /// One HTTP client for both, built on first use (in a job step, on a
    /// blocking thread: a blocking client must not be built on a tokio
    /// worker).
    client: OnceLock<reqwest::blocking::Client>,
}

impl ServerAi {
    pub fn new(endpoint: Option<Endpoint>, embeddings: Option<Embeddings>) -> ServerAi {
        ServerAi { endpoint, embeddings, client: OnceLock::new() }
    }

    /// The endpoint, when one is configured.
    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }

    /// The embeddings model, when one is configured.
    pub fn embeddings(&self) -> Option<&Embeddings> {
        self.embeddings.as_ref()
    }

    /// `ai.complete` at the endpoint.
    pub fn complete(&self, e: &Endpoint, instructions: &str, history: &[(String, String)]) -> Result<String, String> {
        let v = self.post(e, request_body(&e.model, instructions, history))?;
        match v.pointer("/choices/0/message/content").and_then(|c| c.as_str()) {
            Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
            _ => Err("ai endpoint response has no choices[0].message.content".to_string()),
        }
    }

    /// `ai.respond` at the endpoint: a reply, a `lookup` the model asks for
    /// first, or its `end_call` (only when offered).
    pub fn respond(&self, e: &Endpoint, instructions: &str, history: &[(String, String)], sources: &[ai::LookupSource], done: &[(ai::Lookup, String)], end_call: bool) -> Result<ai::Answer, String> {
        if sources.is_empty() && done.is_empty() && !end_call {
            return self.complete(e, instructions, history).map(ai::Answer::Text);
        }
        answer(&self.post(e, request_body_with_tools(&e.model, instructions, history, sources, done, end_call))?, end_call)
    }

    /// The vectors of `texts` from the embeddings model; none without one.
    pub(super) fn embed(&self, texts: &[String]) -> Result<Option<Vec<Vec<f32>>>, String> {
        let Some(e) = &self.embeddings else { return Ok(None) };
        if texts.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let v = self.post_to(&e.url, e.api_key.as_deref(), embeddings_body(e, texts), "embeddings")?;
        parse_embeddings(&v, texts.len(), e.dimensions).map(Some)
    }

    /// One chat-completions request; the answer as JSON.
    pub(super) fn post(&self, e: &Endpoint, body: serde_json::Value) -> Result<serde_json::Value, String> {
        self.post_to(&e.url, e.api_key.as_deref(), body, "ai")
    }

    /// One JSON POST to the AI provider (`what` names it in errors); the
    /// answer as JSON.
    fn post_to(&self, url: &str, api_key: Option<&str>, body: serde_json::Value, what: &str) -> Result<serde_json::Value, String> {
        let client = self.client.get_or_init(|| reqwest::blocking::Client::builder().timeout(TIMEOUT).redirect(reqwest::redirect::Policy::none()).build().expect("the AI HTTP client builds"));
        let mut req = client.post(url).header("content-type", "application/json");
        if let Some(k) = api_key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        let resp = match req.body(body.to_string()).send() {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => return Err(format!("{what} endpoint answered {}", r.status().as_u16())),
            Err(err) if err.is_timeout() => return Err(format!("{what} endpoint timed out")),
            Err(_) => return Err(format!("{what} endpoint unreachable")),
        };
        let text = resp.text().map_err(|_| format!("{what} endpoint response unreadable"))?;
        serde_json::from_str(&text).map_err(|_| format!("{what} endpoint sent invalid JSON"))
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

/// The embeddings URL beside a chat-completions URL: `…/chat/completions`
/// becomes `…/embeddings`.
pub fn embeddings_url(chat_url: &str) -> Option<String> {
    let base = chat_url.trim_end_matches('/').strip_suffix("/chat/completions")?;
    Some(format!("{base}/embeddings"))
}

/// The embeddings request body.
pub fn embeddings_body(e: &Embeddings, texts: &[String]) -> serde_json::Value {
    let mut body = serde_json::json!({"model": e.model, "input": texts});
    if e.ask_dimensions {
        body["dimensions"] = e.dimensions.into();
    }
    body
}

/// Reads an embeddings answer: `data[i].embedding` for each input, placed by
/// `data[i].index` when given, each of the configured length.
pub fn parse_embeddings(v: &serde_json::Value, count: usize, dimensions: u32) -> Result<Vec<Vec<f32>>, String> {
    let data = v.get("data").and_then(|d| d.as_array()).ok_or("embeddings endpoint response has no data")?;
    if data.len() != count {
        return Err(format!("embeddings endpoint answered {} vectors for {count} texts", data.len()));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; count];
    for (i, item) in data.iter().enumerate() {
        let at = item.get("index").and_then(|x| x.as_u64()).map_or(i, |x| x as usize);
        let vector: Vec<f32> = item
            .get("embedding")
            .and_then(|e| e.as_array())
            .and_then(|e| e.iter().map(|x| x.as_f64().map(|x| x as f32)).collect())
            .ok_or("embeddings endpoint sent an embedding that is not a list of numbers")?;
        if vector.len() != dimensions as usize {
            return Err(format!("embeddings endpoint answered {} dimensions, {dimensions} are configured", vector.len()));
        }
        match out.get_mut(at) {
            Some(slot @ None) => *slot = Some(vector),
            _ => return Err("embeddings endpoint sent a bad or repeated index".to_string()),
        }
    }
    Ok(out.into_iter().map(|v| v.expect("every slot filled: as many items as texts, no index repeated")).collect())
}

/// The `end_call` tool of a turn of a phone call.
fn end_call_tool() -> serde_json::Value {
    serde_json::json!({
        "type": "function",
        "function": {
            "name": "end_call",
            "description": "Ends the phone call after your last words have been said. Call it when the conversation is over.",
            "parameters": {
                "type": "object",
                "properties": {"message": {"type": "string", "description": "Your last words, such as a short goodbye."}}
            }
        }
    })
}

/// The chat-completions request body with the tools of the turn (`lookup`
/// over `sources`, `end_call` for a call) and this turn's earlier lookups
/// (an assistant message with the tool call, then the tool's answer, each).
pub fn request_body_with_tools(model: &str, instructions: &str, history: &[(String, String)], sources: &[ai::LookupSource], done: &[(ai::Lookup, String)], end_call: bool) -> serde_json::Value {
    let mut body = request_body(model, instructions, history);
    let mut tools = Vec::new();
    if !sources.is_empty() || !done.is_empty() {
        let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
        let fields: Vec<String> = sources.iter().map(|s| format!("{}: {}", s.name, s.fields.join(", "))).collect();
        tools.push(serde_json::json!({
            "type": "function",
            "function": {
                "name": "lookup",
                "description": format!("Finds the rows of a structured data source whose field equals a value. Fields by source: {}.", fields.join("; ")),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "source": {"type": "string", "enum": names},
                        "field": {"type": "string"},
                        "value": {"type": "string"}
                    },
                    "required": ["source", "field", "value"]
                }
            }
        }));
    }
    if end_call {
        tools.push(end_call_tool());
    }
    body["tools"] = serde_json::Value::Array(tools);
    let messages = body["messages"].as_array_mut().expect("messages");
    for (call, rows) in done {
        let arguments = serde_json::json!({"source": call.source, "field": call.field, "value": call.value}).to_string();
        messages.push(serde_json::json!({"role": "assistant", "content": null,
            "tool_calls": [{"id": call.id, "type": "function", "function": {"name": "lookup", "arguments": arguments}}]}));
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": call.id, "content": rows}));
    }
    body
}

/// Reads a chat-completions answer that may call a tool.
pub fn answer(v: &serde_json::Value, end_call: bool) -> Result<ai::Answer, String> {
    let content = v.pointer("/choices/0/message/content").and_then(|c| c.as_str()).map(str::trim).filter(|c| !c.is_empty());
    if let Some(call) = v.pointer("/choices/0/message/tool_calls/0") {
        let args: serde_json::Value =
            call.pointer("/function/arguments").and_then(|a| a.as_str()).and_then(|a| serde_json::from_str(a).ok()).ok_or("ai endpoint sent a tool call without JSON arguments")?;
        let text = |k: &str| args.get(k).and_then(|v| v.as_str()).map(String::from);
        if end_call && call.pointer("/function/name").and_then(|n| n.as_str()) == Some("end_call") {
            // Its last words: the tool's message, else the content beside the call.
            let said = text("message").filter(|m| !m.trim().is_empty()).or(content.map(String::from)).unwrap_or_default();
            return Ok(ai::Answer::EndCall(said));
        }
        return match (text("source"), text("field"), text("value")) {
            (Some(source), Some(field), Some(value)) => Ok(ai::Answer::Lookup(ai::Lookup { id: call.get("id").and_then(|i| i.as_str()).unwrap_or("call").to_string(), source, field, value })),
            _ => Err("ai endpoint sent a lookup without source, field and value".to_string()),
        };
    }
    match content {
        Some(s) => Ok(ai::Answer::Text(s.to_string())),
        None => Err("ai endpoint response has no choices[0].message.content".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn tool_requests_carry_the_lookup_tool_and_earlier_calls() {
        let prices = vec![ai::LookupSource { name: "Prices".into(), fields: vec!["sku".into()] }];
        let call = ai::Lookup { id: "c1".into(), source: "Prices".into(), field: "sku".into(), value: "B2".into() };
        let b = request_body_with_tools("m", "be nice", &h(&[("user", "B2?")]), &prices, &[(call, "sku: B2".into())], false);
        assert_eq!(b["tools"][0]["function"]["name"], "lookup");
        assert_eq!(b["tools"].as_array().unwrap().len(), 1, "end_call only for a call");
        assert_eq!(b["tools"][0]["function"]["parameters"]["properties"]["source"]["enum"], serde_json::json!(["Prices"]));
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m[2]["tool_calls"][0]["id"], "c1");
        assert_eq!(m[3], serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": "sku: B2"}));
    }

    #[test]
    fn a_call_turn_offers_end_call_and_reads_its_call() {
        let b = request_body_with_tools("m", "be brief", &h(&[("user", "bye")]), &[], &[], true);
        let names: Vec<&str> = b["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["end_call"]);
        let called = |args: &str, content: serde_json::Value| {
            serde_json::json!({"choices": [{"message": {"content": content,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "end_call", "arguments": args}}]}}]})
        };
        let said = |a: ai::Answer| match a {
            ai::Answer::EndCall(t) => t,
            _ => panic!("not an end_call"),
        };
        assert_eq!(said(answer(&called(r#"{"message":"Goodbye!"}"#, serde_json::Value::Null), true).unwrap()), "Goodbye!");
        assert_eq!(said(answer(&called("{}", "Thanks, bye.".into()), true).unwrap()), "Thanks, bye.");
        assert_eq!(said(answer(&called("{}", serde_json::Value::Null), true).unwrap()), "");
        // Not offered: an end_call is no lookup, and not obeyed.
        assert!(answer(&called("{}", serde_json::Value::Null), false).is_err());
        let text = serde_json::json!({"choices": [{"message": {"content": "Sure."}}]});
        assert!(matches!(answer(&text, true).unwrap(), ai::Answer::Text(t) if t == "Sure."));
    }

    #[test]
    fn embeddings_requests_and_answers() {
        assert_eq!(embeddings_url("http://h/v1/chat/completions").as_deref(), Some("http://h/v1/embeddings"));
        assert_eq!(embeddings_url("http://h/v1/chat/completions/").as_deref(), Some("http://h/v1/embeddings"));
        assert_eq!(embeddings_url("http://h/complete"), None);
        let e = Embeddings { url: String::new(), model: "m".into(), dimensions: 2, ask_dimensions: false, api_key: None };
        assert_eq!(embeddings_body(&e, &["a".into()]), serde_json::json!({"model": "m", "input": ["a"]}));
        assert_eq!(embeddings_body(&Embeddings { ask_dimensions: true, ..e.clone() }, &[])["dimensions"], 2);
        let answer = serde_json::json!({"data": [{"index": 1, "embedding": [0.5, 1]}, {"index": 0, "embedding": [1, 0]}]});
        assert_eq!(parse_embeddings(&answer, 2, 2).unwrap(), vec![vec![1.0, 0.0], vec![0.5, 1.0]]);
        assert!(parse_embeddings(&answer, 3, 2).unwrap_err().contains("2 vectors for 3"));
        assert!(parse_embeddings(&answer, 2, 3).unwrap_err().contains("2 dimensions, 3 are configured"));
        let repeated = serde_json::json!({"data": [{"index": 0, "embedding": [1, 0]}, {"index": 0, "embedding": [1, 0]}]});
        assert!(parse_embeddings(&repeated, 2, 2).is_err());
        assert!(parse_embeddings(&serde_json::json!({"data": [{"embedding": "x"}]}), 1, 2).is_err());
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
