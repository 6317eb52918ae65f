//! Campaign AI summary runs (operations 52-54), the contact's
//! `campaignSummary` (31) and the AI-recommended follow-up (49): estimate,
//! the exact confirmation, money against the ledger, progress, the CSV
//! export read by Python's `csv` module, failures, kill -9 mid-run.

use crate::campaigns::{check, code, C};
use crate::harness::*;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// The run `id` of `campaign` as the list shows it.
fn run_of(c: &C, campaign: &str, id: &str) -> Value {
    let list = c.get(&format!("/api/v1/campaigns/{campaign}/summary-runs?limit=200"));
    check("SummaryRunList", &list);
    list["summaryRuns"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("run {id} not listed: {list}")).clone()
}

fn estimate(c: &C, campaign: &str) -> Resp {
    c.send("POST", &format!("/api/v1/campaigns/{campaign}/summary-runs"), json!({"action": "estimate"}))
}

fn confirm(c: &C, campaign: &str, run: &str, figure: i64) -> Resp {
    c.send("POST", &format!("/api/v1/campaigns/{campaign}/summary-runs"), json!({"action": "confirm", "estimateId": run, "confirmMaximumChargeMicrocredits": figure}))
}

/// The run once it has ended (completed, partial or failed).
fn finished(c: &C, campaign: &str, run: &str) -> Value {
    poll("the summary run to end", || {
        let r = run_of(c, campaign, run);
        ["completed", "partial", "failed"].contains(&r["status"].as_str().unwrap()).then_some(r)
    })
}

/// Estimates and confirms a summary run of `campaign`; the run once it ended.
pub fn summarize(c: &C, campaign: &str) -> Value {
    let run = estimate(c, campaign).assert_ok(201)["summaryRun"].clone();
    let id = run["id"].as_str().unwrap();
    confirm(c, campaign, id, run["maximumChargeMicrocredits"].as_i64().unwrap()).assert_ok(200);
    finished(c, campaign, id)
}

/// GET the export; the response.
fn export(c: &C, campaign: &str, run: &str) -> Resp {
    c.s.as_key(&c.t.key).get(&format!("/api/v1/campaigns/{campaign}/exports?businessId={}&summaryRunId={run}", c.t.business))
}

/// The CSV as Python's `csv` module reads it: rows of cells.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let dir = DataDir::new();
    let path = dir.0.join("export.csv");
    std::fs::write(&path, text).unwrap();
    let script = "import csv, json, sys\nwith open(sys.argv[1], newline='', encoding='utf-8') as f:\n    print(json.dumps(list(csv.reader(f, strict=True))))";
    let out = std::process::Command::new("python3").arg("-c").arg(script).arg(&path).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The ledger entries of `reference`: (kind, amount), in kind order (charge, release, reserve).
fn ledger(c: &C, reference: &str) -> Vec<(String, i64)> {
    let shown = admin(&c.dir.0, &["credits", "show", "--business", &c.t.business, "--limit", "200"]);
    let mut out: Vec<(String, i64)> =
        shown["entries"].as_array().unwrap().iter().filter(|e| e["reference"] == reference).map(|e| (e["kind"].as_str().unwrap().to_string(), e["amountMicrocredits"].as_i64().unwrap())).collect();
    out.sort();
    out
}

fn balance(c: &C) -> (i64, i64) {
    let shown = admin(&c.dir.0, &["credits", "show", "--business", &c.t.business, "--limit", "1"]);
    (shown["balanceMicrocredits"].as_i64().unwrap(), shown["reservedMicrocredits"].as_i64().unwrap())
}

/// A voice campaign over `contacts` (name, mobile), run to completion; its id.
fn completed_campaign(c: &C, contacts: &[(&str, &str)]) -> (String, Vec<String>) {
    let agent = c.voice_agent(json!({}));
    let ids: Vec<String> = contacts.iter().map(|(n, m)| c.contact(n, m, json!({}))).collect();
    let d = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": ids}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    c.act(&campaign, "start").assert_ok(200);
    c.completed(&c.s, &campaign);
    (campaign, ids)
}

