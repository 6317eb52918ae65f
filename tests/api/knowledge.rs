//! Grounded agents (issue 19, full-text part): an auto-reply answers from
//! the passages of the agent's own, active data sources, of their active
//! versions only, and nothing of another business or another agent's
//! sources ever reaches its prompt.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;

struct Biz {
    t: Tenant,
    pnid: &'static str,
}

fn k<'a>(s: &'a Server, b: &'a Biz) -> Req<'a> {
    s.as_key(&b.t.key)
}

fn create(s: &Server, b: &Biz, path: &str, mut body: Value) -> Value {
    body["businessId"] = json!(b.t.business);
    let r = k(s, b).fresh().post(path, &body);
    assert!(r.status < 300, "{path}: {}", r.text);
    r.data().clone()
}

/// A business with a connected number and an agent assigned to it with
/// auto-reply on, listing `sources`.
fn business(s: &Server, dir: &Path, pnid: &'static str, sources: &[&str]) -> (Biz, String) {
    let b = Biz { t: tenant(dir, "all"), pnid };
    admin(dir, &["channel", "connect", "--business", &b.t.business, "--channel", "chatapp", "--phone-number-id", pnid]);
    let agent = agent(s, &b, sources);
    (b, agent)
}

fn agent(s: &Server, b: &Biz, sources: &[&str]) -> String {
    let agent = create(s, b, "/api/v1/agents", json!({"channel": "chatapp", "name": "Desk", "instructions": "Answer customers.", "dataSourceIds": sources}))["agent"]["id"]
        .as_str().unwrap().to_string();
    let body = json!({"businessId": b.t.business, "channel": "chatapp", "phoneNumberId": b.pnid, "aiAgentId": agent, "autoReplyEnabled": true, "humanHandoffActive": false});
    k(s, b).patch("/api/v1/channels/assignments", &body).assert_ok(200);
    agent
}

fn unstructured(s: &Server, b: &Biz, name: &str, content: &str) -> String {
    create(s, b, "/api/v1/data-sources", json!({"name": name, "class": "unstructured", "kind": "text", "content": content}))["dataSource"]["id"].as_str().unwrap().to_string()
}

/// Uploads `csv` into `source` and waits for it to become active.
fn upload(s: &Server, b: &Biz, source: &str, csv: &str) {
    let d = create(s, b, "/api/v1/data-sources/upload", json!({"dataSourceId": source, "fileName": "prices.csv", "format": "csv", "contentBase64": b64(csv.as_bytes())}));
    let id = d["ingestionId"].as_str().unwrap().to_string();
    poll("the version to be active", || {
        let r = k(s, b).get(&format!("/api/v1/data-sources/ingestions?businessId={}&ingestionId={id}", b.t.business));
        let stage = r.data()["ingestion"]["stage"].as_str().unwrap_or("").to_string();
        assert!(!["failed", "needs_review"].contains(&stage.as_str()), "{}", r.text);
        (stage == "active").then_some(())
    });
}

/// Sends an inbound message and returns the agent's reply (text and what it drew on).
fn ask(dir: &Path, b: &Biz, text: &str) -> (String, String) {
    let r = admin(dir, &["sandbox", "inbound", "--phone-number-id", b.pnid, "--from", "+15550009876", "--text", text]);
    wait_done(dir, r["jobId"].as_str().unwrap());
    let biz = &b.t.business;
    poll("the auto-reply", || {
        let ids = sql(dir, &format!("SELECT id FROM jobs WHERE business_id = '{biz}' AND kind = 'messaging.autoreply' AND state NOT IN ('done', 'dead')"));
        ids.trim().is_empty().then_some(())
    });
    let row = sql(dir, &format!("SELECT text, IFNULL(grounding_json, '-') FROM messages WHERE business_id = '{biz}' AND direction = 'outbound' ORDER BY created_at DESC, id DESC LIMIT 1"));
    let (text, used) = row.trim().split_once('|').unwrap();
    (text.to_string(), used.to_string())
}

#[test]
fn auto_replies_answer_from_the_agents_own_active_sources() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let (a, _) = business(&s, &dir.0, "pn-know-a", &[]);
    let hours = unstructured(&s, &a, "Opening hours", "We are open 9 to 5 on weekdays.\n\nParking is free behind the shop.");
    let prices = create(&s, &a, "/api/v1/data-sources", json!({"name": "Prices", "class": "structured", "kind": "table"}))["dataSource"]["id"].as_str().unwrap().to_string();
    upload(&s, &a, &prices, "sku,name,price\nA1,Widget,10\nB2,Gadget,20\n");
    let a_agent = agent(&s, &a, &[&hours, &prices]);
    let _ = a_agent;

    // From an unstructured source's passage, and from a structured row, naming the source.
    let (reply, used) = ask(&dir.0, &a, "What are your opening hours?");
    assert_eq!(reply, "From Opening hours: We are open 9 to 5 on weekdays.");
    assert!(used.contains(&hours), "what the reply drew on is recorded: {used}");
    assert_eq!(ask(&dir.0, &a, "Is parking free?").0, "From Opening hours: Parking is free behind the shop.");
    assert_eq!(ask(&dir.0, &a, "How much is the gadget?").0, "From Prices: sku: B2; name: Gadget; price: 20");
    // A code is looked up exactly (the `lookup` tool on the structured source).
    let (reply, used) = ask(&dir.0, &a, "How much is B2?");
    assert_eq!(reply, "From Prices (sku = B2): sku: B2; name: Gadget; price: 20");
    assert!(used.contains(&prices) && used.contains("\"item\":2"), "the row is recorded: {used}");
    assert!(ask(&dir.0, &a, "How much is Z9?").0.starts_with("Thanks for your message"), "no row, no made-up answer");
    // Nothing matches: the ungrounded reply.
    assert!(ask(&dir.0, &a, "Do you sell bicycles?").0.starts_with("Thanks for your message"));

    // A new version switches retrieval; the old rows are no longer found.
    upload(&s, &a, &prices, "sku,name,price\nA1,Widget,12\n");
    assert_eq!(ask(&dir.0, &a, "How much is the widget?").0, "From Prices: sku: A1; name: Widget; price: 12");
    assert!(ask(&dir.0, &a, "How much is the gadget?").0.starts_with("Thanks for your message"));
    // New content replaces the passages; an archived source is not used.
    k(&s, &a).fresh().patch("/api/v1/data-sources", &json!({"businessId": a.t.business, "dataSourceId": hours, "content": "We are open 8 to 8 every day."})).assert_ok(200);
    assert_eq!(ask(&dir.0, &a, "What are your opening hours?").0, "From Opening hours: We are open 8 to 8 every day.");
    k(&s, &a).fresh().delete("/api/v1/data-sources", &json!({"businessId": a.t.business, "dataSourceId": hours})).assert_ok(200);
    assert!(ask(&dir.0, &a, "What are your opening hours?").0.starts_with("Thanks for your message"));
}

