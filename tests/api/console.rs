//! The console over HTTP: logins and sessions, CSRF, roles, tenancy, keys
//! issued in the browser and console-only agent testing, against the real
//! binary. (The page itself is driven in a real browser by
//! tests/browser/console.py.)

use crate::harness::*;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

pub(crate) const PASSWORD: &str = "correct horse battery";

/// A console user of `business` with a password (`admin user create
/// --password-stdin`).
pub(crate) fn user(dir: &std::path::Path, business: &str, email: &str, role: &str) -> Value {
    let mut child = Command::new(BIN)
        .args(["admin", "--data-dir"])
        .arg(dir)
        .args(["user", "create", "--business", business, "--email", email, "--role", role, "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{PASSWORD}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A browser: keeps the session cookie the server sets and sends the CSRF
/// token on writes when it has one.
pub(crate) struct Browser<'a> {
    s: &'a Server,
    http: reqwest::blocking::Client,
    cookie: Option<String>,
    csrf: Option<String>,
}

impl<'a> Browser<'a> {
    pub(crate) fn new(s: &'a Server) -> Browser<'a> {
        let http = reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Browser { s, http, cookie: None, csrf: None }
    }

    pub(crate) fn login(s: &'a Server, email: &str) -> Browser<'a> {
        let mut b = Browser::new(s);
        let r = b.send("POST", "/console/api/session", Some(json!({"email": email, "password": PASSWORD})));
        r.assert_ok(200);
        b.csrf = r.data()["csrfToken"].as_str().map(String::from);
        b
    }

    pub(crate) fn send(&mut self, method: &str, path: &str, body: Option<Value>) -> Resp {
        let mut rb = self.http.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{}{}", self.s.base, path));
        if let Some(c) = &self.cookie {
            rb = rb.header("cookie", format!("sb_session={c}"));
        }
        if let Some(t) = &self.csrf {
            rb = rb.header("x-csrf-token", t.as_str());
        }
        if path.starts_with("/api/v1/") && method != "GET" {
            rb = rb.header("idempotency-key", uuid::Uuid::new_v4().to_string());
        }
        if let Some(b) = body {
            rb = rb.header("content-type", "application/json").body(b.to_string());
        }
        let r = Resp::from(rb.send().unwrap());
        let set = r.header("set-cookie").to_string();
        if let Some(v) = set.strip_prefix("sb_session=") {
            let token = v.split(';').next().unwrap_or("");
            self.cookie = (!token.is_empty()).then(|| token.to_string());
        }
        r
    }
    pub(crate) fn get(&mut self, path: &str) -> Resp {
        self.send("GET", path, None)
    }
    pub(crate) fn post(&mut self, path: &str, body: Value) -> Resp {
        self.send("POST", path, Some(body))
    }
    /// The same request without the CSRF token.
    pub(crate) fn without_csrf(&mut self, method: &str, path: &str, body: Option<Value>) -> Resp {
        let t = self.csrf.take();
        let r = self.send(method, path, body);
        self.csrf = t;
        r
    }
}

pub(crate) fn assert_code(r: &Resp, status: u16, category: &str, code: &str) {
    r.assert_failure(status, category);
    assert_eq!(r.code(), code, "{}", r.text);
}

#[test]
fn the_page_is_served_strictly_and_a_session_begins_only_at_login() {
    let dir = DataDir::new();
    let t = tenant(&dir.0, "contacts:read");
    user(&dir.0, &t.business, "Owner@Example.com", "owner");
    let s = Server::start(&dir.0);
    let mut b = Browser::new(&s);

    let page = b.get("/console/");
    assert_eq!(page.status, 200);
    // Every script the page loads is served: the vendored libraries, then
    // ours with the helpers first and the routes last.
    let scripts: Vec<&str> = page.text.split("<script src=\"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
    let ours: Vec<&&str> = scripts.iter().skip_while(|s| s.starts_with("/console/vendor/")).collect();
    assert!(ours.iter().all(|s| s.starts_with("/console/js/")), "{}", page.text);
    assert_eq!((ours.first(), ours.last()), (Some(&&"/console/js/core.js"), Some(&&"/console/js/main.js")), "{}", page.text);
    assert!(page.header("content-security-policy").contains("script-src 'self'"));
    assert!(!page.header("content-security-policy").contains("unsafe-inline"));
    assert_eq!(page.header("x-frame-options"), "DENY");
    assert!(page.header("set-cookie").is_empty(), "no cookie without a login");
    for asset in scripts.iter().copied().chain(["/console/console.css"]) {
        let r = b.get(asset);
        assert_eq!(r.status, 200, "{asset}");
        assert!(r.header("set-cookie").is_empty());
        if asset.ends_with(".js") {
            assert!(r.header("content-type").starts_with("text/javascript"), "{asset}");
            assert!(r.text.contains("\"use strict\";"), "{asset}");
        }
    }
    assert_eq!(b.get("/console/console.js").status, 404, "the one-file script is gone");
    let r = b.get("/console");
    assert_eq!((r.status, r.header("location")), (308, "/console/"));

    assert_code(&b.get("/console/api/session"), 401, "authentication", "session_required");
    assert_code(&b.get(&format!("/api/v1/contacts?businessId={}", t.business)), 401, "authentication", "authentication_required");

    // A wrong password and an unknown address get the same answer and no cookie.
    let wrong = b.post("/console/api/session", json!({"email": "owner@example.com", "password": "wrong password!"}));
    let unknown = b.post("/console/api/session", json!({"email": "nobody@example.com", "password": PASSWORD}));
    for r in [&wrong, &unknown] {
        r.assert_failure(401, "authentication");
        assert!(r.header("set-cookie").is_empty());
    }
    assert_eq!((wrong.code(), wrong.message()), (unknown.code(), unknown.message()));
    assert!(b.cookie.is_none());

    let r = b.post("/console/api/session", json!({"email": " OWNER@example.com ", "password": PASSWORD}));
    let me = r.assert_ok(200).clone();
    let cookie = r.header("set-cookie").to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain http on loopback: {cookie}");
    assert!(!cookie.contains(&t.business) && !cookie.contains(me["userId"].as_str().unwrap()), "the cookie names nobody: {cookie}");
    assert_eq!(me["businessId"], json!(t.business));
    assert_eq!(me["email"], json!("owner@example.com"));
    assert_eq!(me["role"], json!("owner"));
    assert_eq!(r.header("cache-control"), "no-store");
    b.csrf = me["csrfToken"].as_str().map(String::from);

    let again = b.get("/console/api/session");
    assert_eq!(again.assert_ok(200)["userId"], me["userId"]);
    // The owner reads through the public API with the session.
    b.get(&format!("/api/v1/contacts?businessId={}", t.business)).assert_ok(200);

    // Logging out is a write: it needs the CSRF token.
    assert_code(&b.without_csrf("DELETE", "/console/api/session", None), 403, "authorization", "csrf_token_invalid");
    let out = b.send("DELETE", "/console/api/session", None);
    out.assert_ok(200);
    assert!(out.header("set-cookie").contains("Max-Age=0"));
    // The old cookie is dead even if a browser kept it.
    let old = b.cookie.replace(cookie.trim_start_matches("sb_session=").split(';').next().unwrap().to_string());
    assert!(old.is_none());
    assert_code(&b.get("/console/api/session"), 401, "authentication", "session_expired");
    assert_code(&b.get(&format!("/api/v1/contacts?businessId={}", t.business)), 401, "authentication", "session_expired");
}

#[test]
fn logins_are_rate_limited_per_account() {
    let dir = DataDir::new();
    let t = tenant(&dir.0, "contacts:read");
    user(&dir.0, &t.business, "a@example.com", "owner");
    user(&dir.0, &t.business, "b@example.com", "owner");
    let s = Server::start(&dir.0);
    let mut b = Browser::new(&s);
    for _ in 0..5 {
        b.post("/console/api/session", json!({"email": "a@example.com", "password": "not the password"})).assert_failure(401, "authentication");
    }
    // The sixth attempt is refused before the password is looked at, even the right one.
    let r = b.post("/console/api/session", json!({"email": "a@example.com", "password": PASSWORD}));
    assert_code(&r, 429, "rate_limit", "login_rate_limited");
    assert_eq!(r.header("retry-after"), "60");
    assert!(r.header("set-cookie").is_empty());
    // Another account from the same address still logs in.
    Browser::login(&s, "b@example.com");
}

#[test]
fn a_session_is_the_public_api_with_its_role_csrf_and_business() {
    let dir = DataDir::new();
    let a = tenant(&dir.0, "contacts:read");
    let other = tenant(&dir.0, "contacts:read,contacts:write");
    user(&dir.0, &a.business, "owner@a.example", "owner");
    user(&dir.0, &a.business, "viewer@a.example", "viewer");
    let s = Server::start(&dir.0);
    let mut owner = Browser::login(&s, "owner@a.example");
    let mut viewer = Browser::login(&s, "viewer@a.example");

    let leads = owner.post("/api/v1/contacts/categories", json!({"businessId": a.business, "name": "Leads"})).assert_ok(201)["category"]["id"].clone();
    let contact = json!({"businessId": a.business, "mobile": "+14155550101", "name": "Ana", "categoryIds": [leads]});
    let create = |b: &mut Browser, body: &Value| b.post("/api/v1/contacts", body.clone());

    // The same operation, the same validation and envelope as with a key.
    let bad = create(&mut owner, &json!({"businessId": a.business, "mobile": "nope", "categoryIds": [leads]}));
    bad.assert_failure(400, "validation");
    assert_code(&owner.without_csrf("POST", "/api/v1/contacts", Some(contact.clone())), 403, "authorization", "csrf_token_invalid");
    let wrong_token = {
        let t = owner.csrf.replace("0".repeat(64));
        let r = create(&mut owner, &contact);
        owner.csrf = t;
        r
    };
    assert_code(&wrong_token, 403, "authorization", "csrf_token_invalid");
    let id = create(&mut owner, &contact).assert_ok(201)["contact"]["id"].as_str().unwrap().to_string();

    // A viewer reads and cannot write.
    let read = viewer.get(&format!("/api/v1/contacts/{id}?businessId={}", a.business));
    assert_eq!(read.assert_ok(200)["contact"]["name"], json!("Ana"));
    let r = create(&mut viewer, &json!({"businessId": a.business, "mobile": "+14155550102", "categoryIds": [leads]}));
    assert_code(&r, 403, "authorization", "missing_scope");
    assert_code(&viewer.post("/console/api/keys", json!({"scopes": ["contacts:read"]})), 403, "authorization", "owner_role_required");

    // Business A's session cannot touch business B.
    let r = owner.get(&format!("/api/v1/contacts?businessId={}", other.business));
    assert_code(&r, 403, "authorization", "business_mismatch");
    let r = create(&mut owner, &json!({"businessId": other.business, "mobile": "+14155550103", "categoryIds": [leads]}));
    assert_code(&r, 403, "authorization", "business_mismatch");
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM contacts WHERE business_id = '{}'", other.business)).trim(), "0");
}

#[test]
fn keys_are_issued_shown_once_listed_and_revoked_in_the_console() {
    let dir = DataDir::new();
    let t = tenant(&dir.0, "agents:read");
    user(&dir.0, &t.business, "owner@example.com", "owner");
    let s = Server::start(&dir.0);
    let mut b = Browser::login(&s, "owner@example.com");

    assert_code(&b.without_csrf("POST", "/console/api/keys", Some(json!({"scopes": ["contacts:read"]}))), 403, "authorization", "csrf_token_invalid");
    assert_code(&b.post("/console/api/keys", json!({"scopes": ["contacts:fly"]})), 400, "validation", "invalid_scopes");
    let created = b.post("/console/api/keys", json!({"scopes": ["contacts:read"]}));
    let k = created.assert_ok(201).clone();
    let key = k["apiKey"].as_str().unwrap().to_string();
    let key_id = k["keyId"].as_str().unwrap().to_string();
    assert!(key.starts_with("sbk_"), "{key}");
    assert_eq!(created.header("cache-control"), "no-store");
    assert_eq!(sql(&dir.0, &format!("SELECT COUNT(*) FROM api_keys WHERE id = '{key_id}' AND key_hash NOT LIKE '%{}%'", &key[4..])).trim(), "1", "stored hashed");

    // The key works with curl-like requests, within its scopes.
    let api = s.as_key(&key);
    api.get(&format!("/api/v1/contacts?businessId={}", t.business)).assert_ok(200);
    assert_code(&api.get(&format!("/api/v1/agents?businessId={}", t.business)), 403, "authorization", "missing_scope");

    // Never shown again: not in the list, not in the page or its assets.
    let list = b.get("/console/api/keys");
    let keys = list.assert_ok(200)["keys"].as_array().unwrap().clone();
    assert!(!list.text.contains(&key) && !list.text.contains(&key[4..]), "{}", list.text);
    let ours = keys.iter().find(|x| x["keyId"] == json!(key_id)).unwrap();
    assert_eq!(ours["display"], json!(format!("sbk_…{}", &key[key.len() - 4..])));
    assert_eq!(ours["scopes"], json!(["contacts:read"]));
    assert!(ours["lastUsedAt"].is_string(), "last use noted: {ours}");
    assert_eq!(keys.len(), 2, "the admin command's key is the same record set");
    for path in ["/console/", "/console/js/core.js", "/console/console.css", "/console/api/session"] {
        assert!(!b.get(path).text.contains(&key), "{path}");
    }

    // Session routes refuse API keys, and API keys cannot reach session-only operations.
    assert_code(&api.get("/console/api/keys"), 401, "authentication", "session_required");
    assert_code(&s.as_key(&t.key).get("/console/api/session"), 401, "authentication", "session_required");
    assert_code(&api.post("/console/api/keys", &json!({"scopes": ["contacts:read"]})), 401, "authentication", "session_required");
    let agent_test = format!("/console/api/agents/{}/test?businessId={}", uuid::Uuid::new_v4(), t.business);
    assert_code(&s.as_key(&t.key).get(&agent_test), 401, "authentication", "session_required");

    // Revocation is immediate.
    assert_code(&b.without_csrf("DELETE", &format!("/console/api/keys/{key_id}"), None), 403, "authorization", "csrf_token_invalid");
    b.send("DELETE", &format!("/console/api/keys/{key_id}"), None).assert_ok(200);
    api.get(&format!("/api/v1/contacts?businessId={}", t.business)).assert_failure(401, "authentication");
    // Revoking again changes nothing; an unknown key (or another business's) is not found.
    b.send("DELETE", &format!("/console/api/keys/{key_id}"), None).assert_ok(200);
    let unknown = b.send("DELETE", &format!("/console/api/keys/{}", uuid::Uuid::new_v4()), None);
    assert_code(&unknown, 404, "not_found", "key_not_found");
    let foreign = tenant(&dir.0, "contacts:read");
    assert_code(&b.send("DELETE", &format!("/console/api/keys/{}", foreign.key_id), None), 404, "not_found", "key_not_found");
    s.as_key(&foreign.key).get(&format!("/api/v1/contacts?businessId={}", foreign.business)).assert_ok(200);
    let listed = b.get("/console/api/keys");
    assert!(listed.data()["keys"].as_array().unwrap().iter().any(|x| x["keyId"] == json!(key_id) && x["revokedAt"].is_string()));
}

#[test]
fn an_agent_is_tested_over_three_turns_without_touching_a_customer() {
    let dir = DataDir::new();
    let t = tenant(&dir.0, "agents:read");
    user(&dir.0, &t.business, "owner@example.com", "owner");
    user(&dir.0, &t.business, "viewer@example.com", "viewer");
    let s = Server::start(&dir.0);
    let mut b = Browser::login(&s, "owner@example.com");
    let agent = b.post("/api/v1/agents", json!({"businessId": t.business, "channel": "chatapp", "name": "Desk", "instructions": "Answer questions about opening hours."})).assert_ok(201)["agent"]
        ["id"]
        .as_str()
        .unwrap()
        .to_string();
    let base = format!("/console/api/agents/{agent}/test");
    let read = format!("{base}?businessId={}", t.business);
    let empty = b.get(&read);
    assert_eq!(empty.assert_ok(200)["messages"], json!([]));
    assert_eq!(empty.data()["agentName"], json!("Desk"));

    let validator = document_schemas();
    for (i, said) in ["Are you open on Sunday?", "And on Monday?", "Thanks!"].iter().enumerate() {
        let r = b.post(&format!("{base}/messages"), json!({"businessId": t.business, "text": said}));
        let conv = r.assert_ok(202).clone();
        assert!(conv["pending"].as_bool().unwrap());
        let conv = poll("the agent's reply", || {
            let c = b.get(&read).assert_ok(200).clone();
            (!c["pending"].as_bool().unwrap()).then_some(c)
        });
        if let Err(e) = validator.validate(&json!({"$ref": "#/components/schemas/AgentTestConversation"}), &conv) {
            panic!("{e:?}: {conv}");
        }
        let messages = conv["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2 * (i + 1), "{conv}");
        let last = &messages[messages.len() - 1];
        assert_eq!((last["role"].as_str(), last["status"].as_str()), (Some("assistant"), Some("done")), "{conv}");
        assert!(last["text"].as_str().is_some_and(|x| !x.trim().is_empty()), "{conv}");
        assert_eq!(messages[messages.len() - 2]["text"], json!(said));
    }
    // Test turns never reach a customer, a webhook or a timeline.
    for table in ["messages", "conversations", "timeline_entries", "webhook_attempts"] {
        let n = sql(&dir.0, &format!("SELECT COUNT(*) FROM {table} WHERE business_id = '{}'", t.business));
        assert_eq!(n.trim(), "0", "{table}");
    }

    // Testing is a write: a viewer reads only; the CSRF token is required.
    let mut viewer = Browser::login(&s, "viewer@example.com");
    assert_eq!(viewer.get(&read).assert_ok(200)["messages"], json!([]), "each user has their own test conversation");
    assert_code(&viewer.post(&format!("{base}/messages"), json!({"businessId": t.business, "text": "hi"})), 403, "authorization", "missing_scope");
    let r = b.without_csrf("POST", &format!("{base}/messages"), Some(json!({"businessId": t.business, "text": "hi"})));
    assert_code(&r, 403, "authorization", "csrf_token_invalid");
    b.post(&format!("{base}/messages"), json!({"businessId": t.business, "text": "  "})).assert_failure(400, "validation");
    let unknown = format!("/console/api/agents/{}/test?businessId={}", uuid::Uuid::new_v4(), t.business);
    assert_eq!(b.get(&unknown).status, 404);

    let reset = b.send("DELETE", &read, None);
    assert_eq!(reset.assert_ok(200)["messages"], json!([]));
    assert_eq!(b.get(&read).data()["messages"], json!([]));

    // A long session shows, and keeps, the last 40 turns.
    for i in 0..21 {
        b.post(&format!("{base}/messages"), json!({"businessId": t.business, "text": format!("turn {i}")})).assert_ok(202);
        poll("the agent's reply", || (!b.get(&read).data()["pending"].as_bool().unwrap()).then_some(()));
    }
    let conv = b.get(&read).assert_ok(200).clone();
    let messages = conv["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 40);
    assert_eq!(messages[0]["text"], json!("turn 1"), "the oldest turns went first");
    assert_eq!(messages[38]["text"], json!("turn 20"));
    let kept = sql(&dir.0, &format!("SELECT COUNT(*) FROM agent_test_messages WHERE business_id = '{}'", t.business));
    assert_eq!(kept.trim(), "40");
}

#[test]
fn a_setup_link_sets_the_password_once() {
    let dir = DataDir::new();
    let t = tenant(&dir.0, "contacts:read");
    let s = Server::start(&dir.0);
    // Without --console-url the link names where the server on this data
    // dir said it serves (its --listen here), not a fixed port.
    let created = admin(&dir.0, &["user", "create", "--business", &t.business, "--email", "new@example.com"]);
    let link = created["setupLink"].as_str().unwrap();
    let token = link.split_once("#setup=").unwrap().1.to_string();
    assert!(link.starts_with(&format!("{}/console/#setup=", s.base)), "{link}");
    assert!(!sql(&dir.0, "SELECT setup_token_hash FROM console_users").contains(&token), "stored hashed");
    let other = admin(&dir.0, &["user", "create", "--business", &t.business, "--email", "other@example.com", "--console-url", "https://console.example.com/"]);
    assert!(other["setupLink"].as_str().unwrap().starts_with("https://console.example.com/console/#setup="), "{other}");

    let mut b = Browser::new(&s);
    b.post("/console/api/session", json!({"email": "new@example.com", "password": PASSWORD})).assert_failure(401, "authentication");
    let short = b.post("/console/api/password", json!({"token": token, "password": "short"}));
    short.assert_failure(400, "validation");
    b.post("/console/api/password", json!({"token": token, "password": PASSWORD})).assert_ok(200);
    let r = b.post("/console/api/password", json!({"token": token, "password": PASSWORD}));
    assert_code(&r, 404, "not_found", "setup_link_invalid");
    Browser::login(&s, "new@example.com");

    // A disabled user can no longer log in, and their sessions end.
    let user_id = created["userId"].as_str().unwrap();
    let mut live = Browser::login(&s, "new@example.com");
    admin(&dir.0, &["user", "disable", "--user-id", user_id]);
    assert_eq!(live.get("/console/api/session").status, 401);
    b.post("/console/api/session", json!({"email": "new@example.com", "password": PASSWORD})).assert_failure(401, "authentication");
}

#[test]
fn bad_console_requests_get_clear_errors() {
    let dir = DataDir::new();
    let t = tenant(&dir.0, "contacts:read");
    user(&dir.0, &t.business, "owner@example.com", "owner");
    let s = Server::start(&dir.0);
    let mut b = Browser::new(&s);
    let raw = |b: &mut Browser, method: &str, path: &str, body: &str| {
        let mut rb = b.http.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{}{}", s.base, path));
        rb = rb.header("content-type", "application/json").body(body.to_string());
        Resp::from(rb.send().unwrap())
    };
    assert_code(&raw(&mut b, "POST", "/console/api/session", "not json"), 400, "validation", "invalid_body");
    // A cross-site form can post text/plain; a console route takes only JSON.
    let form = b.http.post(format!("{}/console/api/session", s.base)).header("content-type", "text/plain").body(json!({"email": "owner@example.com", "password": PASSWORD}).to_string());
    let r = Resp::from(form.send().unwrap());
    assert_code(&r, 415, "validation", "unsupported_media_type");
    assert!(r.header("set-cookie").is_empty());
    assert_code(&raw(&mut b, "POST", "/console/api/session", ""), 400, "validation", "invalid_body");
    assert_code(&b.post("/console/api/session", json!({"email": "owner@example.com", "password": PASSWORD, "admin": true})), 400, "validation", "invalid_body");
    assert_code(&b.post("/console/api/session", json!({"email": "x".repeat(300), "password": PASSWORD})), 400, "validation", "invalid_credentials_format");
    let big = raw(&mut b, "POST", "/console/api/session", &format!("{{\"email\":\"{}\"}}", "a".repeat(70 << 10)));
    big.assert_failure(413, "validation");
    let put = raw(&mut b, "PUT", "/console/api/session", "{}");
    put.assert_failure(405, "validation");
    assert_eq!(put.header("allow"), "GET, POST, DELETE");
    assert_eq!(raw(&mut b, "POST", "/console/", "").status, 405);
    assert_code(&b.post("/console/api/password", json!({"token": "nope", "password": PASSWORD})), 404, "not_found", "setup_link_invalid");
    assert_code(&b.post("/console/api/password", json!({"token": "0".repeat(64), "password": PASSWORD})), 404, "not_found", "setup_link_invalid");

    let mut owner = Browser::login(&s, "owner@example.com");
    assert_code(&owner.post("/console/api/keys", json!({"scopes": "contacts:read"})), 400, "validation", "invalid_body");
    assert_code(&owner.post("/console/api/keys", json!({"scopes": []})), 400, "validation", "invalid_scopes");
    assert_eq!(owner.send("DELETE", "/console/api/keys/not-a-uuid", None).status, 404);
    // A malformed cookie is an ended session, not a crash.
    owner.cookie = Some("garbage".into());
    assert_code(&owner.get("/console/api/session"), 401, "authentication", "session_expired");
}

#[test]
fn an_owner_chooses_the_businesss_provider_plugin_in_the_console() {
    let dir = DataDir::new();
    let plugins = dir.0.join("plugins");
    let out = Command::new(BIN).args(["plugin", "template", "--interface", "messenger", "--name", "acme-messenger", "--out", plugins.join("acme-messenger").to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    let manifest = plugins.join("acme-messenger/plugin.toml");
    let text = std::fs::read_to_string(&manifest).unwrap() + "\n[settings.api-token]\nsecret = true\nrequired = true\n";
    std::fs::write(&manifest, text).unwrap();
    let s = Server::start_with(&dir.0, &["--plugin-dir", plugins.to_str().unwrap()]);
    let a = tenant(&dir.0, "all");
    let b = tenant(&dir.0, "all");
    user(&dir.0, &a.business, "owner@a.example", "owner");
    user(&dir.0, &a.business, "viewer@a.example", "viewer");
    user(&dir.0, &b.business, "owner@b.example", "owner");
    let mut owner = Browser::login(&s, "owner@a.example");

    let shown = owner.get("/console/api/providers");
    let d = shown.assert_ok(200);
    assert_eq!(d["providers"][0]["adapter"], "sandbox");
    assert_eq!(d["plugins"][0]["name"], "acme-messenger");
    assert!(d["plugins"][0]["settings"].as_array().unwrap().iter().any(|x| x["name"] == "api-token" && x["secret"] == true));

    // Refusals: a required setting missing, an unknown setting, a plugin of
    // another interface or not loaded, no CSRF token, a viewer.
    let put = |b: &mut Browser, iface: &str, body: Value| b.send("PUT", &format!("/console/api/providers/{iface}"), Some(body));
    let r = put(&mut owner, "messenger", json!({"plugin": "acme-messenger"}));
    assert_code(&r, 400, "validation", "invalid_settings");
    assert!(r.message().contains("api-token"), "{}", r.text);
    assert_code(&put(&mut owner, "messenger", json!({"plugin": "acme-messenger", "settings": {"api-token": "t", "colour": "blue"}})), 400, "validation", "invalid_settings");
    assert_code(&put(&mut owner, "carrier", json!({"plugin": "acme-messenger", "settings": {"api-token": "t"}})), 404, "not_found", "plugin_not_found");
    assert_code(&put(&mut owner, "messenger", json!({"plugin": "ghost"})), 404, "not_found", "plugin_not_found");
    assert_code(&put(&mut owner, "messenger", json!({"plugin": "acme-messenger", "extra": 1})), 400, "validation", "invalid_body");
    assert_code(&put(&mut owner, "fax", json!({"plugin": null})), 404, "not_found", "route_not_found");
    let r = owner.without_csrf("PUT", "/console/api/providers/messenger", Some(json!({"plugin": null})));
    assert_code(&r, 403, "authorization", "csrf_token_invalid");
    let mut viewer = Browser::login(&s, "viewer@a.example");
    assert_code(&put(&mut viewer, "messenger", json!({"plugin": null})), 403, "authorization", "owner_role_required");

    // Chosen with a secret that never comes back; saving again keeps it.
    let r = put(&mut owner, "messenger", json!({"plugin": "acme-messenger", "settings": {"api-token": "console-secret-91", "step-delay-ms": "0"}}));
    let d = r.assert_ok(200);
    assert_eq!((d["adapter"].clone(), d["settings"]["api-token"].clone(), d["settings"]["step-delay-ms"].clone()), (json!("plugin"), json!("(set)"), json!("0")));
    let r = put(&mut owner, "messenger", json!({"plugin": "acme-messenger", "settings": {"step-delay-ms": "5"}}));
    assert_eq!(r.assert_ok(200)["settings"]["api-token"], "(set)", "the stored secret is kept");
    let d = owner.get("/console/api/providers");
    assert!(!d.text.contains("console-secret-91"));
    assert_eq!(d.assert_ok(200)["providers"][0]["loaded"], true);
    assert_eq!(sql(&dir.0, &format!("SELECT plugin FROM provider_choices WHERE business_id = '{}'", a.business)).trim(), "acme-messenger");
    // B's owner sees B's choice only, and API keys cannot use the route.
    let mut other = Browser::login(&s, "owner@b.example");
    assert_eq!(other.get("/console/api/providers").assert_ok(200)["providers"][0]["adapter"], "sandbox");
    let r = s.as_key(&a.key).get("/console/api/providers");
    assert_eq!(r.status, 401, "{}", r.text);
    // Back to the sandbox.
    assert_eq!(put(&mut owner, "messenger", json!({"plugin": null})).assert_ok(200)["adapter"], "sandbox");
    assert_eq!(sql(&dir.0, "SELECT COUNT(*) FROM provider_choices").trim(), "0");
}