#[test]
fn estimate_confirm_the_exact_maximum_then_export_one_row_per_contact() {
    let c = C::new(2, 50_000_000, 60_000, 10);
    let agent = c.voice_agent(json!({}));
    let names = [("Ada, \"the first\"", "+15550300001"), ("=HYPERLINK(\"http://x\")", "+15550300002"), ("Bo", "+15550302222"), ("Cy", "+15550301111")];
    let ids: Vec<String> = names.iter().map(|(n, m)| c.contact(n, m, json!({}))).collect();
    let d = c.create(json!({"channel": "voice", "agentId": agent, "contactIds": ids}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    // Nothing to summarise while an iteration is not terminal.
    let early = estimate(&c, &campaign);
    early.assert_failure(409, "conflict");
    assert_eq!(early.code(), "iterations_not_finished");
    let listed = c.get(&format!("/api/v1/campaigns/{campaign}/summary-runs"));
    assert_eq!(listed["summaryRuns"], json!([]));
    c.act(&campaign, "start").assert_ok(200);
    c.completed(&c.s, &campaign);
    let (before, _) = balance(&c);

    // The estimate: one contact each, the exact maximum at the default price, nothing charged.
    let e = estimate(&c, &campaign);
    let run = e.assert_ok(201)["summaryRun"].clone();
    check("SummaryRunResult", e.data());
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!((run["status"].as_str(), run["contactCount"].as_i64(), run["chargedMicrocredits"].as_i64()), (Some("estimated"), Some(4), Some(0)));
    assert_eq!(run["price"], json!({"perContactMicrocredits": 2000, "perThousandCharactersMicrocredits": 500}));
    // Priced from what was said in the calls: the transcripts' characters per contact.
    let said: Vec<i64> = ids
        .iter()
        .map(|contact| c.db(&format!("SELECT IFNULL(SUM(length(t.text)), 0) FROM calls k JOIN call_turns t ON t.call_id = k.id WHERE k.contact_id = '{contact}'")).parse().unwrap())
        .collect();
    let expected: i64 = said.iter().map(|n| 2000 + 500 * ((n + 999) / 1000)).sum();
    assert_eq!(run["maximumChargeMicrocredits"].as_i64(), Some(expected), "{said:?}");
    assert_eq!(run["materialCharacters"].as_i64(), Some(said.iter().sum()));
    assert!(said.iter().filter(|n| **n > 0).count() == 2, "the two conversations said something, busy and unanswered nothing: {said:?}");
    assert_eq!(balance(&c), (before, 0), "an estimate charges nothing");
    let maximum = expected;

    // A different figure is refused; the exact one reserves the maximum and queues the run.
    let wrong = confirm(&c, &campaign, &id, maximum - 1);
    wrong.assert_failure(409, "conflict");
    assert_eq!(wrong.code(), "maximum_charge_mismatch");
    assert!(wrong.message().contains(&maximum.to_string()), "{}", wrong.text);
    let key = uuid::Uuid::new_v4().to_string();
    let body = json!({"businessId": c.t.business, "action": "confirm", "estimateId": id, "confirmMaximumChargeMicrocredits": maximum});
    let ok = c.s.as_key(&c.t.key).idem(&key).post(&format!("/api/v1/campaigns/{campaign}/summary-runs"), &body);
    let confirmed = ok.assert_ok(200)["summaryRun"].clone();
    assert_eq!(confirmed["status"], "queued");
    assert_eq!(confirmed["reservedMicrocredits"].as_i64(), Some(maximum));
    assert!(confirmed["confirmedAt"].is_string());
    // The same request again is a replay; another confirmation is refused.
    let replay = c.s.as_key(&c.t.key).idem(&key).post(&format!("/api/v1/campaigns/{campaign}/summary-runs"), &body);
    assert!(replay.replayed);
    assert_eq!(replay.data()["summaryRun"]["id"], id.as_str());
    assert_eq!(code(&confirm(&c, &campaign, &id, maximum), 409), "estimate_already_confirmed");

    // Progress, then the end: charged what was used, never more than the maximum.
    let done = finished(&c, &campaign, &id);
    check("SummaryRun", &done);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!((done["assessedCount"].as_i64(), done["processedCount"].as_i64(), done["failedCount"].as_i64()), (Some(4), Some(4), Some(0)));
    let charged = done["chargedMicrocredits"].as_i64().unwrap();
    assert!(charged > 0 && charged <= maximum, "{charged} of {maximum}");
    assert_eq!(done["reservedMicrocredits"], 0);
    assert_eq!(ledger(&c, &id), vec![("charge".to_string(), charged), ("release".to_string(), maximum - charged), ("reserve".to_string(), maximum)]);
    assert_eq!(balance(&c), (before - charged, 0));
    // Cost per final outcome: the calls and the assessments of those contacts.
    let costs = done["costPerOutcome"].as_array().unwrap();
    let by: std::collections::HashMap<&str, &Value> = costs.iter().map(|o| (o["outcome"].as_str().unwrap(), o)).collect();
    assert_eq!((by["completed"]["contacts"].as_i64(), by["busy"]["contacts"].as_i64(), by["no_answer"]["contacts"].as_i64()), (Some(2), Some(1), Some(1)), "{costs:?}");
    let calls: i64 = c.db(&format!("SELECT SUM(charged) FROM calls WHERE campaign_id = '{campaign}'")).parse().unwrap();
    assert_eq!(costs.iter().map(|o| o["callMicrocredits"].as_i64().unwrap()).sum::<i64>(), calls);
    assert_eq!(costs.iter().map(|o| o["assessmentMicrocredits"].as_i64().unwrap()).sum::<i64>(), charged);
    assert!(costs.iter().all(|o| o["totalMicrocredits"].as_i64().unwrap() == o["callMicrocredits"].as_i64().unwrap() + o["assessmentMicrocredits"].as_i64().unwrap()));

    // The export: exactly one row per unique contact, RFC 4180, no formulas.
    let x = export(&c, &campaign, &id);
    assert_eq!(x.status, 200, "{}", x.text);
    assert_eq!(x.header("content-type"), "text/csv; charset=utf-8");
    assert!(x.header("content-disposition").starts_with("attachment; filename=\""), "{}", x.header("content-disposition"));
    assert!(x.text.starts_with("Contact,AI Summary,Next Action\r\n"));
    let rows = parse_csv(&x.text);
    assert_eq!(rows[0], ["Contact", "AI Summary", "Next Action"]);
    assert_eq!(rows.len(), 5, "{rows:?}");
    let contacts: std::collections::HashSet<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(contacts.len(), 4);
    assert!(contacts.contains("Ada, \"the first\" (+15550300001)"), "{contacts:?}");
    assert!(contacts.contains("'=HYPERLINK(\"http://x\") (+15550300002)"), "a formula is neutralised: {contacts:?}");
    let busy = rows.iter().find(|r| r[0] == "Bo (+15550302222)").unwrap();
    assert_eq!((busy[1].as_str(), busy[2].as_str()), ("Not reached: busy by voice after 1 attempt", "Try again on another channel or at another time"));
    let reached = rows.iter().find(|r| r[0].starts_with("Ada")).unwrap();
    assert!(reached[1].starts_with("Reached by voice (1 iteration); last said: \"Thanks, that's all. Goodbye.\""), "{reached:?}");

    // The contact read with campaignId carries the same conclusion and the outcomes.
    let read = c.get(&format!("/api/v1/contacts/{}?campaignId={campaign}", ids[2]));
    check("ContactDetail", &read);
    let summary = &read["campaignSummary"];
    assert_eq!(summary["assessment"]["summaryRunId"], id.as_str());
    assert_eq!(summary["assessment"]["summary"], "Not reached: busy by voice after 1 attempt");
    assert_eq!(summary["assessment"]["followUp"], true);
    assert_eq!(summary["outcomes"][0]["outcome"], "busy");
    assert_eq!(c.get(&format!("/api/v1/contacts/{}", ids[2]))["campaignSummary"], Value::Null);
    let stranger = c.contact("Dee", "+15550309999", json!({}));
    assert_eq!(c.get(&format!("/api/v1/contacts/{stranger}?campaignId={campaign}"))["campaignSummary"], Value::Null, "never a member");

    // A newer estimate; then the AI-recommended follow-up (the run says: try the two not reached again).
    let newer = estimate(&c, &campaign).assert_ok(201)["summaryRun"].clone();
    let f = c.send("POST", &format!("/api/v1/campaigns/{campaign}/iterations"), json!({"channel": "voice", "agentId": agent, "selection": {"aiRecommended": true}}));
    let created = f.assert_ok(201);
    assert_eq!(created["admission"]["accepted"], 2, "{created}");
    assert_eq!(created["iteration"]["audience"], "ai_recommended");
    let members = c.get(&format!("/api/v1/campaigns/{campaign}/memberships?iterationId={}", created["iteration"]["id"].as_str().unwrap()));
    let mut chosen: Vec<&str> = members["memberships"].as_array().unwrap().iter().map(|m| m["contactId"].as_str().unwrap()).collect();
    chosen.sort();
    let mut not_reached = vec![ids[2].as_str(), ids[3].as_str()];
    not_reached.sort();
    assert_eq!(chosen, not_reached);
    // The campaign changed: the newer estimate is stale, a new one waits for the draft, and no run is current.
    assert_eq!(code(&confirm(&c, &campaign, newer["id"].as_str().unwrap(), newer["maximumChargeMicrocredits"].as_i64().unwrap()), 409), "estimate_stale");
    assert_eq!(code(&estimate(&c, &campaign), 409), "iterations_not_finished");
    // Runs are append-only: the first one still reads as it ended.
    assert_eq!(run_of(&c, &campaign, &id), done);
    let list = c.get(&format!("/api/v1/campaigns/{campaign}/summary-runs"));
    assert_eq!(list["summaryRuns"][0]["id"], newer["id"], "newest first");

    // Exports of runs that are not finished, and of runs that do not exist.
    assert_eq!(code(&export(&c, &campaign, newer["id"].as_str().unwrap()), 409), "summary_run_not_finished");
    assert_eq!(code(&export(&c, &campaign, "018f0000-0000-7000-8000-000000000000"), 404), "summary_run_not_found");
    assert_eq!(code(&confirm(&c, &campaign, "018f0000-0000-7000-8000-000000000000", 1), 404), "summary_run_not_found");
}

/// An OpenAI-compatible chat endpoint: assessments (requests with a
/// `response_format`) answer a JSON conclusion, or a 500 when the material
/// mentions `fail_on`; other requests (agent turns) end the call with a
/// goodbye (the `end_call` tool).
/// Requests are counted; each waits `delay` first.
struct FakeAi {
    url: String,
    assessments: Arc<Mutex<Vec<String>>>,
}

impl FakeAi {
    fn start(fail_on: &'static str, delay: std::time::Duration) -> FakeAi {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        let assessments = Arc::new(Mutex::new(Vec::new()));
        let seen = assessments.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let Some(request) = read_request(&stream) else { return };
                    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                    let message = if body.get("response_format").is_some() {
                        std::thread::sleep(delay);
                        let material = body["messages"][1]["content"].as_str().unwrap_or("").to_string();
                        seen.lock().unwrap().push(material.clone());
                        if material.contains(fail_on) {
                            use std::io::Write;
                            let _ = write!(stream, "HTTP/1.1 500 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                            return;
                        }
                        let conclusion = json!({"summary": "=cmd|' /C calc'!A0", "nextAction": "Call back, \"soon\"", "followUp": true});
                        json!({"role": "assistant", "content": conclusion.to_string()})
                    } else {
                        // The call ends by the end_call tool, with its last words.
                        json!({"role": "assistant", "content": null,
                            "tool_calls": [{"id": "e", "type": "function", "function": {"name": "end_call", "arguments": "{\"message\":\"Thank you. Goodbye.\"}"}}]})
                    };
                    let answer = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": message}]});
                    answer_json(&stream, &answer.to_string());
                });
            }
        });
        FakeAi { url, assessments }
    }
    fn flags(&self) -> Vec<String> {
        vec!["--ai-endpoint".into(), self.url.clone(), "--ai-model".into(), "m".into()]
    }
    fn assessed(&self) -> Vec<String> {
        self.assessments.lock().unwrap().clone()
    }
}

