//! The agents component (operations 10-16 and 35-36) over HTTP: agents,
//! channels, the photoapp connection and channel assignments. Provider
//! connections come from `switchboard admin channel connect`.

use crate::harness::*;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::path::Path;
use std::process::Command;
use switchboard_gateway::validate::Validator;

mod channels;

/// Runs SQL on the data dir directly: reading the stored provider token
/// references (to prove no response contains them) and seeding structured
/// data sources with declared fields (owned by the data-sources component).
/// A query reads the database of the business it names, else every database
/// of the data dir (their rows one after another).
fn sql_rows(dir: &Path, sql: &str) -> Vec<Vec<String>> {
    database_files(dir, sql).iter().flat_map(|file| sql_rows_in(file, sql)).collect()
}

fn sql_rows_in(file: &Path, sql: &str) -> Vec<Vec<String>> {
    futures_executor::block_on(async {
        let db = libsql::Builder::new_local(file).build().await.unwrap();
        let c = db.connect().unwrap();
        c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        let mut rows = c.query(sql, ()).await.unwrap();
        let n = rows.column_count();
        let mut out = Vec::new();
        while let Some(r) = rows.next().await.unwrap() {
            out.push(
                (0..n)
                    .map(|i| match r.get_value(i).unwrap() {
                        libsql::Value::Text(s) => s,
                        libsql::Value::Integer(i) => i.to_string(),
                        libsql::Value::Null => "NULL".into(),
                        other => format!("{other:?}"),
                    })
                    .collect(),
            );
        }
        out
    })
}

/// Runs statements that name one business in its database.
fn sql_exec(dir: &Path, sql: &str) {
    let files = database_files(dir, sql);
    assert_eq!(files.len(), 1, "{sql} names no business of one database");
    futures_executor::block_on(async {
        let db = libsql::Builder::new_local(&files[0]).build().await.unwrap();
        let c = db.connect().unwrap();
        c.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        c.execute_batch(sql).await.unwrap();
    })
}

