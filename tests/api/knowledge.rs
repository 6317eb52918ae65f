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
    let agent =
        create(s, b, "/api/v1/agents", json!({"channel": "chatapp", "name": "Desk", "instructions": "Answer customers.", "dataSourceIds": sources}))["agent"]["id"].as_str().unwrap().to_string();
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
    // Without declared fields the first column is the lookup field.
    let listed = k(&s, &a).get(&format!("/api/v1/data-sources?businessId={}", a.t.business));
    let source = listed.data()["dataSources"].as_array().unwrap().iter().find(|d| d["id"] == prices.as_str()).unwrap().clone();
    let lookups: Vec<(&str, bool)> = source["fields"].as_array().unwrap().iter().map(|f| (f["key"].as_str().unwrap(), f["lookup"].as_bool().unwrap())).collect();
    assert_eq!(lookups, [("sku", true), ("name", false), ("price", false)]);
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
    // Declared lookup fields: the code and the name, not the price.
    let fields = json!([
        {"key": "sku", "label": "SKU", "type": "text", "lookup": true},
        {"key": "name", "label": "Name", "type": "text", "lookup": true},
        {"key": "price", "label": "Price", "type": "number"}
    ]);
    let created = create(&s, &a, "/api/v1/data-sources", json!({"name": "Prices", "class": "structured", "kind": "table", "fields": fields}));
    let lookups: Vec<bool> = created["dataSource"]["fields"].as_array().unwrap().iter().map(|f| f["lookup"].as_bool().unwrap()).collect();
    assert_eq!(lookups, [true, true, false]);
    let prices = created["dataSource"]["id"].as_str().unwrap().to_string();
    upload(&s, &a, &prices, "sku,name,price\nA1,Widget,10\nB2,Gadget,20\n");
    // Only the lookup fields' cells are indexed for lookups.
    let keys = sql(&dir.0, &format!("SELECT field_key, COUNT(*) FROM lookup_values WHERE business_id = '{}' GROUP BY field_key ORDER BY field_key", a.t.business));
    assert_eq!(keys.trim(), "name|2\nsku|2");
    agent(&s, &a, &[&prices]);
    let (reply, used) = ask(&dir.0, &a, "What does a gadget cost?");
    assert_eq!(reply, "The Gadget costs 20.");
    assert!(used.contains("\"item\":2"), "{used}");
    let first = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    assert_eq!(first["tools"][0]["function"]["name"], "lookup");
    assert_eq!(first["tools"][0]["function"]["parameters"]["properties"]["source"]["enum"], json!(["Prices"]));
    let description = first["tools"][0]["function"]["description"].as_str().unwrap();
    assert!(description.ends_with("Fields by source: Prices: sku, name."), "only the lookup fields are offered: {description}");
    let second = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    let messages = second["messages"].as_array().unwrap();
    let tool = messages.last().unwrap();
    assert_eq!((tool["role"].as_str(), tool["tool_call_id"].as_str()), (Some("tool"), Some("call-1")));
    assert_eq!(tool["content"], json!("sku: B2; name: Gadget; price: 20"), "the row found, by an exact, case-insensitive match");
}

// ---- Semantic retrieval: an embeddings model beside the chat model ----

/// Words of the fake embeddings model's topics, one dimension each; every
/// other word is ignored, and a small constant keeps no vector zero.
const TOPICS: [&[&str]; 4] = [
    &["open", "opens", "opening", "hours", "visit", "when", "close", "closes"],
    &["price", "prices", "cost", "costs", "pay", "cheap", "euros"],
    &["parking", "park", "car", "drive"],
    &["shipping", "ship", "delivery", "send", "arrive"],
];
const DIMENSIONS: usize = 6;

/// The fake model's vector of `text`: its topic word counts, deterministic.
fn fake_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMENSIONS];
    for word in text.split(|c: char| !c.is_alphanumeric()).map(str::to_lowercase) {
        if let Some(d) = TOPICS.iter().position(|t| t.contains(&word.as_str())) {
            v[d] += 1.0;
        }
    }
    v[DIMENSIONS - 1] = 0.1;
    v
}

/// An OpenAI-compatible provider for both models: `…/embeddings` answers
/// [`fake_vector`]s (after `delay`), `…/chat/completions` answers "ok".
/// Every request body is recorded with its path.
struct FakeProvider {
    chat_url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>,
}

