//! Embeddings from AI plugins (issue 40): an `ai` plugin whose manifest
//! declares `[embeddings]` is asked for the vectors of its business's
//! passages and questions, and grounded replies find passages by its
//! vectors; another business keeps the server's retrieval.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;

/// The AI plugin of the tests (components/plugin-ai-testbed): its vectors
/// mark concepts, so "refund" is near "reimbursement".
const AI_TESTBED: &str = env!("SWITCHBOARD_PLUGIN_AI_TESTBED_WASM");

fn ai_plugin(plugins: &Path, name: &str, embeddings: &str) {
    let folder = plugins.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(AI_TESTBED, folder.join("plugin.wasm")).unwrap();
    std::fs::write(folder.join("plugin.toml"), format!("name = \"{name}\"\nversion = \"1.0.0\"\ninterface = \"ai\"\n{embeddings}\n")).unwrap();
}

struct Biz {
    t: Tenant,
    pnid: &'static str,
    source: String,
}

/// A business with a number, an unstructured source of two passages and an
/// agent grounded on it, replying automatically.
fn business(s: &Server, dir: &Path, pnid: &'static str) -> Biz {
    let t = tenant(dir, "all");
    admin(dir, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", pnid]);
    let content = "Reimbursement: customers are reimbursed within 14 days.\n\nParking is free behind the shop.";
    let d = s.as_key(&t.key).fresh().post("/api/v1/data-sources", &json!({"businessId": t.business, "name": "Policies", "class": "unstructured", "kind": "text", "content": content}));
    let source = d.assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
    let agent =
        s.as_key(&t.key).fresh().post("/api/v1/agents", &json!({"businessId": t.business, "channel": "chatapp", "name": "Desk", "instructions": "Answer customers.", "dataSourceIds": [source]}));
    let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    let body = json!({"businessId": t.business, "channel": "chatapp", "phoneNumberId": pnid, "aiAgentId": agent, "autoReplyEnabled": true, "humanHandoffActive": false});
    s.as_key(&t.key).patch("/api/v1/channels/assignments", &body).assert_ok(200);
    Biz { t, pnid, source }
}

fn retrieval(s: &Server, b: &Biz) -> Value {
    let r = s.as_key(&b.t.key).get(&format!("/api/v1/data-sources?businessId={}", b.t.business));
    r.data()["dataSources"].as_array().unwrap().iter().find(|d| d["id"] == b.source.as_str()).unwrap()["retrieval"].clone()
}

/// What the agent's reply to `text` drew on (`grounding_json`).
fn grounding_of_reply(dir: &Path, b: &Biz, text: &str) -> String {
    let r = admin(dir, &["sandbox", "inbound", "--phone-number-id", b.pnid, "--from", "+15550009876", "--text", text]);
    wait_done(dir, r["jobId"].as_str().unwrap());
    let biz = &b.t.business;
    poll("the auto-reply", || {
        let ids = sql(dir, &format!("SELECT id FROM jobs WHERE business_id = '{biz}' AND kind = 'messaging.autoreply' AND state NOT IN ('done', 'dead')"));
        ids.trim().is_empty().then_some(())
    });
    sql(dir, &format!("SELECT IFNULL(grounding_json, '-') FROM messages WHERE business_id = '{biz}' AND direction = 'outbound' ORDER BY created_at DESC, id DESC LIMIT 1")).trim().to_string()
}

#[test]
fn an_ai_plugin_that_declares_embeddings_makes_the_vectors_retrieval_uses() {
    let data = DataDir::new();
    let plugins = data.0.join("plugins");
    ai_plugin(&plugins, "concept-ai", "[embeddings]\nmodel = \"concepts-v1\"\ndimensions = 1536");
    ai_plugin(&plugins, "narrow-ai", "[embeddings]\nmodel = \"tiny\"\ndimensions = 3");
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", plugins.to_str().unwrap()], &log);
    plugins_loaded(&log, 2);
    let dir = plugins.to_str().unwrap();
    let a = business(&s, &data.0, "pn-emb-a");
    let b = business(&s, &data.0, "pn-emb-b");
    // No embeddings model on this server: full-text only, nothing embedded.
    assert_eq!(retrieval(&s, &a), json!({"passages": 2, "embeddedPassages": null}));

    // A plugin whose vectors would not fit the server's index is refused.
    let out = std::process::Command::new(BIN)
        .args(["admin", "--data-dir", data.0.to_str().unwrap(), "provider", "use", "--business", &a.t.business, "--interface", "ai", "--plugin", "narrow-ai", "--plugin-dir", dir])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("3 dimensions") && err.contains("holds 1536"), "{err}");

    // A chooses the plugin that declares embeddings: its existing passages
    // are embedded by the plugin.
    admin(&data.0, &["provider", "use", "--business", &a.t.business, "--interface", "ai", "--plugin", "concept-ai", "--plugin-dir", dir]);
    poll("A's passages to be embedded by the plugin", || (retrieval(&s, &a) == json!({"passages": 2, "embeddedPassages": 2})).then_some(()));
    let model = sql(&data.0, &format!("SELECT embedded_model FROM data_sources WHERE id = '{}'", a.source));
    assert_eq!(model.trim(), "plugin:concept-ai/concepts-v1");

    // No word of the question is in a passage: only the plugin's vectors
    // (refund ~ reimbursement) find the first passage, not the second.
    let used = grounding_of_reply(&data.0, &a, "refund possible?");
    assert!(used.contains(&a.source) && used.contains("\"item\":0") && !used.contains("\"item\":1"), "{used}");
    // B has no such plugin: full-text finds nothing.
    assert_eq!(retrieval(&s, &b)["embeddedPassages"], Value::Null);
    let used = grounding_of_reply(&data.0, &b, "refund possible?");
    assert!(!used.contains(&b.source), "{used}");

    // Back to the server's AI: the plugin's vectors go with it.
    admin(&data.0, &["provider", "reset", "--business", &a.t.business, "--interface", "ai"]);
    assert_eq!(
        sql(&data.0, &format!("SELECT (SELECT COUNT(*) FROM knowledge_vectors WHERE business_id = '{0}') + (SELECT COUNT(*) FROM knowledge_vectors_pending WHERE business_id = '{0}')", a.t.business))
            .trim(),
        "0"
    );
    assert_eq!(retrieval(&s, &a)["embeddedPassages"], Value::Null);
}
