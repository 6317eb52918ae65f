//! What the agent does inside a call: silence nudges, grounded turns.

use super::*;

#[test]
fn silence_nudges_once_then_ends_the_call() {
    // 6666: the customer never speaks (and stays on the line for 100 steps, 8 s here).
    let c = Calls::with_step(1, 5_000_000, 80);
    let agent = c.agent_with(json!({"firstGreeting": "Hello?", "nudgeAfterSilenceSeconds": 0.5, "disconnectAfterSilenceSeconds": 1.5}));
    let r = c.start(json!({"agentId": agent, "toNumber": "+15550026666"}));
    let id = r.assert_ok(202)["callId"].as_str().unwrap().to_string();
    let r = c.ended(&id);
    assert_eq!(outcome(&r).0, "completed");
    assert_eq!((r["call"]["endedBy"].as_str(), r["call"]["endReason"].as_str()), (Some("system"), Some("silence_timeout")));
    let said: Vec<&str> = r["transcript"].as_array().unwrap().iter().map(|t| t["text"].as_str().unwrap()).collect();
    assert_eq!(said, ["Hello?", "Are you still there?", "I haven't heard anything for a while, so I'll end the call now. Goodbye."]);
}

#[test]
fn voice_turns_answer_from_the_agents_sources() {
    let c = Calls::new(1, 5_000_000);
    let source = c.post("/api/v1/data-sources", json!({"name": "Price list", "class": "unstructured", "kind": "text", "content": "Our prices start at 10 euros a month."}))["dataSource"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = c.post(
        "/api/v1/agents",
        json!({"channel": "voice", "name": "Seller", "instructions": "Answer questions about prices.", "dataSourceIds": [source],
        "voiceSettings": {"firstGreeting": "Hello, this is Acme calling."}}),
    )["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = c.start(json!({"agentId": agent, "toNumber": "+15550001234"}));
    let id = r.assert_ok(202)["callId"].as_str().unwrap().to_string();
    let r = c.ended(&id);
    let turns = r["transcript"].as_array().unwrap();
    let asked = turns.iter().position(|t| t["text"] == json!("What are your prices?")).unwrap();
    assert_eq!(turns[asked + 1]["text"], json!("From Price list: Our prices start at 10 euros a month."), "{r}");
    // What the turn drew on is kept with it, and never shown.
    assert!(c.db(&format!("SELECT grounding_json FROM call_turns WHERE call_id = '{id}' AND grounding_json IS NOT NULL")).contains(&source));
    assert!(!r.to_string().contains("grounding"));
}