impl FakeProvider {
    fn start(delay: std::time::Duration) -> FakeProvider {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let chat_url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                std::thread::spawn(move || {
                    let Some(request) = read_request(&stream) else { return };
                    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                    let path = request.request_line.split(' ').nth(1).unwrap_or("").to_string();
                    let answer = if path.ends_with("/embeddings") {
                        std::thread::sleep(delay);
                        let data: Vec<Value> =
                            body["input"].as_array().unwrap().iter().enumerate().map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_vector(t.as_str().unwrap())})).collect();
                        json!({"object": "list", "data": data, "model": body["model"]})
                    } else {
                        json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]})
                    };
                    log.lock().unwrap().push((path, body));
                    answer_json(&stream, &answer.to_string());
                });
            }
        });
        FakeProvider { chat_url, seen }
    }

    fn flags(&self) -> Vec<String> {
        ["--ai-endpoint", &self.chat_url, "--ai-model", "chat-model", "--ai-embeddings-model", "embed-model", "--ai-embeddings-dimensions", "6"].iter().map(|s| s.to_string()).collect()
    }

    /// The bodies sent to a path ending in `suffix`, in order.
    fn sent(&self, suffix: &str) -> Vec<Value> {
        self.seen.lock().unwrap().iter().filter(|(p, _)| p.ends_with(suffix)).map(|(_, b)| b.clone()).collect()
    }
}