fn admin_fails(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("admin").arg("--data-dir").arg(dir).args(args).output().unwrap();
    assert!(!out.status.success(), "admin {args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

struct Ctx {
    s: Server,
    a: Tenant,
    b: Tenant,
    dir: DataDir,
    /// Every response body seen, to prove no provider token ever leaks.
    seen: RefCell<Vec<String>>,
    /// The OpenAPI document's schemas: every success `data` must conform.
    schemas: Validator,
}

fn setup() -> Ctx {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let (a, b) = (tenant(&dir.0, "all"), tenant(&dir.0, "all"));
    let schemas = document_schemas();
    Ctx { s, a, b, dir, seen: RefCell::new(Vec::new()), schemas }
}

impl Ctx {
    fn path(&self) -> &Path {
        &self.dir.0
    }
    /// Records the body and checks a success `data` against the operation's
    /// documented response schema.
    fn keep(&self, method: &str, path: &str, r: Resp) -> Resp {
        self.seen.borrow_mut().push(r.text.clone());
        if r.status < 300 {
            assert_documented(&self.schemas, method, path, &r);
        }
        r
    }
    fn get(&self, t: &Tenant, path: &str) -> Resp {
        let sep = if path.contains('?') { '&' } else { '?' };
        self.keep("GET", path, self.s.as_key(&t.key).get(&format!("{path}{sep}businessId={}", t.business)))
    }
    fn post(&self, t: &Tenant, path: &str, body: Value) -> Resp {
        self.keep("POST", path, self.s.as_key(&t.key).fresh().post(path, &with_business(t, body)))
    }
    fn patch(&self, t: &Tenant, path: &str, body: Value) -> Resp {
        self.keep("PATCH", path, self.s.as_key(&t.key).fresh().patch(path, &with_business(t, body)))
    }
    fn delete(&self, t: &Tenant, path: &str, body: Value) -> Resp {
        self.keep("DELETE", path, self.s.as_key(&t.key).fresh().delete(path, &with_business(t, body)))
    }
    fn create(&self, t: &Tenant, body: Value) -> Resp {
        self.post(t, "/api/v1/agents", body)
    }
    fn create_ok(&self, t: &Tenant, body: Value) -> Value {
        self.create(t, body).assert_ok(201).clone()
    }
    fn connect_chatapp(&self, t: &Tenant, pnid: &str, label: &str) -> Value {
        self.s.admin(&["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", pnid, "--label", label])
    }
    fn connect_photoapp(&self, t: &Tenant, acct: &str, username: &str) -> Value {
        self.s.admin(&["channel", "connect", "--business", &t.business, "--channel", "photoapp", "--account-id", acct, "--username", username])
    }
    fn category(&self, t: &Tenant, name: &str) -> String {
        let r = self.post(t, "/api/v1/contacts/categories", json!({"name": name}));
        assert!(r.status == 201 || r.status == 200, "{}", r.text);
        r.data()["category"]["id"].as_str().unwrap().to_string()
    }
    /// The business's built-in Contacts data source.
    fn contacts_source(&self, t: &Tenant) -> String {
        let rows = sql_rows(self.path(), &format!("SELECT id FROM data_sources WHERE business_id = '{}' AND built_in = 1", t.business));
        rows[0][0].clone()
    }
    /// Seeds a data source with declared fields (the data-sources component's rows).
    fn source(&self, t: &Tenant, class: &str, fields: &[&str]) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let kind = if class == "structured" { "table" } else { "text" };
        let mut sql = format!(
            "INSERT INTO data_sources (id, business_id, name, class, kind, built_in, created_at, updated_at) \
             VALUES ('{id}', '{}', 'Source {id}', '{class}', '{kind}', 0, '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z');",
            t.business
        );
        for (i, f) in fields.iter().enumerate() {
            sql += &format!(
                "INSERT INTO data_source_fields (business_id, data_source_id, field_key, label, type, position) \
                 VALUES ('{}', '{id}', '{f}', '{f}', 'text', {i});",
                t.business
            );
        }
        sql_exec(self.path(), &sql);
        id
    }
    fn tokens(&self) -> Vec<String> {
        sql_rows(self.path(), "SELECT token_ref FROM channel_connections WHERE token_ref IS NOT NULL").into_iter().map(|r| r[0].clone()).collect()
    }
    fn assert_no_token_leaked(&self, tokens: &[String]) {
        assert!(!tokens.is_empty());
        for body in self.seen.borrow().iter() {
            for t in tokens {
                assert!(!body.contains(t.as_str()), "a response contains a provider token reference: {body}");
                assert!(!body.contains("sbpt_"), "a response contains a provider token reference: {body}");
            }
        }
    }
}

fn with_business(t: &Tenant, mut body: Value) -> Value {
    if body.get("businessId").is_none() {
        body["businessId"] = json!(t.business);
    }
    body
}

fn words(n: usize) -> String {
    vec!["word"; n].join(" ")
}

fn detail_fields(r: &Resp) -> Vec<String> {
    r.body["error"]["details"].as_array().map_or(vec![], |d| d.iter().map(|x| x["field"].as_str().unwrap().to_string()).collect())
}

fn assert_invalid(r: &Resp, field: &str) {
    r.assert_failure(400, "validation");
    assert!(detail_fields(r).iter().any(|f| f == field), "expected a detail naming `{field}`: {}", r.text);
}

fn assert_code(r: &Resp, status: u16, category: &str, code: &str) {
    r.assert_failure(status, category);
    assert_eq!(r.code(), code, "{}", r.text);
}

fn chat(name: &str) -> Value {
    json!({"channel": "chatapp", "name": name, "instructions": "Answer questions about opening hours."})
}

fn voice(name: &str) -> Value {
    json!({"channel": "voice", "name": name, "instructions": "Call to confirm the appointment."})
}

fn reference_name_ok(n: &str) -> bool {
    let parts: Vec<&str> = n.split('-').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
}

#[test]
fn create_returns_agent_reference_name_readiness_and_defaults() {
    let c = setup();
    let r = c.create_ok(&c.a, chat("Front desk"));
    // A name is 1 to 120 characters on create too (the contract sets it for
    // update and leaves create to us).
    assert_invalid(&c.create(&c.a, chat(&"n".repeat(121))), "name");
    c.create_ok(&c.a, chat(&"n".repeat(120)));
    let a = &r["agent"];
    assert_eq!(a["status"], "active");
    assert_eq!(a["channel"], "chatapp");
    assert_eq!(a["name"], "Front desk");
    assert_eq!(a["languageCode"], "en");
    assert_eq!(a["businessId"], json!(c.a.business));
    assert_eq!(a["contactContextRequired"], false);
    assert_eq!(a["voiceSettings"], Value::Null);
    assert_eq!(a["photoappCollectMobileEnabled"], Value::Null);
    assert_eq!(a["dataSourceIds"], json!([]));
    assert_eq!(a["archivedAt"], Value::Null);
    let rn = r["referenceName"].as_str().unwrap();
    assert!(reference_name_ok(rn), "{rn}");
    assert_eq!(a["referenceName"], json!(rn));
    assert_eq!(r["channelReadiness"], json!({"channel": "chatapp", "live": true, "ready": false}));
    assert_eq!(r["assignment"], Value::Null);

    // Voice: effective defaults are returned; given values are kept.
    let v = c.create_ok(&c.a, voice("Caller"));
    assert_eq!(v["agent"]["voiceSettings"], json!({"backgroundNoiseLevelPercent": 300, "allowGreetingInterrupt": false, "nudgeAfterSilenceSeconds": 12}));
    assert_eq!(v["channelReadiness"], json!({"channel": "voice", "live": true, "ready": true}));
    assert_eq!(v["agent"]["photoappCollectMobileEnabled"], Value::Null);
    let mut body = voice("Caller 2");
    body["voiceSettings"] = json!({"agentGender": "female", "backgroundNoiseLevelPercent": 1000, "nudgeAfterSilenceSeconds": 7.5,
                                  "allowGreetingInterrupt": true, "firstGreeting": "Hello there"});
    body["languageCode"] = json!("pt-BR");
    let v2 = c.create_ok(&c.a, body);
    let vs = &v2["agent"]["voiceSettings"];
    assert_eq!(vs["agentGender"], "female");
    assert_eq!(vs["backgroundNoiseLevelPercent"], 1000);
    assert_eq!(vs["nudgeAfterSilenceSeconds"], 7.5);
    assert_eq!(vs["allowGreetingInterrupt"], true);
    assert_eq!(v2["agent"]["languageCode"], "pt-BR");

    // Photoapp: mobile capture defaults to true; not ready until connected.
    let p = c.create_ok(&c.a, json!({"channel": "photoapp", "name": "DM helper", "instructions": "Help."}));
    assert_eq!(p["agent"]["photoappCollectMobileEnabled"], true);
    assert_eq!(p["channelReadiness"], json!({"channel": "photoapp", "live": true, "ready": false}));
    let p2 = c.create_ok(&c.a, json!({"channel": "photoapp", "name": "Quiet", "instructions": "Help.", "photoappCollectMobileEnabled": false}));
    assert_eq!(p2["agent"]["photoappCollectMobileEnabled"], false);
    // sms and other agents can exist; their channels are not ready.
    let s = c.create_ok(&c.a, json!({"channel": "sms", "name": "Texter", "instructions": "Help."}));
    assert_eq!(s["channelReadiness"], json!({"channel": "sms", "live": false, "ready": false}));
    let o = c.create_ok(&c.a, json!({"channel": "other", "name": "Internal", "instructions": "Help."}));
    assert_eq!(o["channelReadiness"]["live"], false);

    // Reference names are unique within the business.
    let mut names = std::collections::HashSet::new();
    for i in 0..30 {
        let r = c.create_ok(&c.a, chat(&format!("Agent {i}")));
        assert!(names.insert(r["referenceName"].as_str().unwrap().to_string()));
    }

    // An exact retry with the same Idempotency-Key replays the same agent.
    let body = with_business(&c.a, chat("Replayed"));
    let r1 = c.s.as_key(&c.a.key).idem("agent-replay-1").post("/api/v1/agents", &body);
    let r2 = c.s.as_key(&c.a.key).idem("agent-replay-1").post("/api/v1/agents", &body);
    assert_eq!(r1.assert_ok(201)["agent"]["id"], r2.assert_ok(201)["agent"]["id"]);
    assert!(r2.replayed);
}

#[test]
fn agent_bad_inputs_are_clear_4xx() {
    let c = setup();
    let cat = c.category(&c.a, "Leads");
    let contacts = c.contacts_source(&c.a);
    let b_contacts = c.contacts_source(&c.b);
    let b_cat = c.category(&c.b, "B leads");

    // Instructions: at most 20,000 words (exactly 20,000 is fine).
    let mut body = chat("Long");
    body["instructions"] = json!(words(20_001));
    assert_invalid(&c.create(&c.a, body.clone()), "instructions");
    body["instructions"] = json!(words(20_000));
    c.create(&c.a, body).assert_ok(201);
    let mut body = chat("Blank");
    // Blank text is outside the document's pattern, so the gateway names the field.
    body["instructions"] = json!("   ");
    assert_invalid(&c.create(&c.a, body), "instructions");
    let mut body = chat("x");
    body["name"] = json!("  ");
    assert_invalid(&c.create(&c.a, body), "name");
    let mut body = chat("x");
    body["name"] = json!("");
    assert_invalid(&c.create(&c.a, body), "name");
    let mut body = chat("x");
    body["languageCode"] = json!("english please");
    // The document's pattern states the rule, so the gateway refuses it.
    let r = c.create(&c.a, body);
    assert_code(&r, 400, "validation", "invalid_request");
    assert_eq!(r.body["error"]["details"][0]["field"], "languageCode", "{}", r.text);

    // Voice settings.
    let vs = |settings: Value| {
        let mut b = voice("V");
        b["voiceSettings"] = settings;
        b
    };
    assert_invalid(&c.create(&c.a, vs(json!({"firstGreeting": words(31)}))), "voiceSettings.firstGreeting");
    c.create(&c.a, vs(json!({"firstGreeting": words(30)}))).assert_ok(201);
    assert_invalid(&c.create(&c.a, vs(json!({"backgroundNoiseLevelPercent": 75}))), "voiceSettings.backgroundNoiseLevelPercent");
    assert_invalid(&c.create(&c.a, vs(json!({"backgroundNoiseLevelPercent": 0}))), "voiceSettings.backgroundNoiseLevelPercent");
    assert_invalid(&c.create(&c.a, vs(json!({"backgroundNoiseLevelPercent": 1050}))), "voiceSettings.backgroundNoiseLevelPercent");
    assert_invalid(&c.create(&c.a, vs(json!({"agentGender": "robot"}))), "voiceSettings.agentGender");
    assert_invalid(&c.create(&c.a, vs(json!({"colour": "red"}))), "voiceSettings.colour");
    assert_code(&c.create(&c.a, vs(json!({"nudgeAfterSilenceSeconds": -1}))), 400, "validation", "invalid_voice_settings");
    let r = c.create(&c.a, vs(json!({"firstGreeting": "Hi {{firstName}}, this is the clinic"})));
    assert_code(&r, 400, "validation", "undeclared_placeholder");
    assert!(r.message().contains("firstName") && r.message().contains("voiceSettings.firstGreeting"), "{}", r.text);
    assert_code(&c.create(&c.a, vs(json!({"firstGreeting": "Hi {{first name}}"}))), 400, "validation", "invalid_placeholder");
    // The template language (components/agent-runtime/src/template.rs): an
    // unclosed `{{` is refused when written, never said as text later.
    let r = c.create(&c.a, vs(json!({"firstGreeting": "Hi {{firstName"})));
    assert_code(&r, 400, "validation", "invalid_placeholder");
    assert!(r.message().contains("unclosed") && r.message().contains("voiceSettings.firstGreeting"), "{}", r.text);
    // Voice settings only on voice agents; mobile capture only on photoapp;
    // an assignment's providerAccountId only on photoapp. The document says
    // so (one body shape per channel), and the refusal names the channel.
    let mut body = chat("x");
    body["voiceSettings"] = json!({"agentGender": "male"});
    let r = c.create(&c.a, body);
    assert_code(&r, 400, "validation", "invalid_request");
    assert!(r.message().contains("`voiceSettings` is not allowed when `channel` is \"chatapp\""), "{}", r.text);
    let mut body = voice("x");
    body["photoappCollectMobileEnabled"] = json!(true);
    let r = c.create(&c.a, body);
    assert_code(&r, 400, "validation", "invalid_request");
    assert!(r.message().contains("`photoappCollectMobileEnabled` is not allowed when `channel` is \"voice\""), "{}", r.text);
    let mut body = chat("x");
    body["assignment"] = json!({"providerAccountId": "acct-1"});
    let r = c.create(&c.a, body);
    assert_code(&r, 400, "validation", "invalid_request");
    assert!(r.message().contains("`assignment.providerAccountId` is not allowed when `channel` is \"chatapp\""), "{}", r.text);

    // Duplicate ids (schema: uniqueItems).
    let mut body = chat("x");
    body["dataSourceIds"] = json!([contacts, contacts]);
    assert_invalid(&c.create(&c.a, body), "dataSourceIds[1]");
    let mut body = chat("x");
    body["contactCategoryIds"] = json!([cat, cat]);
    assert_invalid(&c.create(&c.a, body), "contactCategoryIds[1]");

    // Unknown and foreign ids look the same: 404 naming the field and id.
    let ghost = uuid::Uuid::new_v4().to_string();
    for id in [&ghost, &b_contacts] {
        let mut body = chat("x");
        body["dataSourceIds"] = json!([contacts, id]);
        let r = c.create(&c.a, body);
        assert_code(&r, 404, "not_found", "data_source_not_found");
        assert!(r.message().contains("dataSourceIds[1]") && r.message().contains(id.as_str()), "{}", r.text);
    }
    for id in [&ghost, &b_cat] {
        let mut body = chat("x");
        body["contactCategoryIds"] = json!([id]);
        let r = c.create(&c.a, body);
        assert_code(&r, 404, "not_found", "category_not_found");
        assert!(r.message().contains("contactCategoryIds[0]"), "{}", r.text);
    }

    // Declared variables.
    c.post(&c.a, "/api/v1/contacts", json!({"name": "Ada", "mobile": "+447700900123", "categoryIds": [cat], "fields": {"city": "London"}})).assert_ok(201);
    let table = c.source(&c.a, "structured", &["plan", "renewal_date"]);
    let notes = c.source(&c.a, "unstructured", &[]);
    let var = |source: &str, key: &str, alias: &str| json!({"sourceId": source, "fieldKey": key, "alias": alias});
    let with_vars = |vars: Value| {
        let mut b = chat("Vars");
        b["dataSourceVariables"] = vars;
        b
    };
    let ok = c.create_ok(&c.a, with_vars(json!([var(&contacts, "name", "customerName"), var(&contacts, "mobile", "mobile"), var(&contacts, "city", "city"), var(&table, "plan", "plan")])));
    assert_eq!(ok["agent"]["contactContextRequired"], true);
    assert_eq!(ok["agent"]["dataSourceVariables"][3], var(&table, "plan", "plan"));
    let r = c.create(&c.a, with_vars(json!([var(&contacts, "shoeSize", "shoe")])));
    assert_code(&r, 400, "validation", "unknown_field_key");
    assert!(r.message().contains("dataSourceVariables[0].fieldKey") && r.message().contains("shoeSize"), "{}", r.text);
    assert_code(&c.create(&c.a, with_vars(json!([var(&table, "city", "city")]))), 400, "validation", "unknown_field_key");
    let r = c.create(&c.a, with_vars(json!([var(&contacts, "name", "who"), var(&table, "plan", "who")])));
    assert_code(&r, 400, "validation", "duplicate_alias");
    assert!(r.message().contains("dataSourceVariables[1].alias"), "{}", r.text);
    assert_code(&c.create(&c.a, with_vars(json!([var(&notes, "body", "body")]))), 400, "validation", "data_source_not_structured");
    let r = c.create(&c.a, with_vars(json!([var(&b_contacts, "name", "name")])));
    assert_code(&r, 404, "not_found", "data_source_not_found");
    assert!(r.message().contains("dataSourceVariables[0].sourceId"), "{}", r.text);
    assert_invalid(&c.create(&c.a, with_vars(json!([var(&contacts, "1name", "x")]))), "dataSourceVariables[0].fieldKey");
    assert_invalid(&c.create(&c.a, with_vars(json!([var(&contacts, "name", "my-alias")]))), "dataSourceVariables[0].alias");
    assert_invalid(&c.create(&c.a, with_vars(json!([{"sourceId": contacts, "fieldKey": "name"}]))), "dataSourceVariables[0].alias");

    // Contacts-backed variables: a voice agent must be scoped to categories.
    let mut body = voice("Needs categories");
    body["dataSourceVariables"] = json!([var(&contacts, "name", "firstName")]);
    body["voiceSettings"] = json!({"firstGreeting": "Hi {{firstName}}, this is the clinic"});
    assert_code(&c.create(&c.a, body.clone()), 400, "validation", "contact_categories_required");
    body["contactCategoryIds"] = json!([cat]);
    let r = c.create_ok(&c.a, body);
    assert_eq!(r["agent"]["contactContextRequired"], true);
    assert_eq!(r["agent"]["contactCategoryIds"], json!([cat]));
    assert_eq!(r["agent"]["voiceSettings"]["firstGreeting"], "Hi {{firstName}}, this is the clinic");
    // So does one whose variables come only from another structured
    // source: their values are read from the contact's row of it, so the
    // agent needs a contact too (operation 38).
    let mut body = voice("Plans");
    body["dataSourceVariables"] = json!([var(&table, "plan", "plan")]);
    let r = c.create(&c.a, body.clone());
    assert_code(&r, 400, "validation", "contact_categories_required");
    assert!(r.message().contains("contactCategoryIds") && !r.message().contains("Contacts variables"), "{}", r.text);
    body["contactCategoryIds"] = json!([cat]);
    assert_eq!(c.create_ok(&c.a, body)["agent"]["contactContextRequired"], true);
    // A chatapp agent's variables of another source set the flag as well
    // (no categories needed: only calls read it); none, no flag.
    assert_eq!(c.create_ok(&c.a, with_vars(json!([var(&table, "renewal_date", "renewal")])))["agent"]["contactContextRequired"], true);
    assert_eq!(c.create_ok(&c.a, voice("No variables"))["agent"]["contactContextRequired"], false);

    // Nothing above left a half-created agent behind.
    let listed = c.get(&c.a, "/api/v1/agents?limit=200");
    let names: Vec<&str> = listed.assert_ok(200)["agents"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Long", "V", "Vars", "Needs categories", "Plans", "Vars", "No variables"]);
}

#[test]
fn update_archive_list_and_tenancy() {
    let c = setup();
    let cat = c.category(&c.a, "VIP");
    let contacts = c.contacts_source(&c.a);
    let created = c.create_ok(&c.a, voice("Caller"));
    let id = created["agent"]["id"].as_str().unwrap().to_string();
    let rn = created["referenceName"].clone();

    let upd = |body: Value| {
        let mut b = json!({"agentId": id});
        for (k, v) in body.as_object().unwrap() {
            b[k] = v.clone();
        }
        c.patch(&c.a, "/api/v1/agents", b)
    };
    let r = upd(json!({"channel": "voice", "name": "Caller v2", "instructions": "New instructions.", "languageCode": "fr",
                       "dataSourceIds": [contacts], "contactCategoryIds": [cat],
                       "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "name", "alias": "name"}],
                       "voiceSettings": {"backgroundNoiseLevelPercent": 50, "firstGreeting": "Bonjour {{name}}"}}));
    let a = r.assert_ok(200)["agent"].clone();
    assert_eq!(a["name"], "Caller v2");
    assert_eq!(a["languageCode"], "fr");
    assert_eq!(a["referenceName"], rn, "the reference name is stable");
    assert_eq!(a["contactContextRequired"], true);
    assert_eq!(a["dataSourceIds"], json!([contacts]));
    assert_eq!(a["voiceSettings"]["backgroundNoiseLevelPercent"], 50);
    assert_eq!(a["voiceSettings"]["nudgeAfterSilenceSeconds"], 12);
    // Full replacement: omitted lists are emptied, omitted settings default.
    let r = upd(json!({"channel": "voice", "name": "Caller v3", "instructions": "Plain."}));
    let a = r.assert_ok(200)["agent"].clone();
    assert_eq!(a["dataSourceVariables"], json!([]));
    assert_eq!(a["contactContextRequired"], false);
    assert_eq!(a["languageCode"], "en");
    assert_eq!(a["voiceSettings"]["backgroundNoiseLevelPercent"], 300);
    assert_eq!(a["referenceName"], rn);

    // Update rules.
    assert_invalid(&upd(json!({"channel": "voice", "name": "n".repeat(121), "instructions": "x"})), "name");
    upd(json!({"channel": "voice", "name": "n".repeat(120), "instructions": "x"})).assert_ok(200);
    assert_invalid(&upd(json!({"channel": "voice", "name": "x", "instructions": words(20_001)})), "instructions");
    assert_code(&upd(json!({"channel": "chatapp", "name": "x", "instructions": "x"})), 409, "conflict", "channel_immutable");
    assert_code(
        &upd(json!({"channel": "voice", "name": "x", "instructions": "x", "dataSourceVariables": [{"sourceId": contacts, "fieldKey": "name", "alias": "n"}]})),
        400,
        "validation",
        "contact_categories_required",
    );
    // A variable of another structured source: the same rule and the flag.
    let table = c.source(&c.a, "structured", &["plan"]);
    let plan = json!([{"sourceId": table, "fieldKey": "plan", "alias": "plan"}]);
    assert_code(&upd(json!({"channel": "voice", "name": "x", "instructions": "x", "dataSourceVariables": plan})), 400, "validation", "contact_categories_required");
    let a = upd(json!({"channel": "voice", "name": "x", "instructions": "x", "dataSourceVariables": plan, "contactCategoryIds": [cat]})).assert_ok(200)["agent"].clone();
    assert_eq!((a["contactContextRequired"].clone(), a["dataSourceVariables"].clone()), (json!(true), plan));
    assert_invalid(&c.patch(&c.a, "/api/v1/agents", json!({"channel": "voice", "name": "x", "instructions": "x"})), "agentId");
    let ghost = uuid::Uuid::new_v4().to_string();
    assert_code(&c.patch(&c.a, "/api/v1/agents", json!({"agentId": ghost, "channel": "voice", "name": "x", "instructions": "x"})), 404, "not_found", "agent_not_found");

    // Tenancy: B cannot read, update or archive A's agent.
    let b_list = c.get(&c.b, "/api/v1/agents");
    assert_eq!(b_list.assert_ok(200)["agents"], json!([]));
    assert_code(&c.patch(&c.b, "/api/v1/agents", json!({"agentId": id, "channel": "voice", "name": "x", "instructions": "x"})), 404, "not_found", "agent_not_found");
    assert_code(&c.delete(&c.b, "/api/v1/agents", json!({"agentId": id})), 404, "not_found", "agent_not_found");
    // B naming A's business in the body is refused by the host.
    let r = c.s.as_key(&c.b.key).fresh().post("/api/v1/agents", &json!({"businessId": c.a.business, "channel": "voice", "name": "x", "instructions": "x"}));
    r.assert_failure(403, "authorization");

    // Archive: status archived; twice is harmless and answers the same record.
    let first = c.delete(&c.a, "/api/v1/agents", json!({"agentId": id}));
    let a1 = first.assert_ok(200)["agent"].clone();
    assert_eq!(a1["status"], "archived");
    assert!(a1["archivedAt"].is_string());
    let second = c.delete(&c.a, "/api/v1/agents", json!({"agentId": id}));
    assert_eq!(second.assert_ok(200)["agent"], a1);
    assert_code(&upd(json!({"channel": "voice", "name": "x", "instructions": "x"})), 409, "conflict", "agent_archived");
    assert_code(&c.delete(&c.a, "/api/v1/agents", json!({"agentId": ghost})), 404, "not_found", "agent_not_found");

    // Listing: archived agents stay listed with their status; cursor pages.
    for i in 0..4 {
        c.create_ok(&c.a, chat(&format!("Chat {i}")));
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            Some(cur) => format!("/api/v1/agents?limit=2&cursor={cur}"),
            None => "/api/v1/agents?limit=2".into(),
        };
        let r = c.get(&c.a, &q);
        let d = r.assert_ok(200).clone();
        for a in d["agents"].as_array().unwrap() {
            seen.push((a["name"].as_str().unwrap().to_string(), a["status"].as_str().unwrap().to_string()));
        }
        match d["nextCursor"].as_str() {
            Some(n) => cursor = Some(n.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[0].1, "archived");
    assert!(seen[1..].iter().all(|(_, s)| s == "active"));
    let r = c.get(&c.a, "/api/v1/agents?cursor=not-a-cursor");
    assert_code(&r, 400, "validation", "invalid_request");
    assert_eq!(r.body["error"]["details"][0]["field"], "cursor", "{}", r.text);
}

/// Migration 0040: agents stored while only Contacts variables set
/// `contactContextRequired` are flagged on the next start when they declare
/// a variable of any structured source; the others keep their flag.
#[test]
fn migration_0040_flags_agents_that_declare_any_variable() {
    let c = setup();
    let cat = c.category(&c.a, "VIP");
    let contacts = c.contacts_source(&c.a);
    let table = c.source(&c.a, "structured", &["plan"]);
    let var = |source: &str, key: &str| json!([{"sourceId": source, "fieldKey": key, "alias": key}]);
    let with = |mut body: Value, vars: Value| {
        body["dataSourceVariables"] = vars;
        body["contactCategoryIds"] = json!([cat]);
        body
    };
    let id = |r: Value| r["agent"]["id"].as_str().unwrap().to_string();
    let voice_table = id(c.create_ok(&c.a, with(voice("Plans"), var(&table, "plan"))));
    let chat_table = id(c.create_ok(&c.a, with(chat("Plans chat"), var(&table, "plan"))));
    let voice_contacts = id(c.create_ok(&c.a, with(voice("Names"), var(&contacts, "name"))));
    let plain = id(c.create_ok(&c.a, voice("Plain")));
    let Ctx { mut s, dir, a, .. } = c;
    assert!(s.terminate().success());

    // The flags as the rule before it stored them, and 0040 not applied.
    let biz = a.business.clone();
    sql_exec(
        &dir.0,
        &format!(
            "UPDATE agents SET contact_context_required = EXISTS (SELECT 1 FROM agent_variables v JOIN data_sources d ON d.business_id = v.business_id \
             AND d.id = v.data_source_id WHERE v.agent_id = agents.id AND d.built_in = 1) WHERE business_id = '{biz}'; \
             DELETE FROM schema_migrations WHERE name = '0040_contact_backed_variables.sql'"
        ),
    );
    let flags = |dir: &Path| -> Vec<(String, String)> {
        sql_rows(dir, &format!("SELECT id, contact_context_required FROM agents WHERE business_id = '{biz}' ORDER BY id")).into_iter().map(|r| (r[0].clone(), r[1].clone())).collect()
    };
    let before = flags(&dir.0);
    let flag_of = |flags: &[(String, String)], id: &str| flags.iter().find(|(a, _)| a == id).unwrap().1.clone();
    assert_eq!([&voice_table, &chat_table, &voice_contacts, &plain].map(|a| flag_of(&before, a)), ["0", "0", "1", "0"]);

    // The next start applies it; the API shows the recomputed flags.
    let s = Server::start(&dir.0);
    let listed = s.as_key(&a.key).get(&format!("/api/v1/agents?businessId={biz}&limit=200"));
    let agents = listed.assert_ok(200)["agents"].as_array().unwrap().clone();
    let flag = |id: &str| agents.iter().find(|a| a["id"] == id).unwrap()["contactContextRequired"].clone();
    assert_eq!([&voice_table, &chat_table, &voice_contacts, &plain].map(|a| flag(a)), [json!(true), json!(true), json!(true), json!(false)]);
    // Calls read it: the table agent needs a contact.
    let r = s.as_key(&a.key).get(&format!("/api/v1/voice/calls/resolve?businessId={biz}&agentId={voice_table}&toNumber=%2B14155550100"));
    assert_eq!(r.assert_ok(200)["contactRequired"], true);
}
