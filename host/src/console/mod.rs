//! The console: a logged-in browser is a second way into the same API.
//!
//! * `/console/` serves the single page (HTML, one script, one stylesheet,
//!   embedded in the binary; see `assets/`). The page calls the public
//!   `/api/v1` operations with its session cookie and CSRF token, exactly
//!   as an integration calls them with a key: same admission, validation,
//!   idempotency and failure envelope, with the scopes of the user's role.
//! * `/console/api/…` are the session-only routes. The host answers the ones
//!   about the session itself, API keys and the business's provider
//!   adapters (`providers`), and an owner's voice lines, prices, credit
//!   top-ups and sandbox channels (`owner`), and its users (`team`) here
//!   ([`respond`]); agent
//!   testing is in the operation table (57-59, owned by the messaging area).
//!   Every one of them refuses an API key.
//!
//! No API key (beyond the one answer that creates it) and no provider token
//! ever reaches the page.

pub mod keys;
pub mod owner;
pub mod providers;
pub mod team;
pub use switchboard_admin::{sessions, users};

use crate::pipeline::{Answer, App};
use governor::clock::DefaultClock;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use serde::Deserialize;
use std::net::IpAddr;
use std::num::NonZeroU32;
use switchboard_gateway::errors::success_envelope;
use switchboard_gateway::{api_key_refused, console_session, Failure, SessionRecord};

pub const PAGE_PATH: &str = "/console/";
const SESSION_PATH: &str = "/console/api/session";
const PASSWORD_PATH: &str = "/console/api/password";
const KEYS_PATH: &str = "/console/api/keys";
const PROVIDERS_PATH: &str = "/console/api/providers";

/// Login attempts: per account and per client address, every attempt counts.
const LOGINS_PER_ACCOUNT_PER_MINUTE: u32 = 5;
const LOGINS_PER_ADDRESS_PER_MINUTE: u32 = 20;
/// Console route bodies are small.
pub const MAX_BODY_BYTES: usize = 64 << 10;
/// Password hashes computed at once (argon2id takes 19 MiB and tens of
/// milliseconds each): a burst of logins waits its turn in the client, not
/// in the service's memory.
const HASHES_AT_ONCE: usize = 4;

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock>;

/// The console's state in the service.
pub struct Console {
    /// The session cookie is `Secure` (the service's public URL is https).
    pub secure_cookie: bool,
    per_account: Keyed<String>,
    per_address: Keyed<IpAddr>,
    hashing: tokio::sync::Semaphore,
}

impl Console {
    pub fn new(secure_cookie: bool) -> Console {
        let per_minute = |n: u32| Quota::per_minute(NonZeroU32::new(n).expect("positive"));
        Console {
            secure_cookie,
            per_account: RateLimiter::keyed(per_minute(LOGINS_PER_ACCOUNT_PER_MINUTE)),
            per_address: RateLimiter::keyed(per_minute(LOGINS_PER_ADDRESS_PER_MINUTE)),
            hashing: tokio::sync::Semaphore::new(HASHES_AT_ONCE),
        }
    }

    /// The login limits' memory follows the active callers.
    pub fn forget_idle(&self) {
        self.per_account.retain_recent();
        self.per_address.retain_recent();
    }
}

/// True for the paths the host answers here: the page and its assets, and
/// the session and key routes. (Agent-test routes are operations.)
pub fn serves(path: &str) -> bool {
    path == "/console"
        || assets::find(path).is_some()
        || path == SESSION_PATH
        || path == PASSWORD_PATH
        || path == KEYS_PATH
        || key_path(path).is_some()
        || path == PROVIDERS_PATH
        || providers::interface_of(path).is_some()
        || owner::path(path).is_some()
        || team::path(path).is_some()
}

/// The access log's name for a console path (never a key id).
pub fn logged_path(path: &str) -> &'static str {
    match path {
        SESSION_PATH => SESSION_PATH,
        PASSWORD_PATH => PASSWORD_PATH,
        KEYS_PATH => KEYS_PATH,
        p if key_path(p).is_some() => "/console/api/keys/{keyId}",
        PROVIDERS_PATH => PROVIDERS_PATH,
        p if providers::interface_of(p).is_some() => "/console/api/providers/{interface}",
        p if owner::path(p).is_some() => owner::path(p).unwrap_or_default(),
        p if team::path(p).is_some() => team::path(p).unwrap_or_default(),
        _ => "/console/",
    }
}