fn start_with_provider(dir: &Path, p: &FakeProvider) -> Server {
    let flags = p.flags();
    Server::start_with(dir, &flags.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A source's `retrieval` once every passage has a vector.
fn embedded(s: &Server, b: &Biz, source: &str) -> Value {
    let url = format!("/api/v1/data-sources?businessId={}", b.t.business);
    poll("the passages to be embedded", || {
        let r = k(s, b).get(&url);
        let d = r.data()["dataSources"].as_array().unwrap().iter().find(|d| d["id"] == source).unwrap()["retrieval"].clone();
        (d["embeddedPassages"] == d["passages"]).then_some(d)
    })
}

#[test]
fn passages_are_found_by_meaning_with_an_embeddings_model() {
    let dir = DataDir::new();
    let provider = FakeProvider::start(std::time::Duration::ZERO);
    let s = start_with_provider(&dir.0, &provider);
    let (a, _) = business(&s, &dir.0, "pn-vec-a", &[]);
    let notes = unstructured(&s, &a, "Shop notes", "Our hours are 9 to 5 on weekdays.\n\nParking is free behind the shop.\n\nShipping takes two days.");
    // Business B holds a passage of the same topic; A never sees it.
    let (b, _) = business(&s, &dir.0, "pn-vec-b", &[]);
    let b_notes = unstructured(&s, &b, "B notes", "Business B opens at noon.");
    agent(&s, &b, &[&b_notes]);
    agent(&s, &a, &[&notes]);
    assert_eq!(embedded(&s, &a, &notes), json!({"passages": 3, "embeddedPassages": 3}));
    embedded(&s, &b, &b_notes);
    let embeddings = provider.sent("/v1/embeddings");
    assert!(embeddings.iter().all(|e| e["model"] == "embed-model" && e["dimensions"] == 6), "{embeddings:?}");

    // No word of the question is in any passage ("when" is a stopword, "visit"
    // appears nowhere): only the meaning finds the opening hours.
    let (_, used) = ask(&dir.0, &a, "When can I visit?");
    let chats = provider.sent("/chat/completions");
    let prompt = chats.last().unwrap()["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(prompt.contains("[Shop notes] Our hours are 9 to 5 on weekdays."), "the passage nearest in meaning is in the prompt: {prompt}");
    assert!(!prompt.contains("Parking") && !prompt.contains("Shipping"), "passages far in meaning are not: {prompt}");
    assert!(!prompt.contains("Business B"), "nothing of another business: {prompt}");
    assert!(used.contains(&notes) && used.contains("\"item\":0"), "{used}");
    let last_embedding = provider.sent("/v1/embeddings").last().unwrap().clone();
    assert_eq!(last_embedding["input"], json!(["When can I visit?"]), "the question itself is embedded");

    // Words and meaning together: the passage both find comes first.
    ask(&dir.0, &a, "Where can I park the car?");
    let prompt = provider.sent("/chat/completions").last().unwrap()["messages"][0]["content"].as_str().unwrap().to_string();
    let knowledge = &prompt[prompt.find("Knowledge").unwrap()..];
    assert!(knowledge.lines().nth(1).unwrap().contains("Parking is free"), "{knowledge}");

    // New content is embedded again, and only the new passages are found.
    k(&s, &a).fresh().patch("/api/v1/data-sources", &json!({"businessId": a.t.business, "dataSourceId": notes, "content": "Deliveries arrive within a week."})).assert_ok(200);
    assert_eq!(embedded(&s, &a, &notes), json!({"passages": 1, "embeddedPassages": 1}));
    ask(&dir.0, &a, "When can I visit?");
    let prompt = provider.sent("/chat/completions").last().unwrap()["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(!prompt.contains("9 to 5") && !prompt.contains("Knowledge"), "old passages are gone, and a far one is not offered: {prompt}");
    let stored =
        sql(&dir.0, &format!("SELECT (SELECT COUNT(*) FROM knowledge_vectors WHERE data_source_id = '{notes}') + (SELECT COUNT(*) FROM knowledge_vectors_pending WHERE data_source_id = '{notes}')"));
    assert_eq!(stored.trim(), "1", "the replaced passages' vectors are gone, indexed or waiting");
}

#[test]
fn embedding_resumes_after_kill_9_and_embeds_each_passage_once() {
    let dir = DataDir::new();
    // Each embeddings request takes a while, so the crash lands mid-way.
    let provider = FakeProvider::start(std::time::Duration::from_millis(300));
    let mut s = start_with_provider(&dir.0, &provider);
    let (a, _) = business(&s, &dir.0, "pn-vec-kill", &[]);
    let paragraphs = 300;
    let content: Vec<String> = (0..paragraphs).map(|i| format!("Note {i}: the shop opens at {} o'clock on day {i}.", i % 12)).collect();
    let notes = unstructured(&s, &a, "Many notes", &content.join("\n\n"));
    poll("two batches to be embedded", || (provider.sent("/v1/embeddings").len() >= 2).then_some(()));
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    let before: usize = provider.sent("/v1/embeddings").iter().map(|e| e["input"].as_array().unwrap().len()).sum();
    assert!(before < paragraphs, "the crash came before the end ({before} sent)");

    let s = start_with_provider(&dir.0, &provider);
    let url = format!("/api/v1/data-sources?businessId={}", a.t.business);
    let started = std::time::Instant::now();
    loop {
        let d = k(&s, &a).get(&url).data()["dataSources"].as_array().unwrap().iter().find(|d| d["id"] == notes.as_str()).unwrap()["retrieval"].clone();
        if d["embeddedPassages"] == json!(paragraphs) {
            assert_eq!(d["passages"], json!(paragraphs));
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(240), "embedding did not finish after the restart: {d}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // Every passage was sent; at most the one batch in flight at the crash was sent again.
    let sent: Vec<String> = provider.sent("/v1/embeddings").iter().flat_map(|e| e["input"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect::<Vec<_>>()).collect();
    for p in &content {
        assert!(sent.contains(p), "{p} was embedded");
    }
    assert!(sent.len() <= paragraphs + 32, "{} texts sent for {paragraphs} passages", sent.len());
    // The vectors stored before the crash and after it all reach the index, once.
    indexed(&dir.0, &notes);
    let stored = sql(&dir.0, &format!("SELECT COUNT(*), COUNT(DISTINCT fts_rowid) FROM knowledge_vectors WHERE data_source_id = '{notes}'"));
    assert_eq!(stored.trim(), format!("{paragraphs}|{paragraphs}"));
    drop(s);
}

/// Waits until no vector of `source` waits for the ANN index (the node's
/// indexer moved them all into `knowledge_vectors`).
fn indexed(dir: &Path, source: &str) {
    poll("the vectors to reach the index", || {
        let waiting = sql(dir, &format!("SELECT COUNT(*) FROM knowledge_vectors_pending WHERE data_source_id = '{source}'"));
        (waiting.trim() == "0").then_some(())
    });
}

/// Issue 52, point 3: a step stores its vectors beside the ANN index and
/// the node's indexer moves them into it, in short turns of the write
/// gate. The same business's creates go on meanwhile; every vector reaches
/// the index once; they are found by meaning, and a backup restored keeps
/// them (nothing embedded again).
#[test]
fn vectors_reach_the_index_while_creates_go_on_and_a_restored_backup_keeps_them() {
    let dir = DataDir::new();
    let provider = FakeProvider::start(std::time::Duration::ZERO);
    let mut s = start_with_provider(&dir.0, &provider);
    let (a, _) = business(&s, &dir.0, "pn-vec-index", &[]);
    let paragraphs = 600;
    let mut content: Vec<String> = (0..paragraphs).map(|i| format!("Note {i}: item {i} is kept on shelf {}.", i % 40)).collect();
    content[300] = "Our hours are 9 to 5 on weekdays.".to_string();
    let category = create(&s, &a, "/api/v1/contacts/categories", json!({"name": "Leads"}))["category"]["id"].as_str().unwrap().to_string();
    let notes = unstructured(&s, &a, "Shelf notes", &content.join("\n\n"));
    agent(&s, &a, &[&notes]);
    // Creates of the same business (its database and write gate) while its vectors are written and indexed.
    let done = std::sync::atomic::AtomicBool::new(false);
    let created = std::thread::scope(|scope| {
        let creates = scope.spawn(|| {
            let mut n = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let body = json!({"businessId": a.t.business, "name": format!("P{n}"), "mobile": format!("+1555{n:07}"), "categoryIds": [category]});
                k(&s, &a).fresh().post("/api/v1/contacts", &body).assert_ok(201);
                // Within the key's rate limit, beside the polls.
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            n
        });
        assert_eq!(embedded(&s, &a, &notes), json!({"passages": paragraphs, "embeddedPassages": paragraphs}));
        indexed(&dir.0, &notes);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        creates.join().unwrap()
    });
    assert!(created > 0);
    let stored = sql(&dir.0, &format!("SELECT COUNT(*), COUNT(DISTINCT fts_rowid) FROM knowledge_vectors WHERE data_source_id = '{notes}'"));
    assert_eq!(stored.trim(), format!("{paragraphs}|{paragraphs}"), "every vector is in the index, once");
    // Found by meaning alone ("visit" is in no passage).
    let (_, used) = ask(&dir.0, &a, "When can I visit?");
    assert!(used.contains(&notes) && used.contains("\"item\":300"), "{used}");
    let embeddings_sent = provider.sent("/v1/embeddings").len();

    // A backup, restored into a new data dir and served: the vectors are
    // there and found, and nothing is embedded again but the question.
    let backup = dir.0.join("vectors.tar");
    admin(&dir.0, &["backup", "--to", backup.to_str().unwrap()]);
    s.terminate();
    let restored = DataDir::new();
    admin(&restored.0, &["restore", "--from", backup.to_str().unwrap()]);
    let s = start_with_provider(&restored.0, &provider);
    assert_eq!(embedded(&s, &a, &notes), json!({"passages": paragraphs, "embeddedPassages": paragraphs}));
    let stored = sql(&restored.0, &format!("SELECT COUNT(*) FROM knowledge_vectors WHERE data_source_id = '{notes}'"));
    assert_eq!(stored.trim(), paragraphs.to_string());
    let (_, used) = ask(&restored.0, &a, "When can I visit?");
    assert!(used.contains(&notes) && used.contains("\"item\":300"), "{used}");
    assert_eq!(provider.sent("/v1/embeddings").len(), embeddings_sent + 1, "only the question was embedded");
}

/// The same on a node of a libSQL primary that ships its writes: the
/// steps' vectors and the indexer's moves are shipped transactions, and the
/// vectors reach the primary's index and are found by meaning.
#[test]
fn vectors_reach_the_index_of_a_libsql_primary() {
    let primary = crate::primary::Sqld::start();
    let (dir, admin_dir) = (DataDir::new(), DataDir::new());
    std::fs::write(admin_dir.0.join(PRIMARY_MARKER), &primary.url).unwrap();
    let provider = FakeProvider::start(std::time::Duration::ZERO);
    let mut flags = provider.flags();
    flags.extend(["--primary-url".to_string(), primary.url.clone(), "--sync-interval-ms".to_string(), "100".to_string()]);
    let s = Server::start_with(&dir.0, &flags.iter().map(String::as_str).collect::<Vec<_>>());
    let (a, _) = business(&s, &admin_dir.0, "pn-vec-primary", &[]);
    let paragraphs = 100;
    let mut content: Vec<String> = (0..paragraphs).map(|i| format!("Note {i}: item {i} is kept on shelf {}.", i % 40)).collect();
    content[70] = "Our hours are 9 to 5 on weekdays.".to_string();
    let notes = unstructured(&s, &a, "Shelf notes", &content.join("\n\n"));
    agent(&s, &a, &[&notes]);
    assert_eq!(embedded(&s, &a, &notes), json!({"passages": paragraphs, "embeddedPassages": paragraphs}));
    indexed(&admin_dir.0, &notes);
    let stored = sql(&admin_dir.0, &format!("SELECT COUNT(*), COUNT(DISTINCT fts_rowid) FROM knowledge_vectors WHERE data_source_id = '{notes}'"));
    assert_eq!(stored.trim(), format!("{paragraphs}|{paragraphs}"), "every vector is in the primary's index, once");
    let (_, used) = ask(&admin_dir.0, &a, "When can I visit?");
    assert!(used.contains(&notes) && used.contains("\"item\":70"), "{used}");
}