#[test]
fn a_balance_short_of_the_maximum_is_refused_and_a_failing_contact_makes_the_run_partial() {
    let ai = FakeAi::start("busy after", std::time::Duration::ZERO);
    let c = C::with_flags(3, 1_000_000, 60_000, 10, &ai.flags());
    admin(&c.dir.0, &["voice", "configure", "--business", &c.t.business, "--price-per-block", "1"]);
    let priced = admin(&c.dir.0, &["summaries", "configure", "--business", &c.t.business, "--price-per-contact", "400000"]);
    assert_eq!((priced["pricePerContactMicrocredits"].as_i64(), priced["pricePerThousandCharactersMicrocredits"].as_i64()), (Some(400_000), Some(500)));
    let (campaign, ids) = completed_campaign(&c, &[("Ann", "+15550310001"), ("Ben", "+15550312222"), ("Col", "+15550310003")]);
    let run = estimate(&c, &campaign).assert_ok(201)["summaryRun"].clone();
    let (id, maximum) = (run["id"].as_str().unwrap().to_string(), run["maximumChargeMicrocredits"].as_i64().unwrap());
    assert!(maximum >= 1_200_000, "{run}");
    // The balance cannot hold the maximum: 402, nothing reserved, the estimate still stands.
    let (before, _) = balance(&c);
    let short = confirm(&c, &campaign, &id, maximum);
    short.assert_failure(402, "billing");
    assert_eq!(short.code(), "insufficient_credit");
    assert_eq!(balance(&c), (before, 0));
    assert_eq!(run_of(&c, &campaign, &id)["status"], "estimated");
    admin(&c.dir.0, &["credits", "add", "--business", &c.t.business, "--microcredits", "2000000"]);
    confirm(&c, &campaign, &id, maximum).assert_ok(200);

    // The busy contact's assessment keeps failing: three attempts, then the run ends partial.
    let done = finished(&c, &campaign, &id);
    assert_eq!((done["status"].as_str(), done["assessedCount"].as_i64(), done["failedCount"].as_i64()), (Some("partial"), Some(2), Some(1)), "{done}");
    let sent = ai.assessed();
    assert_eq!(sent.iter().filter(|m| m.contains("busy after")).count(), 3, "the failing contact was asked three times");
    assert_eq!(sent.len(), 5);
    let charged = done["chargedMicrocredits"].as_i64().unwrap();
    assert!(charged >= 800_000 && charged < maximum, "only the two assessed are charged: {charged} of {maximum}");
    assert_eq!(ledger(&c, &id), vec![("charge".to_string(), charged), ("release".to_string(), maximum - charged), ("reserve".to_string(), maximum)]);
    // Exported with what exists: the failed contact has empty conclusions; the provider's formula is neutralised.
    let x = export(&c, &campaign, &id);
    let rows = parse_csv(&x.text);
    assert_eq!(rows.len(), 4, "{rows:?}");
    let failed = rows.iter().find(|r| r[0] == "Ben (+15550312222)").unwrap();
    assert_eq!((failed[1].as_str(), failed[2].as_str()), ("", ""));
    let ann = rows.iter().find(|r| r[0] == "Ann (+15550310001)").unwrap();
    assert_eq!((ann[1].as_str(), ann[2].as_str()), ("'=cmd|' /C calc'!A0", "Call back, \"soon\""));
    // The failed contact has no assessment in its summary; the others do.
    assert_eq!(c.get(&format!("/api/v1/contacts/{}?campaignId={campaign}", ids[1]))["campaignSummary"]["assessment"], Value::Null);
    assert_eq!(c.get(&format!("/api/v1/contacts/{}?campaignId={campaign}", ids[0]))["campaignSummary"]["assessment"]["followUp"], true);
    // A partial run still recommends: the two assessed contacts (the fake says follow up) are the new audience.
    let agent = c.voice_agent(json!({}));
    let f = c.send("POST", &format!("/api/v1/campaigns/{campaign}/iterations"), json!({"channel": "voice", "agentId": agent, "selection": {"aiRecommended": true}}));
    assert_eq!(f.assert_ok(201)["admission"]["accepted"], 2);
}

