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

/// An OpenAI-compatible endpoint for voice turns: the customer's goodbye is
/// answered by a call of the `end_call` tool (with its last words), anything
/// else with text; every request body is handed over.
fn fake_voice_model() -> (String, std::sync::mpsc::Receiver<Value>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let stream = stream.unwrap();
            let Some(request) = read_request(&stream) else { continue };
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            let last = body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap_or_default().to_string();
            let message = if last.contains("Goodbye") {
                json!({"role": "assistant", "content": null,
                    "tool_calls": [{"id": "call-9", "type": "function", "function": {"name": "end_call", "arguments": "{\"message\":\"It was a pleasure. Bye now.\"}"}}]})
            } else {
                json!({"role": "assistant", "content": "Noted."})
            };
            answer_json(&stream, &json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}).to_string());
            if tx.send(body).is_err() {
                return;
            }
        }
    });
    (url, rx)
}

#[test]
fn a_model_ends_the_call_by_the_end_call_tool() {
    let (url, rx) = fake_voice_model();
    let c = Calls::with_flags(1, 5_000_000, 20, &["--ai-endpoint", &url, "--ai-model", "test-model"]);
    let id = c.call("+15550001234");
    let r = c.ended(&id);
    assert_eq!(outcome(&r).0, "completed");
    assert_eq!((r["call"]["endedBy"].as_str(), r["call"]["endReason"].as_str()), (Some("agent"), Some("agent_ended_call")), "{r}");
    let said: Vec<&str> = r["transcript"].as_array().unwrap().iter().map(|t| t["text"].as_str().unwrap()).collect();
    assert_eq!(said.last(), Some(&"It was a pleasure. Bye now."), "the tool's message is the last thing said: {said:?}");
    assert!(said.iter().all(|t| !t.contains("end_call")), "{said:?}");
    // Every voice turn offered the tool in the OpenAI-compatible shape, and
    // the instructions name it.
    let first = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    let tools: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["end_call"]);
    assert_eq!(first["tools"][0]["type"], json!("function"));
    assert!(first["messages"][0]["content"].as_str().unwrap().contains("call the end_call tool"), "{first}");
}

#[test]
fn speaking_over_the_greeting_follows_the_interrupt_and_repeat_settings() {
    // 8888: the customer says "Hello? Who is this?" over the greeting's
    // second half, which is its second sentence here.
    let c = Calls::new(3, 10_000_000);
    let greeting = "Hi. This is Acme calling about your order today.";
    let repeated = "This is Acme calling about your order today.";
    let run = |settings: Value| {
        let mut settings = settings;
        settings["firstGreeting"] = json!(greeting);
        let agent = c.agent_with(settings);
        let id = c.start(json!({"agentId": agent, "toNumber": "+15550008888"})).assert_ok(202)["callId"].as_str().unwrap().to_string();
        let r = c.ended(&id);
        assert_eq!(outcome(&r).0, "completed", "{r}");
        let turns: Vec<(String, String)> = r["transcript"].as_array().unwrap().iter().map(|t| (t["speaker"].as_str().unwrap().to_string(), t["text"].as_str().unwrap().to_string())).collect();
        assert_eq!(turns[0], ("assistant".to_string(), greeting.to_string()));
        assert!(turns.contains(&("customer".to_string(), "Hello? Who is this?".to_string())), "{turns:?}");
        // The assistant's first reply: to the words spoken over the greeting
        // (and, on a slow step, to the next line with them).
        let answer = turns[1..].iter().find(|(who, _)| who == "assistant").map(|(_, t)| t.clone());
        (answer.unwrap_or_else(|| panic!("no reply: {turns:?}")), turns)
    };
    // Interruptible and repeating: the sentence cut off follows the answer.
    let (answer, turns) = run(json!({"allowGreetingInterrupt": true, "repeatInterruptedSentence": true}));
    assert!(answer.starts_with("You said: ") && answer.ends_with(&format!("How can I help further? {repeated}")), "{answer}");
    assert_eq!(turns.iter().filter(|(_, t)| t.contains(repeated)).count(), 2, "said again once: {turns:?}");
    // Interruptible, not repeating: the answer alone.
    let (answer, turns) = run(json!({"allowGreetingInterrupt": true, "repeatInterruptedSentence": false}));
    assert!(answer.starts_with("You said: ") && answer.ends_with("How can I help further?"), "{answer}");
    assert_eq!(turns.iter().filter(|(_, t)| t.contains(repeated)).count(), 1, "only the greeting says it: {turns:?}");
    // Not interruptible (the default): the greeting played on, the input
    // was held until it had, so nothing was cut off to repeat.
    let (answer, turns) = run(json!({"repeatInterruptedSentence": true}));
    assert!(!answer.contains(repeated), "{answer}");
    assert_eq!(turns.iter().filter(|(_, t)| t.contains(repeated)).count(), 1, "{turns:?}");
}

#[test]
fn an_ending_turn_is_said_to_the_end_before_the_carrier_hangs_up() {
    let c = Calls::new(1, 5_000_000);
    let id = c.call("+15550001234");
    let r = c.ended(&id);
    assert_eq!((r["call"]["endedBy"].as_str(), r["call"]["endReason"].as_str()), (Some("agent"), Some("agent_ended_call")));
    let turns = r["transcript"].as_array().unwrap();
    let last = turns.last().unwrap();
    assert_eq!((last["speaker"].as_str(), last["text"].as_str()), (Some("assistant"), Some("Thank you for your time. Goodbye.")));
    // Its whole audio played (the carrier's 100% receipt gave its end), after
    // every turn before it, and the connected time covers it.
    let end = last["audioEndOffsetMs"].as_i64().expect("the goodbye played to its end");
    assert!(turns.iter().all(|t| t["audioEndOffsetMs"].as_i64().unwrap() <= end), "{turns:?}");
    assert!(r["call"]["durationSeconds"].as_i64().unwrap() * 1000 >= end, "{r}");
}

#[test]
fn speech_reported_after_the_greetings_receipts_still_interrupts_it() {
    // 9999: as 8888, but the carrier reports the words spoken over the
    // greeting's second half in a poll after the greeting's receipts.
    let c = Calls::new(1, 10_000_000);
    let agent = c.agent_with(json!({"firstGreeting": "Hi. This is Acme calling about your order today.", "allowGreetingInterrupt": true, "repeatInterruptedSentence": true}));
    let id = c.start(json!({"agentId": agent, "toNumber": "+15550009999"})).assert_ok(202)["callId"].as_str().unwrap().to_string();
    let r = c.ended(&id);
    let turns: Vec<(String, String)> = r["transcript"].as_array().unwrap().iter().map(|t| (t["speaker"].as_str().unwrap().to_string(), t["text"].as_str().unwrap().to_string())).collect();
    let asked = turns.iter().position(|t| t == &("customer".to_string(), "Hello? Who is this?".to_string())).unwrap_or_else(|| panic!("{turns:?}"));
    let answer = &turns[asked + 1..].iter().find(|(who, _)| who == "assistant").unwrap().1;
    assert!(answer.starts_with("You said: ") && answer.ends_with("How can I help further? This is Acme calling about your order today."), "{answer}");
}