fn key_path(path: &str) -> Option<&str> {
    path.strip_prefix("/console/api/keys/").filter(|id| switchboard_gateway::validate::is_uuid(id))
}

/// What the console routes read of a request.
pub struct ConsoleRequest {
    pub method: String,
    pub path: String,
    pub authorization: bool,
    pub session: Option<String>,
    pub csrf: Option<String>,
    pub peer: IpAddr,
    /// The body was sent as `application/json` (a cross-site form cannot
    /// send that without the browser asking first, which we never allow).
    pub json: bool,
    pub body: Vec<u8>,
}

/// Answers a console route. Runs on a blocking thread (password hashing
/// and storage).
pub fn respond(app: &App, console: &Console, r: ConsoleRequest, request_id: &str) -> Answer {
    if let Some(page) = assets::find(&r.path) {
        return match r.method.as_str() {
            "GET" | "HEAD" => assets::answer(page),
            _ => Answer::failure(&method_not_allowed("GET"), request_id),
        };
    }
    if r.path == "/console" {
        return Answer { status: 308, headers: vec![("Location", PAGE_PATH.into())], ..json(String::new()) };
    }
    let result = route(app, console, &r);
    let mut answer = match result {
        Ok(Done { status, data, set_cookie }) => {
            let mut a = Answer { status, ..json(success_envelope(&data.to_string(), request_id)) };
            if let Some(c) = set_cookie {
                a.headers.push(("Set-Cookie", c));
            }
            a
        }
        Err(f) => Answer::failure(&f, request_id),
    };
    answer.operation = operation_name(&r.method, &r.path);
    // Nothing a console route answers may be cached by the browser or a proxy.
    answer.headers.push(("Cache-Control", "no-store".into()));
    answer
}

fn json(body: String) -> Answer {
    Answer { status: 200, content_type: "application/json", body, headers: Vec::new(), operation: "-", download: None }
}

fn operation_name(method: &str, path: &str) -> &'static str {
    if let Some(name) = owner::operation_name(method, path).or_else(|| team::operation_name(method, path)) {
        return name;
    }
    match (method, logged_path(path)) {
        ("POST", SESSION_PATH) => "consoleLogin",
        ("GET", SESSION_PATH) => "consoleSession",
        ("DELETE", SESSION_PATH) => "consoleLogout",
        ("POST", PASSWORD_PATH) => "consoleSetPassword",
        ("GET", KEYS_PATH) => "consoleListKeys",
        ("POST", KEYS_PATH) => "consoleCreateKey",
        ("DELETE", _) => "consoleRevokeKey",
        _ => "console",
    }
}

struct Done {
    status: u16,
    data: serde_json::Value,
    set_cookie: Option<String>,
}

fn done(data: serde_json::Value) -> Result<Done, Failure> {
    Ok(Done { status: 200, data, set_cookie: None })
}

fn method_not_allowed(allowed: &str) -> Failure {
    Failure::new(405, "validation", "method_not_allowed", format!("allowed: {allowed}")).with_header("Allow", allowed.into())
}

fn unavailable(_: anyhow::Error) -> Failure {
    crate::pipeline::unavailable()
}

/// A login (or setup-link) limit was reached for `what`.
fn too_many_attempts(what: &str) -> Failure {
    Failure::new(429, "rate_limit", "login_rate_limited", format!("too many login attempts for {what}; wait a minute and try again")).retryable(true).with_header("Retry-After", "60".into())
}

/// One of the [`HASHES_AT_ONCE`] password-hashing slots, or 503 to retry.
fn hash_slot(console: &Console) -> Result<tokio::sync::SemaphorePermit<'_>, Failure> {
    console.hashing.try_acquire().map_err(|_| Failure::new(503, "capacity", "console_busy", "too many logins at this moment; retry in a second").retryable(true).with_header("Retry-After", "1".into()))
}