#[test]
fn no_passage_crosses_a_business_or_an_agent() {
    let dir = DataDir::new();
    let (url, rx) = crate::autoreply::fake_completions("ok");
    let s = Server::start_with(&dir.0, &["--ai-endpoint", &url, "--ai-model", "test-model"]);
    // Business A: a source of opening hours, not listed by the agent on its number.
    let (a, _) = business(&s, &dir.0, "pn-iso-a", &[]);
    unstructured(&s, &a, "Hours A", "Business A opens at 7 on opening days.");
    // Business B: the same question, and its own source listed.
    let (b, _) = business(&s, &dir.0, "pn-iso-b", &[]);
    let b_hours = unstructured(&s, &b, "Hours B", "Business B opens at noon on opening days.");
    agent(&s, &b, &[&b_hours]);
    ask(&dir.0, &b, "What are your opening hours?");
    let (_, request) = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    let prompt = request.to_string();
    assert!(prompt.contains("Business B opens at noon"), "B's own passage reaches B's prompt: {prompt}");
    assert!(!prompt.contains("Business A"), "nothing of A reaches B's prompt: {prompt}");
    // A's agent lists no source: its prompt carries no passage (the fake
    // endpoint answered once; the offline path is not taken with an endpoint).
    let (url2, rx2) = crate::autoreply::fake_completions("ok");
    drop(s);
    let s = Server::start_with(&dir.0, &["--ai-endpoint", &url2, "--ai-model", "test-model"]);
    ask(&dir.0, &a, "What are your opening hours?");
    let (_, request) = rx2.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    let prompt = request.to_string();
    assert!(!prompt.contains("opens at"), "an agent that lists no source sees none: {prompt}");
    drop(s);
}

/// An OpenAI-compatible endpoint that answers a `lookup` tool call first and
/// then `reply`, and hands over each request body it received.
fn fake_tool_endpoint(call: Value, reply: &'static str) -> (String, std::sync::mpsc::Receiver<Value>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for n in 0..2 {
            let (stream, _) = listener.accept().unwrap();
            let request = read_request(&stream).unwrap();
            let message = if n == 0 {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call-1", "type": "function", "function": {"name": "lookup", "arguments": call.to_string()}}]})
            } else {
                json!({"role": "assistant", "content": reply})
            };
            let answer = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}).to_string();
            answer_json(&stream, &answer);
            tx.send(serde_json::from_slice(&request.body).unwrap()).unwrap();
        }
    });
    (url, rx)
}

#[test]
fn a_model_looks_rows_up_through_the_lookup_tool() {
    let dir = DataDir::new();
    let (url, rx) = fake_tool_endpoint(json!({"source": "Prices", "field": "name", "value": "gadget"}), "The Gadget costs 20.");
    let s = Server::start_with(&dir.0, &["--ai-endpoint", &url, "--ai-model", "test-model"]);
    let (a, _) = business(&s, &dir.0, "pn-tool-a", &[]);
    let prices = create(&s, &a, "/api/v1/data-sources", json!({"name": "Prices", "class": "structured", "kind": "table"}))["dataSource"]["id"].as_str().unwrap().to_string();
    upload(&s, &a, &prices, "sku,name,price\nA1,Widget,10\nB2,Gadget,20\n");
    agent(&s, &a, &[&prices]);
    let (reply, used) = ask(&dir.0, &a, "What does a gadget cost?");
    assert_eq!(reply, "The Gadget costs 20.");
    assert!(used.contains("\"item\":2"), "{used}");
    let first = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    assert_eq!(first["tools"][0]["function"]["name"], "lookup");
    assert_eq!(first["tools"][0]["function"]["parameters"]["properties"]["source"]["enum"], json!(["Prices"]));
    let second = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    let messages = second["messages"].as_array().unwrap();
    let tool = messages.last().unwrap();
    assert_eq!((tool["role"].as_str(), tool["tool_call_id"].as_str()), (Some("tool"), Some("call-1")));
    assert_eq!(tool["content"], json!("sku: B2; name: Gadget; price: 20"), "the row found, by an exact, case-insensitive match");
}