#[test]
fn kill_9_mid_run_never_assesses_or_charges_a_contact_twice() {
    // Each assessment takes 15 ms: a step of 64 contacts takes about a second.
    let ai = FakeAi::start("never mentioned", std::time::Duration::from_millis(15));
    let mut c = C::with_flags(8, 50_000_000, 60_000, 5, &ai.flags());
    admin(&c.dir.0, &["voice", "configure", "--business", &c.t.business, "--price-per-block", "1"]);
    let people: Vec<(String, String)> = (1..=120).map(|i| (format!("P{i}"), format!("+1555032{i:04}"))).collect();
    let pairs: Vec<(&str, &str)> = people.iter().map(|(n, m)| (n.as_str(), m.as_str())).collect();
    let (campaign, _) = completed_campaign(&c, &pairs);
    let run = estimate(&c, &campaign).assert_ok(201)["summaryRun"].clone();
    let (id, maximum) = (run["id"].as_str().unwrap().to_string(), run["maximumChargeMicrocredits"].as_i64().unwrap());
    confirm(&c, &campaign, &id, maximum).assert_ok(200);
    // The crash lands after one step committed, in the middle of the next one's calls.
    poll("a step to commit and the next to be under way", || {
        let processed = run_of(&c, &campaign, &id)["processedCount"].as_i64().unwrap();
        ((64..120).contains(&processed) && ai.assessed().len() as i64 >= processed + 8).then_some(())
    });
    c.crash_and_restart();
    let done = finished(&c, &campaign, &id);
    assert_eq!((done["status"].as_str(), done["assessedCount"].as_i64(), done["contactCount"].as_i64()), (Some("completed"), Some(120), Some(120)), "{done}");
    // Each contact assessed once (only the batch in flight was asked again), charged once.
    let asked = ai.assessed().len();
    assert!((128..=120 + 64).contains(&asked), "{asked} assessments asked for 120 contacts");
    let rows = c.db(&format!("SELECT COUNT(*), SUM(attempts = 1), SUM(charged) FROM summary_assessments WHERE run_id = '{id}' AND status = 'assessed'"));
    let charged = done["chargedMicrocredits"].as_i64().unwrap();
    assert_eq!(rows, format!("120|120|{charged}"));
    assert_eq!(ledger(&c, &id), vec![("charge".to_string(), charged), ("release".to_string(), maximum - charged), ("reserve".to_string(), maximum)]);
    assert_eq!(balance(&c).1, 0, "nothing stays reserved");
}