/// Main's write gate and a connection, for a console route's short write
/// of what main keeps (sessions, users, keys; the same single-writer rule
/// as every mutation).
pub(crate) fn writer(app: &App) -> Result<(crate::db::WriteGuard, crate::db::Conn<'_>), Failure> {
    let main = app.dbs.main();
    let gate = main.write_gate(std::time::Duration::from_secs(10)).ok_or_else(|| unavailable(anyhow::anyhow!("write gate")))?;
    Ok((gate, main.conn().map_err(unavailable)?))
}

/// The write gate of `business`'s database and that database, for a
/// console route's short write of the business's own rows.
pub(crate) fn business_writer(app: &App, business: &str) -> Result<(crate::db::WriteGuard, std::sync::Arc<crate::db::Db>), Failure> {
    let db = app.db_for(business)?;
    let gate = db.write_gate(std::time::Duration::from_secs(10)).ok_or_else(|| unavailable(anyhow::anyhow!("write gate")))?;
    Ok((gate, db))
}

fn route(app: &App, console: &Console, r: &ConsoleRequest) -> Result<Done, Failure> {
    if r.authorization {
        return Err(api_key_refused(logged_path(&r.path)));
    }
    match (r.path.as_str(), r.method.as_str()) {
        (SESSION_PATH, "POST") => login(app, console, r),
        (PASSWORD_PATH, "POST") => set_password(app, console, r),
        (SESSION_PATH, "GET") => {
            let s = session(app, r)?;
            // The page asks at every load: the inbox's copy of the team follows.
            team::sync_members(app, &s.business_id);
            done(whoami(app, &s)?)
        }
        (SESSION_PATH, "DELETE") => logout(app, console, r),
        (KEYS_PATH, "GET") => done(keys::list(app, &session(app, r)?)?),
        (KEYS_PATH, "POST") => {
            let s = session(app, r)?;
            require_json(r)?;
            Ok(Done { status: 201, data: keys::create(app, &s, &r.body)?, set_cookie: None })
        }
        (p, "DELETE") if key_path(p).is_some() => done(keys::revoke(app, &session(app, r)?, key_path(p).unwrap_or_default())?),
        (PROVIDERS_PATH, "GET") => done(providers::show(app, &session(app, r)?)?),
        (p, "PUT") if providers::interface_of(p).is_some() => {
            let s = session(app, r)?;
            require_json(r)?;
            done(providers::set(app, &s, providers::interface_of(p).expect("matched"), &r.body)?)
        }
        (p, _) if owner::path(p).is_some() => done(owner::route(app, r, owner::path(p).unwrap_or_default())?),
        (p, _) if team::path(p).is_some() => {
            let (status, data) = team::route(app, r)?;
            Ok(Done { status, data, set_cookie: None })
        }
        (SESSION_PATH, _) => Err(method_not_allowed("GET, POST, DELETE")),
        (PASSWORD_PATH, _) => Err(method_not_allowed("POST")),
        (KEYS_PATH, _) => Err(method_not_allowed("GET, POST")),
        (PROVIDERS_PATH, _) => Err(method_not_allowed("GET")),
        (p, _) if providers::interface_of(p).is_some() => Err(method_not_allowed("PUT")),
        _ => Err(method_not_allowed("DELETE")),
    }
}

/// The caller's live session (writes: with its CSRF token).
fn session(app: &App, r: &ConsoleRequest) -> Result<SessionRecord, Failure> {
    let mutation = r.method != "GET" && r.method != "HEAD";
    console_session(r.session.as_deref(), r.csrf.as_deref(), mutation, true, logged_path(&r.path), &app.keys())
}

/// A console route's body is JSON, said so in its Content-Type: a login
/// form on another site cannot post one without a preflight we never grant.
fn require_json(r: &ConsoleRequest) -> Result<(), Failure> {
    if r.json {
        Ok(())
    } else {
        Err(Failure::new(415, "validation", "unsupported_media_type", format!("{} takes only Content-Type: application/json", logged_path(&r.path))))
    }
}

