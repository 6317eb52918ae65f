//! Campaigns (operations 44-51): admission of compatible contacts only, an
//! immutable membership, voice iterations run within the business's lines
//! against the sandbox carrier (whose destination rules drive each
//! outcome), retries by outcome, pause, resume and cancel, follow-ups.

use crate::harness::*;
use serde_json::{json, Value};

mod chat;
mod preview;
mod recipients;
mod windows;

const TERMINAL: [&str; 5] = ["completed", "no_answer", "busy", "failed", "cancelled"];

pub struct C {
    pub s: Server,
    pub t: Tenant,
    pub dir: DataDir,
    pub flags: Vec<String>,
    /// A category for contacts that need no particular one.
    pub everyone: String,
}

impl C {
    /// A server (retry minutes of `minute_ms`), a tenant with `lines` and credit.
    pub fn new(lines: u32, microcredits: u64, minute_ms: u32, step_ms: u32) -> C {
        C::with_flags(lines, microcredits, minute_ms, step_ms, &[])
    }
    /// [`C::new`] with more `serve` flags.
    pub fn with_flags(lines: u32, microcredits: u64, minute_ms: u32, step_ms: u32, extra: &[String]) -> C {
        let dir = DataDir::new();
        let mut flags = vec!["--carrier-setting".to_string(), format!("step-delay-ms={step_ms}"), "--campaign-minute-ms".to_string(), minute_ms.to_string()];
        flags.extend_from_slice(extra);
        let s = Server::start_with(&dir.0, &flags.iter().map(String::as_str).collect::<Vec<_>>());
        let t = tenant(&dir.0, "all");
        admin(&dir.0, &["voice", "configure", "--business", &t.business, "--lines", &lines.to_string()]);
        if microcredits > 0 {
            admin(&dir.0, &["credits", "add", "--business", &t.business, "--microcredits", &microcredits.to_string()]);
        }
        let mut c = C { s, t, dir, flags, everyone: String::new() };
        c.everyone = c.post("/api/v1/contacts/categories", json!({"name": "Everyone"}))["category"]["id"].as_str().unwrap().to_string();
        c
    }
    pub fn send(&self, method: &str, path: &str, mut body: Value) -> Resp {
        body["businessId"] = json!(self.t.business);
        self.s.as_key(&self.t.key).fresh().send(method, path, Some(body.to_string()))
    }
    pub fn post(&self, path: &str, body: Value) -> Value {
        let r = self.send("POST", path, body);
        assert!(r.status < 300, "{path}: {}", r.text);
        r.data().clone()
    }
    pub fn get(&self, path: &str) -> Value {
        let sep = if path.contains('?') { '&' } else { '?' };
        self.s.as_key(&self.t.key).get(&format!("{path}{sep}businessId={}", self.t.business)).assert_ok(200).clone()
    }
    pub fn contact(&self, name: &str, mobile: &str, extra: Value) -> String {
        let mut body = json!({"name": name, "mobile": mobile, "categoryIds": [self.everyone]});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        self.post("/api/v1/contacts", body)["contact"]["id"].as_str().unwrap().to_string()
    }
    pub fn voice_agent(&self, extra: Value) -> String {
        let mut body = json!({"channel": "voice", "name": "Caller", "instructions": "Confirm the appointment.", "voiceSettings": {"firstGreeting": "Hello, this is Acme calling."}});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        self.post("/api/v1/agents", body)["agent"]["id"].as_str().unwrap().to_string()
    }
    pub fn create(&self, iteration: Value) -> Resp {
        self.send("POST", "/api/v1/campaigns", json!({"name": "Renewals", "objective": "Confirm renewals", "iteration": iteration}))
    }
    pub fn act(&self, campaign: &str, action: &str) -> Resp {
        self.send("PATCH", &format!("/api/v1/campaigns/{campaign}"), json!({"action": action}))
    }
    pub fn current(&self, campaign: &str) -> Value {
        self.get(&format!("/api/v1/campaigns/{campaign}"))["currentIteration"].clone()
    }
    /// `kill -9`, then a new process on the same data dir.
    pub fn crash_and_restart(&mut self) {
        self.s.child.kill().unwrap();
        self.s.child.wait().unwrap();
        self.s = Server::start_with(&self.dir.0, &self.flags.iter().map(String::as_str).collect::<Vec<_>>());
    }
    /// Imports contacts (mobile, name) into the `everyone` category.
    pub fn import(&self, rows: &[(String, String)]) {
        let csv: String = rows.iter().map(|(m, n)| format!("{m},{n}\n")).collect();
        let r = self.post("/api/v1/contacts/imports", json!({"categoryIds": [self.everyone], "csv": format!("mobile,name\n{csv}")}));
        assert_eq!(r["failed"], 0, "{r}");
    }
    /// The current iteration once it is completed (bounded; `via` is the node asked).
    pub fn completed(&self, via: &Server, campaign: &str) -> Value {
        let started = std::time::Instant::now();
        loop {
            let r = via.as_key(&self.t.key).get(&format!("/api/v1/campaigns/{campaign}?businessId={}", self.t.business));
            let it = r.assert_ok(200)["currentIteration"].clone();
            if it["status"] == "completed" {
                return it;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(240), "the iteration did not finish: {it}");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
    /// What crashes and take-overs must never break: one call per attempt
    /// of each member, each under its own claim and placed once, and no
    /// line left leased.
    pub fn assert_each_attempt_dialled_once(&self, campaign: &str) {
        let mismatched = self.db(&format!(
            "SELECT COUNT(*) FROM campaign_members m WHERE m.campaign_id = '{campaign}' \
             AND m.attempts <> (SELECT COUNT(*) FROM calls k WHERE k.business_id = m.business_id AND k.member_id = m.id)"
        ));
        assert_eq!(mismatched, "0", "members whose attempts and calls differ");
        let claims = self.db(&format!("SELECT COUNT(*) - COUNT(DISTINCT member_id || ':' || member_claim), MAX(placements) FROM calls WHERE campaign_id = '{campaign}'"));
        assert_eq!(claims, "0|1");
        assert_eq!(self.db("SELECT COUNT(*) FROM calls WHERE holds_line = 1 OR status NOT IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled')"), "0");
        assert!(self.most_calls_at_once() <= 3);
    }
    /// The most calls of the business that were ever under way at once, from
    /// their recorded times (a call counts from its creation to its end).
    pub fn most_calls_at_once(&self) -> i64 {
        self.db(&format!(
            "SELECT MAX((SELECT COUNT(*) FROM calls o WHERE o.business_id = c.business_id AND o.created_at <= c.created_at \
                         AND (o.ended_at IS NULL OR o.ended_at > c.created_at))) FROM calls c WHERE c.business_id = '{}'",
            self.t.business
        ))
        .parse()
        .unwrap()
    }
    pub fn db(&self, query: &str) -> String {
        sql(&self.dir.0, query).trim().to_string()
    }
    /// Calls of the business not ended yet.
    pub fn calls_in_progress(&self) -> i64 {
        self.db(&format!("SELECT COUNT(*) FROM calls WHERE business_id = '{}' AND status NOT IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled')", self.t.business)).parse().unwrap()
    }
}

pub fn check(name: &str, v: &Value) {
    if let Err(e) = document_schemas().validate(&json!({"$ref": format!("#/components/schemas/{name}")}), v) {
        panic!("not a {name}: {:?}\n{v}", e.iter().map(|v| &v.message).collect::<Vec<_>>());
    }
}

pub fn code(r: &Resp, status: u16) -> String {
    assert_eq!(r.status, status, "{}", r.text);
    r.code().to_string()
}

#[test]
fn only_compatible_contacts_are_admitted_and_membership_never_changes() {
    let c = C::new(1, 0, 60_000, 20);
    let vip = c.post("/api/v1/contacts/categories", json!({"name": "VIP"}))["category"]["id"].as_str().unwrap().to_string();
    let other = c.post("/api/v1/contacts/categories", json!({"name": "Other"}))["category"]["id"].as_str().unwrap().to_string();
    let ada = c.contact("Ada", "+15550100001", json!({"categoryIds": [vip], "fields": {"city": "London"}}));
    let bob = c.contact("Bob", "+15550100002", json!({"categoryIds": [other], "fields": {"city": "Paris"}}));
    let cy = c.contact("Cy", "+15550100003", json!({"categoryIds": [vip], "fields": {"city": "Rome"}, "communicationBlocked": true}));
    let dee = c.contact("Dee", "+15550100004", json!({"categoryIds": [vip]}));
    let sources = c.get("/api/v1/data-sources?limit=200");
    let contacts = sources["dataSources"].as_array().unwrap().iter().find(|d| d["builtIn"] == true).unwrap()["id"].as_str().unwrap().to_string();
    let agent = c.voice_agent(json!({"contactCategoryIds": [vip], "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "city", "alias": "city"}]}));
    let stranger = tenant(&c.dir.0, "all");
    let theirs = {
        let r = c.s.as_key(&stranger.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": stranger.business, "name": "All"}));
        let all = r.assert_ok(201)["category"]["id"].as_str().unwrap().to_string();
        let r = c.s.as_key(&stranger.key).fresh().post("/api/v1/contacts", &json!({"businessId": stranger.business, "name": "Eve", "mobile": "+15550100009", "categoryIds": [all]}));
        r.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string()
    };

    // Explicit contacts: one admitted, each other candidate skipped with its reason.
    let r = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": [ada, bob, cy, dee, theirs], "maxRetries": 2, "retryDelayMinutes": 5}));
    let d = r.assert_ok(201).clone();
    check("CampaignCreated", &d);
    assert_eq!(d["admission"], json!({"accepted": 1, "skipped": {"notFound": 1, "blocked": 1, "outOfScope": 1, "variableMissing": 1}}));
    let campaign = d["campaign"]["id"].as_str().unwrap().to_string();
    let it = &d["currentIteration"];
    assert_eq!(
        (it["status"].as_str(), it["sequence"].as_i64(), it["audience"].as_str(), it["maxRetries"].as_i64(), it["retryDelayMinutes"].as_i64()),
        (Some("draft"), Some(1), Some("contacts"), Some(2), Some(5))
    );
    assert_eq!((it["counts"]["total"].as_i64(), it["counts"]["pending"].as_i64()), (Some(1), Some(1)));
    assert_eq!(d["campaign"]["iterationCount"], 1);
    // By category: the compatible ones of VIP (Cy is blocked, Dee has no city).
    let by_category = c.create(json!({"channel": "voice", "agentId": agent, "categoryIds": [vip]}));
    assert_eq!(by_category.assert_ok(201)["admission"], json!({"accepted": 1, "skipped": {"notFound": 0, "blocked": 1, "outOfScope": 0, "variableMissing": 1}}));

    // The membership is a snapshot: edits afterwards change nobody's membership.
    let r = c.send("PATCH", &format!("/api/v1/contacts/{dee}"), json!({"fields": {"city": "Oslo"}}));
    assert_eq!(r.status, 200, "{}", r.text);
    let members = c.get(&format!("/api/v1/campaigns/{campaign}/memberships"));
    check("MembershipList", &members);
    let who: Vec<&str> = members["memberships"].as_array().unwrap().iter().map(|m| m["contactId"].as_str().unwrap()).collect();
    assert_eq!(who, [ada.as_str()]);
    assert_eq!(members["memberships"][0]["outcome"], "pending");

    // Refusals, and nothing is written by a refused create.
    let before = c.get("/api/v1/campaigns")["campaigns"].as_array().unwrap().len();
    let chat = c.post("/api/v1/agents", json!({"channel": "chatapp", "name": "Chat", "instructions": "Answer."}))["agent"]["id"].as_str().unwrap().to_string();
    assert_eq!(code(&c.create(json!({"channel": "voice", "agentId": chat, "contactIds": [ada]})), 409), "agent_channel_mismatch");
    assert_eq!(code(&c.create(json!({"channel": "sms", "agentId": agent, "contactIds": [ada]})), 409), "channel_not_available");
    assert_eq!(code(&c.create(json!({"channel": "voice", "agentId": agent, "contactIds": [bob, cy, theirs]})), 409), "empty_audience");
    assert_eq!(code(&c.create(json!({"channel": "voice", "agentId": uuid::Uuid::new_v4().to_string(), "contactIds": [ada]})), 404), "agent_not_found");
    assert_eq!(code(&c.create(json!({"channel": "voice", "agentId": agent, "categoryIds": [uuid::Uuid::new_v4().to_string()]})), 404), "category_not_found");
    assert_eq!(c.create(json!({"channel": "voice", "agentId": agent, "contactIds": [ada], "categoryIds": [vip]})).status, 400);
    let archived = c.voice_agent(json!({}));
    c.s.as_key(&c.t.key).fresh().delete("/api/v1/agents", &json!({"businessId": c.t.business, "agentId": archived})).assert_ok(200);
    assert_eq!(code(&c.create(json!({"channel": "voice", "agentId": archived, "contactIds": [ada]})), 409), "agent_archived");
    assert_eq!(c.get("/api/v1/campaigns")["campaigns"].as_array().unwrap().len(), before, "refused creates wrote nothing");

    // Moves: a draft cannot be paused, a cancelled one cannot start; no follow-up before the end.
    assert_eq!(code(&c.act(&campaign, "pause"), 409), "invalid_transition");
    let follow = json!({"channel": "voice", "agentId": agent, "selection": {"fromOutcomes": ["cancelled"]}});
    assert_eq!(code(&c.send("POST", &format!("/api/v1/campaigns/{campaign}/iterations"), follow.clone()), 409), "iteration_not_finished");
    let cancelled = c.act(&campaign, "cancel");
    assert_eq!(cancelled.assert_ok(200)["currentIteration"]["status"], "cancelled");
    assert_eq!(cancelled.data()["currentIteration"]["counts"]["cancelled"], 1);
    assert_eq!(code(&c.act(&campaign, "start"), 409), "invalid_transition");
    assert_eq!(c.act(&campaign, "cancel").status, 200, "cancelling a cancelled iteration changes nothing");
    let ai = json!({"channel": "voice", "agentId": agent, "selection": {"aiRecommended": true}});
    assert_eq!(code(&c.send("POST", &format!("/api/v1/campaigns/{campaign}/iterations"), ai), 409), "summary_run_required");
    // The follow-up: a new iteration of the same campaign, from the outcomes of the last.
    let f = c.send("POST", &format!("/api/v1/campaigns/{campaign}/iterations"), follow);
    let f = f.assert_ok(201).clone();
    check("IterationCreated", &f);
    assert_eq!((f["iteration"]["sequence"].as_i64(), f["iteration"]["audience"].as_str(), f["admission"]["accepted"].as_i64()), (Some(2), Some("outcomes"), Some(1)));
    let listed = c.get(&format!("/api/v1/campaigns/{campaign}/iterations"));
    check("IterationList", &listed);
    let seqs: Vec<i64> = listed["iterations"].as_array().unwrap().iter().map(|i| i["sequence"].as_i64().unwrap()).collect();
    assert_eq!(seqs, [1, 2]);
    assert_eq!(c.get(&format!("/api/v1/campaigns/{campaign}"))["campaign"]["iterationCount"], 2);

    // Another business sees none of it.
    let r = c.s.as_key(&stranger.key).get(&format!("/api/v1/campaigns/{campaign}?businessId={}", stranger.business));
    assert_eq!(code(&r, 404), "campaign_not_found");
    let list = c.get("/api/v1/campaigns");
    check("CampaignList", &list);
}

#[test]
fn a_voice_iteration_calls_within_its_lines_retries_by_outcome_and_completes() {
    // Two lines; a retry "minute" of 300 ms.
    let c = C::new(2, 50_000_000, 300, 10);
    let agent = c.voice_agent(json!({}));
    // Six conversations, one busy line (…2222), one that never answers (…1111).
    let mut contacts: Vec<String> = (1..=6).map(|i| c.contact(&format!("P{i}"), &format!("+1555020010{i}"), json!({}))).collect();
    let busy = c.contact("Busy", "+15550202222", json!({}));
    let away = c.contact("Away", "+15550201111", json!({}));
    contacts.push(busy.clone());
    contacts.push(away.clone());
    let d = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": contacts, "maxRetries": 1, "retryDelayMinutes": 1}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    assert_eq!(c.calls_in_progress(), 0, "nothing is dialled before start");
    let started = c.act(&campaign, "start");
    assert_eq!(started.assert_ok(200)["currentIteration"]["status"], "running");
    assert!(started.data()["currentIteration"]["startedAt"].is_string());

    // Never more calls at once than lines, until the iteration completes.
    let mut most = 0;
    let it = poll("the iteration to complete", || {
        most = most.max(c.calls_in_progress());
        let it = c.current(&campaign);
        (it["status"] == "completed").then_some(it)
    });
    assert!(most <= 2, "{most} calls at once with 2 lines");
    assert_eq!(c.most_calls_at_once(), 2, "both lines were used, never more");
    let counts = &it["counts"];
    assert_eq!(
        (counts["total"].as_i64(), counts["completed"].as_i64(), counts["busy"].as_i64(), counts["no_answer"].as_i64(), counts["pending"].as_i64()),
        (Some(8), Some(6), Some(1), Some(1), Some(0)),
        "{counts}"
    );
    assert!(it["endedAt"].is_string());

    // The busy and unanswered members were called twice (one retry), the others once.
    let members = c.get(&format!("/api/v1/campaigns/{campaign}/memberships?limit=50"));
    for m in members["memberships"].as_array().unwrap() {
        let retried = m["contactId"] == busy.as_str() || m["contactId"] == away.as_str();
        assert_eq!(m["attempts"], if retried { 2 } else { 1 }, "{m}");
        let history: Vec<&str> = m["history"].as_array().unwrap().iter().map(|h| h["outcome"].as_str().unwrap()).collect();
        if m["contactId"] == busy.as_str() {
            assert_eq!(history, ["in_progress", "busy", "in_progress", "busy"]);
        }
        if !retried {
            assert_eq!(history, ["in_progress", "completed"]);
        }
    }
    let busy_only = c.get(&format!("/api/v1/campaigns/{campaign}/memberships?outcome=busy"));
    assert_eq!(busy_only["memberships"].as_array().unwrap().len(), 1);

    // Ten calls, each placed once under its own claim, every line free again.
    let biz = &c.t.business;
    assert_eq!(c.db(&format!("SELECT COUNT(*), COUNT(DISTINCT member_id || ':' || member_claim) FROM calls WHERE business_id = '{biz}' AND campaign_id = '{campaign}'")), "10|10");
    assert_eq!(c.db("SELECT COUNT(*) FROM calls WHERE holds_line = 1"), "0");
    // Activities: the calls, newest first, filterable.
    let acts = c.get(&format!("/api/v1/campaigns/{campaign}/activities?limit=50"));
    check("ActivityList", &acts);
    let list = acts["activities"].as_array().unwrap();
    assert_eq!(list.len(), 10);
    let ids: Vec<&str> = list.iter().map(|a| a["callId"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted, "newest first");
    assert!(list.iter().all(|a| a["kind"] == "call" && a["channel"] == "voice" && TERMINAL.contains(&a["status"].as_str().unwrap())));
    assert_eq!(c.get(&format!("/api/v1/campaigns/{campaign}/activities?status=busy"))["activities"].as_array().unwrap().len(), 2);
    assert_eq!(c.get(&format!("/api/v1/campaigns/{campaign}/activities?contactId={away}"))["activities"].as_array().unwrap().len(), 2);
    assert_eq!(c.get(&format!("/api/v1/campaigns/{campaign}/activities?channel=chatapp"))["activities"].as_array().unwrap().len(), 0);
    // The calls list filters by campaign and names it; the timeline too.
    let calls = c.get(&format!("/api/v1/voice/calls?campaignId={campaign}&limit=50"));
    let calls = calls["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 10);
    assert!(calls.iter().all(|k| k["campaignName"] == "Renewals" && k["sourceName"] == "Campaign"));
    let timeline = c.get(&format!("/api/v1/contacts/{busy}/timeline?campaignId={campaign}"));
    assert_eq!(timeline["entries"].as_array().unwrap().len(), 2, "{timeline}");

    // A follow-up for the ones not reached.
    let f = c.send("POST", &format!("/api/v1/campaigns/{campaign}/iterations"), json!({"channel": "voice", "agentId": agent, "selection": {"fromOutcomes": ["busy", "no_answer"]}}));
    assert_eq!(f.assert_ok(201)["admission"]["accepted"], 2);
}

#[test]
fn pause_holds_new_calls_cancel_stops_them_and_credit_running_out_pauses() {
    // One line; every call stays connected for a while (…6666).
    let c = C::new(1, 50_000_000, 60_000, 10);
    let agent = c.voice_agent(json!({}));
    let contacts: Vec<String> = (1..=4).map(|i| c.contact(&format!("L{i}"), &format!("+155503{i}6666"), json!({}))).collect();
    let campaign = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": contacts})).assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    c.act(&campaign, "start").assert_ok(200);
    poll("a call in progress", || (c.calls_in_progress() == 1).then_some(()));
    let paused = c.act(&campaign, "pause");
    assert_eq!(paused.assert_ok(200)["currentIteration"]["status"], "paused");
    assert_eq!(paused.data()["currentIteration"]["pausedReason"], Value::Null);
    let campaign_calls = || c.db(&format!("SELECT COUNT(*) FROM calls WHERE campaign_id = '{campaign}'")).parse::<i64>().unwrap();
    let dialled = campaign_calls();
    // The call in progress finishes; nothing new is dialled while paused.
    poll("the call to end", || (c.calls_in_progress() == 0).then_some(()));
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(campaign_calls(), dialled, "no call while paused");
    // Resumed, then cancelled mid-call: the call is cancelled, the rest never dialled.
    c.act(&campaign, "start").assert_ok(200);
    poll("the next call", || (campaign_calls() > dialled && c.calls_in_progress() == 1).then_some(()));
    c.act(&campaign, "cancel").assert_ok(200);
    let it = poll("every member to settle", || {
        let it = c.current(&campaign);
        (it["counts"]["in_progress"] == 0).then_some(it)
    });
    let after = campaign_calls();
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert_eq!(campaign_calls(), after, "no call after the cancel");
    assert_eq!(it["status"], "cancelled");
    assert_eq!(it["counts"]["total"], 4);
    assert_eq!(it["counts"]["cancelled"].as_i64().unwrap() + it["counts"]["completed"].as_i64().unwrap(), 4, "{}", it["counts"]);
    assert!(it["counts"]["cancelled"].as_i64().unwrap() >= 2, "{}", it["counts"]);
    poll("no line leased", || (c.db("SELECT COUNT(*) FROM calls WHERE holds_line = 1") == "0").then_some(()));

    // Credit for one call's reservation only (30 blocks of 25,000): the
    // second member pauses the iteration, saying why.
    let poor = C::new(2, 1_000_000, 60_000, 10);
    let agent = poor.voice_agent(json!({}));
    let contacts: Vec<String> = (1..=3).map(|i| poor.contact(&format!("M{i}"), &format!("+155504{i}6666"), json!({}))).collect();
    let campaign = poor.create(json!({"channel": "voice", "agentId": agent, "contactIds": contacts})).assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    poor.act(&campaign, "start").assert_ok(200);
    let it = poll("the iteration to pause itself", || {
        let it = poor.current(&campaign);
        (it["status"] == "paused").then_some(it)
    });
    assert_eq!(it["pausedReason"], "insufficient_credit");
    assert_eq!(poor.db(&format!("SELECT COUNT(*) FROM calls WHERE campaign_id = '{campaign}'")), "1", "only what the balance covers was dialled");
}

#[test]
fn the_budget_cap_is_never_passed() {
    // Plenty of credit, one line, short conversations; a cap of one call's
    // reservation (30 blocks of 25,000) and a little more.
    let c = C::new(1, 50_000_000, 60_000, 5);
    let agent = c.voice_agent(json!({}));
    let contacts: Vec<String> = (1..=3).map(|i| c.contact(&format!("N{i}"), &format!("+155507{i}4321"), json!({}))).collect();
    let d = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": contacts, "maxSpendMicrocredits": 760_000}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    assert_eq!((d.data()["currentIteration"]["maxSpendMicrocredits"].as_i64(), d.data()["currentIteration"]["spentMicrocredits"].as_i64()), (Some(760_000), Some(0)));
    c.act(&campaign, "start").assert_ok(200);
    // The first call's end leaves its charge; the next reservation would pass the cap.
    let it = poll("the iteration to pause at its budget", || {
        let it = c.current(&campaign);
        (it["status"] == "paused" && it["counts"]["in_progress"] == 0).then_some(it)
    });
    assert_eq!(it["pausedReason"], "budget_reached");
    assert_eq!(c.db(&format!("SELECT COUNT(*) FROM calls WHERE campaign_id = '{campaign}'")), "1");
    let charged: i64 = c.db(&format!("SELECT charged FROM calls WHERE campaign_id = '{campaign}'")).parse().unwrap();
    assert!(charged > 0);
    assert_eq!(it["spentMicrocredits"], charged);
    assert_eq!(it["counts"]["completed"], 1);
    assert_eq!(it["counts"]["pending"], 2);
}

#[test]
fn hundreds_of_members_never_take_more_than_three_lines() {
    let c = C::new(3, 50_000_000, 60_000, 5);
    let agent = c.voice_agent(json!({}));
    // At the edge the dispatching node runs on sqld, where each job step
    // and each claim is a round trip to the primary (about six per call;
    // 500 calls took 53-66 s there under the suite's load, steps of 44-78
    // ms, against 6 s on a local node): the same line changes, fewer of
    // them. How many creates and steps a node on sqld takes is
    // bench/scale_out.sh's to measure, not this test's.
    let members: u64 = if edge_target() { 200 } else { 500 };
    // Numbers the sandbox carrier rejects at once (…0000): short calls, many line changes.
    let rows: Vec<(String, String)> = (0..members).map(|i| (format!("+1{}", 3_000_000_000u64 + i * 10_000), format!("R{i}"))).collect();
    c.import(&rows);
    let d = c.create(json!({"channel": "voice", "agentId": agent, "categoryIds": [c.everyone]}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    assert_eq!(d.data()["admission"]["accepted"], members);
    c.act(&campaign, "start").assert_ok(200);
    let mut most = 0;
    let it = poll("every member called", || {
        most = most.max(c.calls_in_progress());
        let it = c.current(&campaign);
        (it["status"] == "completed").then_some(it)
    });
    assert!(most <= 3, "{most} calls at once with 3 lines");
    assert_eq!(c.most_calls_at_once(), 3, "the three lines were used, never more");
    let members = members as i64;
    assert_eq!((it["counts"]["total"].as_i64(), it["counts"]["failed"].as_i64()), (Some(members), Some(members)), "{}", it["counts"]);
    assert_eq!(c.db(&format!("SELECT COUNT(*), COUNT(DISTINCT member_id) FROM calls WHERE campaign_id = '{campaign}'")), format!("{members}|{members}"));
}

#[test]
fn kill_9_mid_iteration_never_dials_a_member_twice_for_one_attempt() {
    let mut c = C::new(3, 50_000_000, 100, 15);
    let agent = c.voice_agent(json!({}));
    // Conversations, and three busy lines retried once.
    let mut rows: Vec<(String, String)> = (1..=60).map(|i| (format!("+1555061{i:04}"), format!("K{i}"))).collect();
    rows.extend((1..=3).map(|i| (format!("+155506{i}2222"), format!("B{i}"))));
    c.import(&rows);
    let d = c.create(json!({"channel": "voice", "agentId": agent, "categoryIds": [c.everyone], "maxRetries": 1, "retryDelayMinutes": 1}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    c.act(&campaign, "start").assert_ok(200);
    // kill -9 twenty times, at uneven moments, while the iteration runs.
    for pause_ms in [150u64, 420, 90, 610, 260].repeat(4) {
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
        assert_eq!(c.current(&campaign)["status"], "running", "the crashes land while the iteration runs");
        c.crash_and_restart();
    }
    let it = c.completed(&c.s, &campaign);
    let counts = &it["counts"];
    assert_eq!((counts["total"].as_i64(), counts["completed"].as_i64(), counts["busy"].as_i64()), (Some(63), Some(60), Some(3)), "{counts}");
    c.assert_each_attempt_dialled_once(&campaign);
    assert_eq!(c.db(&format!("SELECT SUM(attempts) FROM campaign_members WHERE campaign_id = '{campaign}'")), "66", "60 + 3 busy twice");
}

#[test]
fn two_nodes_on_one_data_dir_dial_each_attempt_once() {
    let mut c = C::new(3, 50_000_000, 100, 10);
    // A second node on the same data dir: one of the two holds the
    // dispatcher lease and runs the jobs; the other takes over when the
    // first dies.
    let flags: Vec<&str> = c.flags.iter().map(String::as_str).collect();
    let other = Server::start_with(&c.dir.0, &flags);
    let agent = c.voice_agent(json!({}));
    let mut rows: Vec<(String, String)> = (1..=40).map(|i| (format!("+1555081{i:04}"), format!("T{i}"))).collect();
    rows.extend((1..=2).map(|i| (format!("+155508{i}2222"), format!("U{i}"))));
    c.import(&rows);
    let d = c.create(json!({"channel": "voice", "agentId": agent, "categoryIds": [c.everyone], "maxRetries": 1, "retryDelayMinutes": 1}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    // Started through the other node; the first dies mid-run.
    let r = other.as_key(&c.t.key).fresh().patch(&format!("/api/v1/campaigns/{campaign}"), &json!({"businessId": c.t.business, "action": "start"}));
    assert_eq!(r.status, 200, "{}", r.text);
    std::thread::sleep(std::time::Duration::from_millis(700));
    c.s.child.kill().unwrap();
    c.s.child.wait().unwrap();
    let it = c.completed(&other, &campaign);
    assert_eq!((it["counts"]["total"].as_i64(), it["counts"]["completed"].as_i64(), it["counts"]["busy"].as_i64()), (Some(42), Some(40), Some(2)), "{}", it["counts"]);
    c.assert_each_attempt_dialled_once(&campaign);
    drop(other);
}

#[test]
fn calling_windows_follow_each_contacts_own_time_zone() {
    let c = C::new(2, 50_000_000, 60_000, 5);
    admin(&c.dir.0, &["voice", "configure", "--business", &c.t.business, "--time-zone", "Pacific/Kiritimati"]);
    let agent = c.voice_agent(json!({}));
    // A window of two hours around the current UTC time.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let minute = ((now / 60) % 1440) as i64;
    let hhmm = |m: i64| format!("{:02}:{:02}", m.rem_euclid(1440) / 60, m.rem_euclid(1440) % 60);
    let window = json!({"start": hhmm(minute - 60), "end": hhmm(minute + 60)});
    let here = c.contact("Here", "+15550901234", json!({"fields": {"timeZone": "UTC"}}));
    let nepal = c.contact("Nepal", "+15550902345", json!({"fields": {"timeZone": "Asia/Kathmandu"}}));
    // No zone of its own, or one that is no zone: the business's (UTC+14).
    let plain = c.contact("Plain", "+15550903456", json!({}));
    let bogus = c.contact("Bogus", "+15550904567", json!({"fields": {"timeZone": "Mars/Olympus"}}));
    // No field, but a number that decides: Iceland is UTC all year, a Japanese mobile UTC+9.
    let iceland = c.contact("Iceland", "+3545551234", json!({}));
    let tokyo = c.contact("Tokyo", "+819012345678", json!({}));
    let bad = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": [here], "callingWindow": {"start": "09:00", "end": "09:00"}}));
    assert_eq!(code(&bad, 400), "invalid_calling_window");
    let d = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": [here, nepal, plain, bogus, iceland, tokyo], "callingWindow": window}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    assert_eq!(d.data()["currentIteration"]["callingWindow"], window);
    c.act(&campaign, "start").assert_ok(200);
    poll("the contacts inside their window to be called", || {
        let it = c.current(&campaign);
        (it["counts"]["completed"] == 2).then_some(())
    });
    std::thread::sleep(std::time::Duration::from_millis(800));
    let it = c.current(&campaign);
    assert_eq!((it["status"].as_str(), it["counts"]["pending"].as_i64()), (Some("running"), Some(4)), "the others wait, they are not failed: {}", it["counts"]);
    let mut called: Vec<String> = c.db(&format!("SELECT contact_id FROM calls WHERE campaign_id = '{campaign}'")).lines().map(String::from).collect();
    called.sort();
    let mut inside = vec![here.clone(), iceland.clone()];
    inside.sort();
    assert_eq!(called, inside, "only the contacts whose local time is inside the window were called (by field, by number)");
    assert!(!called.contains(&tokyo), "a Japanese mobile waits: nine hours ahead");
}

#[test]
fn a_chatapp_iteration_sends_openings_that_follow_delivery_and_replies() {
    // A retry "minute" of 2 ms: the 24-hour reply window lasts about 3 s.
    let c = C::new(1, 0, 2, 5);
    admin(&c.dir.0, &["channel", "connect", "--business", &c.t.business, "--channel", "chatapp", "--phone-number-id", "pn-camp"]);
    let reader = c.contact("Ada", "+15551010001", json!({"fields": {"plan": "Gold"}}));
    let quiet = c.contact("Bob", "+15551011111", json!({"fields": {"plan": "Silver"}})); // …1111: delivered, never read
    let gone = c.contact("Cy", "+15551010000", json!({"fields": {"plan": "Basic"}})); // …0000: fails after acceptance
    let sources = c.get("/api/v1/data-sources?limit=200");
    let contacts = sources["dataSources"].as_array().unwrap().iter().find(|d| d["builtIn"] == true).unwrap()["id"].as_str().unwrap().to_string();
    let agent = c.post(
        "/api/v1/agents",
        json!({"channel": "chatapp", "name": "Renewals", "instructions": "Help with renewals.",
        "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "name", "alias": "firstName"}, {"sourceId": contacts, "fieldKey": "plan", "alias": "plan"}]}),
    )["agent"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let opening = "Hello {{firstName}}, your {{plan}} plan renews soon. Reply to keep it.";
    let iteration = |ids: &[&str]| json!({"channel": "chatapp", "agentId": agent, "contactIds": ids, "openingMessage": opening});
    // Not assigned to a number yet: refused; an opening is required, and voice takes none.
    assert_eq!(code(&c.create(iteration(&[&reader])), 409), "agent_not_assigned");
    c.send("PATCH", "/api/v1/channels/assignments", json!({"channel": "chatapp", "phoneNumberId": "pn-camp", "aiAgentId": agent, "autoReplyEnabled": false, "humanHandoffActive": false}))
        .assert_ok(200);
    // The document has one iteration shape per channel: the refusal names the channel.
    let r = c.create(json!({"channel": "chatapp", "agentId": agent, "contactIds": [reader]}));
    assert_eq!(code(&r, 400), "invalid_request");
    assert!(r.message().contains("`iteration.openingMessage` is required when `iteration.channel` is \"chatapp\""), "{}", r.text);
    let caller = c.voice_agent(json!({}));
    let r = c.create(json!({"channel": "voice", "agentId": caller, "contactIds": [reader], "openingMessage": "Hi"}));
    assert_eq!(code(&r, 400), "invalid_request");
    assert!(r.message().contains("`iteration.openingMessage` is not allowed when `iteration.channel` is \"voice\""), "{}", r.text);

    let d = c.create(iteration(&[&reader, &quiet, &gone]));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    assert_eq!(d.data()["currentIteration"]["openingMessage"], opening);
    c.act(&campaign, "start").assert_ok(200);
    poll("the openings to be read, delivered and failed", || {
        let counts = c.current(&campaign)["counts"].clone();
        (counts["read"] == 1 && counts["delivered"] == 1 && counts["failed"] == 1).then_some(())
    });
    // The opening went through the messaging path, filled from the contact's declared values.
    let acts = c.get(&format!("/api/v1/campaigns/{campaign}/activities?channel=chatapp"));
    check("ActivityList", &acts);
    let first = acts["activities"].as_array().unwrap().iter().find(|a| a["contactId"] == reader.as_str()).unwrap().clone();
    assert_eq!((first["kind"].as_str(), first["channel"].as_str(), first["callId"].clone()), (Some("message"), Some("chatapp"), Value::Null));
    let message_id = first["messageId"].as_str().unwrap();
    let message = c.get(&format!("/api/v1/messages/{message_id}"));
    assert_eq!((message["phoneNumberId"].as_str(), message["recipient"].as_str(), message["status"].as_str()), (Some("pn-camp"), Some("+15551010001"), Some("read")));
    assert_eq!(c.db(&format!("SELECT text FROM messages WHERE id = '{message_id}'")), "Hello Ada, your Gold plan renews soon. Reply to keep it.");
    // A reply within the window makes the member `replied`.
    admin(&c.dir.0, &["sandbox", "inbound", "--phone-number-id", "pn-camp", "--from", "+15551010001", "--text", "Yes, keep it"]);
    let it = poll("the iteration to complete after the reply window", || {
        let it = c.current(&campaign);
        (it["status"] == "completed").then_some(it)
    });
    let counts = &it["counts"];
    assert_eq!((counts["replied"].as_i64(), counts["delivered"].as_i64(), counts["failed"].as_i64(), counts["total"].as_i64()), (Some(1), Some(1), Some(1), Some(3)), "{counts}");
    let members = c.get(&format!("/api/v1/campaigns/{campaign}/memberships?outcome=replied"));
    let history: Vec<&str> = members["memberships"][0]["history"].as_array().unwrap().iter().map(|h| h["outcome"].as_str().unwrap()).collect();
    assert_eq!(history.first(), Some(&"in_progress"));
    assert_eq!(history.last(), Some(&"replied"));

    // A summary run reads what was written: the opening and the reply, priced by their characters.
    admin(&c.dir.0, &["credits", "add", "--business", &c.t.business, "--microcredits", "1000000"]);
    let run = crate::summaries::summarize(&c, &campaign);
    assert_eq!(run["status"], "completed", "{run}");
    let read = c.get(&format!("/api/v1/contacts/{reader}?campaignId={campaign}"));
    let assessment = &read["campaignSummary"]["assessment"];
    assert_eq!(assessment["summary"], "Reached by chatapp (1 iteration); last said: \"Yes, keep it\"");
    assert_eq!((assessment["nextAction"].as_str(), assessment["followUp"].as_bool()), (Some("Follow up: interested"), Some(true)));
    let written = "Hello Ada, your Gold plan renews soon. Reply to keep it.".len() + "Yes, keep it".len();
    assert_eq!(c.db(&format!("SELECT material_chars FROM summary_assessments WHERE contact_id = '{reader}'")), written.to_string());
}