fn body<T: for<'de> Deserialize<'de>>(r: &ConsoleRequest) -> Result<T, Failure> {
    require_json(r)?;
    serde_json::from_slice(&r.body).map_err(|e| Failure::validation("invalid_body", format!("the request body is not what this route takes: {e}")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Login {
    email: String,
    password: String,
}

/// `POST /console/api/session`: the same answer for an unknown address, a
/// disabled user, a user without a password and a wrong password.
fn login(app: &App, console: &Console, r: &ConsoleRequest) -> Result<Done, Failure> {
    let l: Login = body(r)?;
    let email = users::normalize_email(&l.email).unwrap_or_else(|| l.email.trim().to_lowercase());
    if email.len() > 254 || l.password.chars().count() > users::MAX_PASSWORD_CHARS {
        return Err(Failure::validation("invalid_credentials_format", "email or password is too long"));
    }
    if console.per_address.check_key(&r.peer).is_err() {
        return Err(too_many_attempts("this address"));
    }
    if console.per_account.check_key(&email).is_err() {
        return Err(too_many_attempts("this account"));
    }
    let user = {
        let c = app.dbs.main().conn().map_err(unavailable)?;
        users::find_by_email(&c, &email).map_err(unavailable)?
    };
    let _slot = hash_slot(console)?;
    let valid = users::verify_password(&l.password, user.as_ref().and_then(|u| u.password_hash.as_deref()));
    let Some(user) = user.filter(|u| valid && u.password_hash.is_some()) else {
        tracing::info!("console login refused");
        return Err(Failure::authentication("the email or the password is not right"));
    };
    let (token, record) = {
        let (_gate, c) = writer(app)?;
        crate::db::in_transaction(&c, || sessions::create(&c, &user)).map_err(unavailable)?
    };
    team::sync_members(app, &record.business_id);
    Ok(Done { status: 200, data: whoami(app, &record)?, set_cookie: Some(sessions::set_cookie(&token, console.secure_cookie)) })
}

/// Who the session is: the user, the business, the role's scopes, the CSRF
/// token and when the session ends.
fn whoami(app: &App, s: &SessionRecord) -> Result<serde_json::Value, Failure> {
    let c = app.dbs.main().conn().map_err(unavailable)?;
    let row = crate::db::query_one_as::<(String, String, i64)>(
        &c,
        "SELECT u.email, b.name, s.expires_at_ms FROM console_sessions s JOIN console_users u ON u.id = s.user_id \
         JOIN businesses b ON b.id = s.business_id WHERE s.id = ?1",
        crate::db::params![&s.session_id],
    )
    .map_err(unavailable)?;
    drop(c);
    let (email, business_name, expires) = row.unwrap_or_default();
    Ok(serde_json::json!({
        "userId": s.user_id,
        "email": email,
        "role": s.role,
        "businessId": s.business_id,
        "businessName": business_name,
        "scopes": s.scopes,
        "csrfToken": s.csrf_token,
        "expiresAt": crate::clock::rfc3339(expires),
    }))
}

fn logout(app: &App, console: &Console, r: &ConsoleRequest) -> Result<Done, Failure> {
    let s = session(app, r)?;
    let (_gate, c) = writer(app)?;
    sessions::revoke(&c, &s.session_id).map_err(unavailable)?;
    Ok(Done { status: 200, data: serde_json::json!({"loggedOut": true}), set_cookie: Some(sessions::clear_cookie(console.secure_cookie)) })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetPassword {
    token: String,
    password: String,
}

/// `POST /console/api/password`: the one-time setup link's token sets the
/// password (and ends the user's other sessions). Limited per address like
/// a login, since the token is a secret too.
fn set_password(app: &App, console: &Console, r: &ConsoleRequest) -> Result<Done, Failure> {
    let p: SetPassword = body(r)?;
    if let Err(m) = users::check_password(&p.password) {
        let violation = switchboard_gateway::validate::Violation { field: "password".into(), rule: "minLength", message: m };
        return Err(Failure::from_violations(vec![violation], "request body"));
    }
    if console.per_address.check_key(&r.peer).is_err() {
        return Err(too_many_attempts("this address"));
    }
    let bad_token = || Failure::not_found("setup_link_invalid", "this setup link is not valid or has expired; ask for a new one");
    if !switchboard_gateway::auth::looks_like_session_token(&p.token) {
        return Err(bad_token());
    }
    let hash = {
        let _slot = hash_slot(console)?;
        users::hash_password(&p.password).map_err(unavailable)?
    };
    let (_gate, c) = writer(app)?;
    match crate::db::in_transaction(&c, || users::set_password_with_token(&c, &p.token, &hash)).map_err(unavailable)? {
        Some(user) => done(serde_json::json!({"userId": user, "passwordSet": true})),
        None => Err(bad_token()),
    }
}

mod assets {
    //! The page, embedded. One HTML document, its scripts and one stylesheet
    //! of our own, and one vendored library (Chart.js, `assets/vendor/`, as
    //! its package ships it): no framework and no build step (ARCHITECTURE.md
    //! says why), served with a strict Content-Security-Policy (scripts and
    //! styles from this origin only, no inline script, no framing).

    use crate::pipeline::Answer;

    pub struct Asset {
        pub content_type: &'static str,
        pub body: &'static str,
    }

    const INDEX: Asset = Asset { content_type: "text/html; charset=utf-8", body: include_str!("assets/index.html") };
    const STYLE: Asset = Asset { content_type: "text/css; charset=utf-8", body: include_str!("assets/console.css") };

    /// The page's scripts, in the order index.html loads them: classic
    /// deferred scripts sharing one global scope, the vendored chart
    /// library and the helpers first and the routes last.
    const SCRIPTS: &[(&str, Asset)] = &[
        ("/console/vendor/chart.umd.min.js", script(include_str!("assets/vendor/chart.umd.min.js"))),
        ("/console/js/core.js", script(include_str!("assets/js/core.js"))),
        ("/console/js/api.js", script(include_str!("assets/js/api.js"))),
        ("/console/js/forms.js", script(include_str!("assets/js/forms.js"))),
        ("/console/js/phones.js", script(include_str!("assets/js/phones.js"))),
        ("/console/js/session.js", script(include_str!("assets/js/session.js"))),
        ("/console/js/charts.js", script(include_str!("assets/js/charts.js"))),
        ("/console/js/overview.js", script(include_str!("assets/js/overview.js"))),
        ("/console/js/keys.js", script(include_str!("assets/js/keys.js"))),
        ("/console/js/contacts.js", script(include_str!("assets/js/contacts.js"))),
        ("/console/js/contact.js", script(include_str!("assets/js/contact.js"))),
        ("/console/js/agents.js", script(include_str!("assets/js/agents.js"))),
        ("/console/js/channels.js", script(include_str!("assets/js/channels.js"))),
        ("/console/js/calls.js", script(include_str!("assets/js/calls.js"))),
        ("/console/js/campaigns.js", script(include_str!("assets/js/campaigns.js"))),
        ("/console/js/data.js", script(include_str!("assets/js/data.js"))),
        ("/console/js/messages.js", script(include_str!("assets/js/messages.js"))),
        ("/console/js/inbox.js", script(include_str!("assets/js/inbox.js"))),
        ("/console/js/main.js", script(include_str!("assets/js/main.js"))),
    ];

    const fn script(body: &'static str) -> Asset {
        Asset { content_type: "text/javascript; charset=utf-8", body }
    }

    pub fn find(path: &str) -> Option<&'static Asset> {
        match path {
            super::PAGE_PATH => Some(&INDEX),
            "/console/console.css" => Some(&STYLE),
            _ => SCRIPTS.iter().find(|(p, _)| *p == path).map(|(_, a)| a),
        }
    }

    pub fn answer(a: &'static Asset) -> Answer {
        Answer {
            status: 200,
            content_type: a.content_type,
            body: a.body.to_string(),
            headers: vec![
                (
                    "Content-Security-Policy",
                    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'".into(),
                ),
                ("X-Content-Type-Options", "nosniff".into()),
                ("Referrer-Policy", "no-referrer".into()),
                ("X-Frame-Options", "DENY".into()),
                ("Cache-Control", "no-cache".into()),
            ],
            operation: "consolePage",
            download: None,
        }
    }
}
