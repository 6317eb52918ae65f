//! `Gateway::admit`: every generic check a request passes before its owning
//! component sees it, in order: route, authentication, body syntax,
//! tenancy, scopes, Idempotency-Key syntax, schema validation.

use crate::auth;
use crate::errors::Failure;
use crate::idempotency;
use crate::openapi;
use crate::operations::{self, BusinessIn, Operation, OperationId, RouteMatch, OPERATIONS};
use crate::validate::{is_uuid, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

/// What the key store knows about a key.
#[derive(Clone, Debug)]
pub struct KeyRecord {
    pub key_id: String,
    pub business_id: String,
    pub scopes: Vec<String>,
    pub revoked: bool,
}

/// What the session store knows about a live console session (expired,
/// revoked and disabled users' sessions are not found).
#[derive(Clone, Debug)]
pub struct SessionRecord {
    pub session_id: String,
    pub user_id: String,
    pub business_id: String,
    /// `owner`, `agent` or `viewer`.
    pub role: String,
    /// The role's scopes (owner: every scope; agent: the read scopes and
    /// the conversations' writes; viewer: the read scopes).
    pub scopes: Vec<String>,
    /// What a state-changing request must echo in `X-CSRF-Token`.
    pub csrf_token: String,
}

/// Storage behind authentication: a key by its hash, a console session by
/// the hash of its cookie token.
pub trait KeyDirectory {
    fn find_by_hash(&self, key_hash: &str) -> Result<Option<KeyRecord>, Failure>;
    fn find_session(&self, token_hash: &str) -> Result<Option<SessionRecord>, Failure>;
}

/// The parts of an HTTP request the gateway reads.
pub struct Incoming<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub authorization: Option<&'a str>,
    /// The console's session cookie (its token), when the request has one.
    pub session: Option<&'a str>,
    /// The `X-CSRF-Token` header.
    pub csrf: Option<&'a str>,
    pub idempotency_key: Option<&'a str>,
    /// Owned, so an admitted body becomes the component's text without a copy.
    pub body: Vec<u8>,
}

/// A request that passed every generic check.
#[derive(Debug)]
pub struct Admitted {
    pub op: &'static Operation,
    pub path_params: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    /// The request body exactly as received (valid JSON that passed the
    /// schema). Handed on as text: re-serialising a parsed value would cost
    /// another copy of a large upload.
    pub body: Option<String>,
    /// None only for public operations.
    pub business_id: Option<String>,
    /// The API key, or `session:<id>` for a console session (rate limits).
    pub key_id: Option<String>,
    /// The console user behind a session; None for an API key.
    pub caller: Option<String>,
    pub scopes: Vec<String>,
    pub idempotency_key: Option<String>,
    /// Fingerprint of operation, path and canonical body (for idempotency).
    pub fingerprint: String,
}

impl Admitted {
    /// Completes a raw upload admitted by `Gateway::admit_raw` once its body
    /// is staged: `body` is the host-built JSON naming the staged upload
    /// (what the component reads), and the fingerprint covers the metadata
    /// query parameters and the body's size and SHA-256, so an exact retry
    /// replays and another file under the same key is a conflict.
    pub fn seal_raw(&mut self, body: String, size: u64, sha256_hex: &str) {
        let names = self.op.raw_body().map_or(&[][..], |r| r.required_query);
        let metadata: Vec<(&str, &str)> = names.iter().map(|n| (*n, self.query.iter().find(|(k, _)| k == n).map_or("", |(_, v)| v.as_str()))).collect();
        self.fingerprint = idempotency::raw_fingerprint(self.op.id.as_str(), &self.path_params, &metadata, size, sha256_hex);
        self.body = Some(body);
    }
}

pub struct Gateway {
    validator: Validator,
    /// Each operation's query parameter schemas, parsed on first use.
    query_schemas: HashMap<(OperationId, &'static str), (&'static str, OnceLock<Value>)>,
    /// The document and its text, built on first use: only the document
    /// route and a few checks need them, and an edge node builds a fresh
    /// Gateway per request.
    document: OnceLock<(Value, String)>,
}

/// An operation and its raw path parameters (name, value).
pub type Routed = (&'static Operation, Vec<(String, String)>);

impl Gateway {
    /// Builds the gateway and checks everything it will need: every
    /// operation's schema names, every schema parsed, every `$ref`
    /// resolved, every pattern compiled. For a long-lived process: it
    /// fails at start, not on a request.
    pub fn new() -> Result<Self, String> {
        let g = Self::lazy()?;
        let mut query = Vec::new();
        for ((op, name), (text, cell)) in &g.query_schemas {
            let value = parse_query_schema(text).map_err(|e| format!("{op}.{name}: {e}"))?;
            query.push(cell.get_or_init(|| value));
        }
        g.validator.check_all(&query)?;
        Ok(g)
    }

    /// As `new`, with each schema parsed and each pattern compiled on its
    /// first use and the document built when asked for: for an instance
    /// that answers one request (an edge node). The gateway's unit tests
    /// run `new`'s checks.
    pub fn lazy() -> Result<Self, String> {
        let validator = Validator::from_sources(openapi::schema_sources());
        for op in OPERATIONS {
            let raw_schemas = op.raw_body().map_or(&[][..], |r| r.media_types).iter().map(|(_, s)| *s);
            for name in op.request.into_iter().chain(raw_schemas).chain(match op.response {
                operations::Response::Json(n) => Some(n),
                operations::Response::Raw(_) => None,
            }) {
                if !validator.has_schema(name) {
                    return Err(format!("{} names schema {name}, which no schema file defines", op.id));
                }
            }
        }
        let query_schemas = OPERATIONS.iter().flat_map(|op| op.query.iter().map(move |q| ((op.id, q.name), (q.schema, OnceLock::new())))).collect();
        Ok(Gateway { validator, query_schemas, document: OnceLock::new() })
    }

    fn query_schema(&self, op: OperationId, name: &'static str) -> &Value {
        let (text, cell) = &self.query_schemas[&(op, name)];
        cell.get_or_init(|| parse_query_schema(text).expect("checked by Gateway::new"))
    }

    fn built_document(&self) -> &(Value, String) {
        self.document.get_or_init(|| {
            let document = openapi::document_with(self.validator.all_schemas());
            let text = serde_json::to_string(&document).expect("a JSON value serialises");
            (document, text)
        })
    }

    pub fn document(&self) -> &Value {
        &self.built_document().0
    }

    pub fn document_text(&self) -> &str {
        &self.built_document().1
    }

    /// The operation and its raw path parameters. Their syntax is checked
    /// by `check_path_params`, after authentication: a caller without a
    /// valid key learns nothing but 401.
    pub fn route(&self, method: &str, path: &str) -> Result<Routed, Failure> {
        match operations::route(method, path) {
            RouteMatch::Found(op, params) => Ok((op, params)),
            RouteMatch::MethodNotAllowed(allowed) => {
                let list = allowed.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ");
                Err(Failure::new(405, "validation", "method_not_allowed", format!("{method} is not allowed on {path}; allowed: {list}")).with_header("Allow", list))
            }
            RouteMatch::NotFound => Err(Failure::not_found("route_not_found", format!("no operation at {path}"))),
        }
    }

    pub fn admit(&self, req: Incoming, keys: &dyn KeyDirectory) -> Result<Admitted, Failure> {
        let (op, path_params) = self.route(req.method, req.path)?;
        let key = if op.business_in == BusinessIn::Public { None } else { Some(authenticate(op, &req, keys)?) };
        check_path_params(&path_params)?;
        let query = parse_query(req.query)?;
        let body = parse_body(op, &req.body)?;

        let business_id = match (&key, op.business_in) {
            (Some(key), where_) => Some(check_business(&key.key, where_, &query, body.as_ref())?),
            (None, _) => None,
        };
        if let Some(key) = &key {
            check_scopes(op, &key.key.scopes, body.as_ref(), &query)?;
        }
        let idempotency_key = idempotency_key(op, req.idempotency_key)?;
        let query = self.validate_query(op, query)?;
        if let (Some(name), Some(b)) = (op.request, body.as_ref()) {
            let schema = self.validator.schema(name).expect("checked in Gateway::new");
            self.validator.validate(schema, b).map_err(|v| Failure::from_violations(v, "request body"))?;
        }
        let fingerprint = idempotency::fingerprint(op.id.as_str(), &path_params, body.as_ref());
        // The parsed value is dropped here; parse_body succeeded, so the
        // bytes are valid UTF-8 and become the text without a copy.
        let body = match body {
            Some(_) => Some(String::from_utf8(req.body).map_err(|_| Failure::validation("malformed_json", "the request body is not UTF-8"))?),
            None => None,
        };
        Ok(Admitted {
            op,
            path_params,
            query,
            body,
            business_id,
            key_id: key.as_ref().map(|k| k.key.key_id.clone()),
            caller: key.as_ref().and_then(|k| k.caller.clone()),
            scopes: key.map(|k| k.key.scopes).unwrap_or_default(),
            idempotency_key,
            fingerprint,
        })
    }

    /// Admits a raw-body request (an operation's `RawBody` variant) before
    /// a byte of its body is read, so a request that fails here stages
    /// nothing: route, authentication, `businessId` from the query and
    /// tenancy, scopes, Idempotency-Key syntax, then the query metadata
    /// (every parameter of `RawBody::required_query` present and valid).
    /// The fingerprint stays empty until `Admitted::seal_raw` adds the
    /// body's hash.
    pub fn admit_raw(&self, req: Incoming, keys: &dyn KeyDirectory) -> Result<Admitted, Failure> {
        let (op, path_params) = self.route(req.method, req.path)?;
        let Some(raw) = op.raw_body() else {
            return Err(Failure::new(415, "validation", "unsupported_media_type", format!("{} takes only Content-Type: application/json", op.id)));
        };
        let key = authenticate(op, &req, keys)?;
        check_path_params(&path_params)?;
        let query = parse_query(req.query)?;
        if !query.iter().any(|(k, _)| k == "businessId") {
            return Err(Failure::validation(
                "business_id_required",
                "`businessId` (query parameter) is required: a Content-Type other than application/json selects the raw upload, \
                 whose businessId, dataSourceId, fileName and format travel as query parameters",
            ));
        }
        let business_id = check_business(&key.key, BusinessIn::Query, &query, None)?;
        check_scopes(op, &key.key.scopes, None, &query)?;
        let idempotency_key = idempotency_key(op, req.idempotency_key)?;
        let query = self.validate_query(op, query)?;
        let missing: Vec<crate::validate::Violation> = raw
            .required_query
            .iter()
            .filter(|name| !query.iter().any(|(k, _)| k == *name))
            .map(|name| crate::validate::Violation { field: name.to_string(), rule: "required", message: format!("query parameter `{name}` is required with a raw (non-JSON) body") })
            .collect();
        if !missing.is_empty() {
            return Err(Failure::from_violations(missing, "query"));
        }
        Ok(Admitted {
            op,
            path_params,
            query,
            body: None,
            business_id: Some(business_id),
            key_id: Some(key.key.key_id.clone()),
            caller: key.caller,
            scopes: key.key.scopes,
            idempotency_key,
            fingerprint: String::new(),
        })
    }

    /// Declared parameters are checked against their schemas; undeclared
    /// ones are ignored; a declared one given twice is an error.
    fn validate_query(&self, op: &Operation, query: Vec<(String, String)>) -> Result<Vec<(String, String)>, Failure> {
        let mut violations = Vec::new();
        for q in op.query {
            let values: Vec<&String> = query.iter().filter(|(k, _)| k == q.name).map(|(_, v)| v).collect();
            match values.as_slice() {
                [] if q.required => violations.push(crate::validate::Violation { field: q.name.to_string(), rule: "required", message: format!("query parameter `{}` is required", q.name) }),
                [] => {}
                [v] => {
                    let schema = self.query_schema(op.id, q.name);
                    let typed = if schema["type"] == "integer" { v.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String((*v).clone())) } else { Value::String((*v).clone()) };
                    if let Err(mut v) = self.validator.validate(schema, &typed) {
                        for x in &mut v {
                            x.field = q.name.to_string();
                            x.message = x.message.replacen("the body", &format!("query parameter `{}`", q.name), 1);
                        }
                        violations.extend(v);
                    }
                }
                _ => violations.push(crate::validate::Violation { field: q.name.to_string(), rule: "maxItems", message: format!("query parameter `{}` must appear at most once", q.name) }),
            }
        }
        if violations.is_empty() {
            Ok(query)
        } else {
            Err(Failure::from_violations(violations, "query"))
        }
    }
}

/// The decoded query parameters: a broken escape or a NUL is refused.
fn parse_query(raw: Option<&str>) -> Result<Vec<(String, String)>, Failure> {
    let query = operations::parse_query(raw.unwrap_or("")).ok_or_else(|| Failure::validation("malformed_query", "the query string has a broken %-escape or is not UTF-8"))?;
    if let Some((name, _)) = query.iter().find(|(k, v)| k.contains('\0') || v.contains('\0')) {
        return Err(nul_refused(&format!("query parameter `{}`", name.replace('\0', "\\0"))));
    }
    Ok(query)
}

/// Every path parameter of ours is a uuid.
fn check_path_params(params: &[(String, String)]) -> Result<(), Failure> {
    match params.iter().find(|(_, value)| !is_uuid(value)) {
        Some((name, _)) => Err(Failure::validation("invalid_path_parameter", format!("path parameter `{name}` must be a uuid"))),
        None => Ok(()),
    }
}

/// Who is calling: an API key (`Authorization: Bearer`) or a console
/// session (its cookie), whichever the request carries (a key wins when
/// both are sent). Session-only routes refuse keys; a session's
/// state-changing request must echo its CSRF token.
struct Caller {
    key: KeyRecord,
    /// The console user, for a session.
    caller: Option<String>,
}

fn authenticate(op: &Operation, req: &Incoming, keys: &dyn KeyDirectory) -> Result<Caller, Failure> {
    if req.authorization.is_some() {
        if op.session_only() {
            return Err(api_key_refused(op.id.as_str()));
        }
        return Ok(Caller { key: authenticate_key(req.authorization, keys)?, caller: None });
    }
    let session = console_session(req.session, req.csrf, op.method.is_mutation(), op.session_only(), op.id.as_str(), keys)?;
    Ok(Caller { key: KeyRecord { key_id: format!("session:{}", session.session_id), business_id: session.business_id, scopes: session.scopes, revoked: false }, caller: Some(session.user_id) })
}

/// A console session's authentication, for the operations of the table and
/// for the host's own console routes (`route` names the route in messages):
/// the cookie's live session, and for a `mutation` its CSRF token echoed in
/// `X-CSRF-Token`. The caller has already refused an Authorization header
/// where only a session may come in.
pub fn console_session(session: Option<&str>, csrf: Option<&str>, mutation: bool, session_only: bool, route: &str, keys: &dyn KeyDirectory) -> Result<SessionRecord, Failure> {
    let Some(token) = session.filter(|t| auth::looks_like_session_token(t)) else {
        return Err(match (session, session_only) {
            (Some(_), _) => expired_session(),
            (None, true) => Failure::new(401, "authentication", "session_required", format!("{route} is a console route: log in to the console first")),
            (None, false) => Failure::authentication("send an API key as `Authorization: Bearer <key>` (or log in to the console)"),
        });
    };
    let session = keys.find_session(&auth::hash_key(token))?.ok_or_else(expired_session)?;
    // SameSite=Strict already keeps other sites' pages from sending the
    // cookie; the token is the second lock, for writes.
    if mutation && !csrf.is_some_and(|t| auth::same_secret(t, &session.csrf_token)) {
        return Err(Failure::authorization("csrf_token_invalid", "a console write must carry the session's CSRF token in the X-CSRF-Token header (GET /console/api/session returns it)"));
    }
    Ok(session)
}

/// What a session-only route answers to an API key.
pub fn api_key_refused(route: &str) -> Failure {
    Failure::new(401, "authentication", "session_required", format!("{route} is a console route: it takes a logged-in browser session, never an API key"))
}

fn expired_session() -> Failure {
    Failure::new(401, "authentication", "session_expired", "the console session has ended or is not valid; log in again")
}

fn authenticate_key(header: Option<&str>, keys: &dyn KeyDirectory) -> Result<KeyRecord, Failure> {
    let token = auth::bearer_token(header).ok_or_else(|| Failure::authentication("send an API key as `Authorization: Bearer <key>`"))?;
    if !auth::looks_like_key(token) {
        return Err(Failure::authentication("the API key is not valid"));
    }
    // A revoked key and an unknown one get the same answer: the caller
    // learns nothing about which keys ever existed.
    match keys.find_by_hash(&auth::hash_key(token))? {
        Some(k) if !k.revoked => Ok(k),
        _ => Err(Failure::authentication("the API key is not valid")),
    }
}

/// The `Idempotency-Key` header, checked; required where the operation says so.
fn idempotency_key(op: &Operation, header: Option<&str>) -> Result<Option<String>, Failure> {
    match header {
        Some(k) => {
            idempotency::check_key(k).map_err(|m| Failure::validation("invalid_idempotency_key", m))?;
            Ok(Some(k.to_string()))
        }
        None if op.idempotency_required => Err(Failure::validation("idempotency_key_required", format!("{} requires an Idempotency-Key header", op.id))),
        None => Ok(None),
    }
}

fn parse_body(op: &Operation, bytes: &[u8]) -> Result<Option<Value>, Failure> {
    let blank = bytes.iter().all(u8::is_ascii_whitespace);
    if op.request.is_none() {
        return if blank || op.business_in != BusinessIn::Body && !op.method.is_mutation() {
            Ok(None)
        } else {
            Err(Failure::validation("unexpected_body", format!("{} takes no request body; send businessId as a query parameter", op.id)))
        };
    }
    if blank {
        return Err(Failure::validation("body_required", format!("{} needs a JSON request body", op.id)));
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|e| Failure::validation("malformed_json", format!("the request body is not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(Failure::validation("malformed_json", "the request body must be a JSON object"));
    }
    // JSON text carries a NUL only as the escape `\u0000`: the walk (which
    // builds field paths) runs only when the bytes hold one.
    let may_hold_nul = bytes.windows(6).any(|w| w == b"\\u0000");
    if let Some(field) = may_hold_nul.then(|| nul_in(&v, "")).flatten() {
        return Err(nul_refused(&format!("body field `{}`", if field.is_empty() { "(root)" } else { &field })));
    }
    Ok(Some(v))
}

/// The path of the first string (or object key) holding U+0000, if any.
/// Storage cannot keep such a string whole (SQLite's text would end at the
/// NUL), so it is refused instead of silently shortened.
fn nul_in(v: &Value, at: &str) -> Option<String> {
    match v {
        Value::String(s) if s.contains('\0') => Some(at.to_string()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| nul_in(item, &format!("{at}[{i}]"))),
        Value::Object(map) => map.iter().find_map(|(k, item)| {
            let here = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
            if k.contains('\0') {
                Some(here)
            } else {
                nul_in(item, &here)
            }
        }),
        _ => None,
    }
}

fn nul_refused(place: &str) -> Failure {
    // The place can hold the offending key itself: its control characters
    // are shown escaped, so the message carries no NUL either.
    let shown: String = place.chars().flat_map(|c| if c.is_control() { c.escape_unicode().collect::<Vec<_>>() } else { vec![c] }).collect();
    Failure::validation("nul_character", format!("{shown} contains the NUL character (U+0000), which is not accepted in any text"))
}

fn check_business(key: &KeyRecord, where_: BusinessIn, query: &[(String, String)], body: Option<&Value>) -> Result<String, Failure> {
    let (found, place) = match where_ {
        BusinessIn::Query => (query.iter().find(|(k, _)| k == "businessId").map(|(_, v)| Value::String(v.clone())), "query parameter"),
        BusinessIn::Body => (body.and_then(|b| b.get("businessId")).cloned(), "body field"),
        BusinessIn::Public => return Ok(String::new()),
    };
    let id = match found {
        None => return Err(Failure::validation("business_id_required", format!("`businessId` ({place}) is required"))),
        Some(Value::String(s)) if is_uuid(&s) => s.to_ascii_lowercase(),
        Some(_) => return Err(Failure::validation("invalid_business_id", format!("`businessId` ({place}) must be a uuid"))),
    };
    if id != key.business_id {
        return Err(Failure::authorization("business_mismatch", "the API key (or console session) does not belong to this businessId"));
    }
    Ok(id)
}

fn check_scopes(op: &Operation, held: &[String], body: Option<&Value>, query: &[(String, String)]) -> Result<(), Failure> {
    let has = |s: &str| held.iter().any(|h| h == s);
    let mut missing: Vec<&str> = op.scopes.iter().copied().filter(|s| !has(s)).collect();
    for c in op.conditional_scopes {
        if c.when.holds(body, query) && !has(c.scope) && !missing.contains(&c.scope) {
            missing.push(c.scope);
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ");
    Err(Failure::authorization("missing_scope", format!("this API key (or console role) lacks the scope{} {list} needed by {}", if missing.len() > 1 { "s" } else { "" }, op.id)))
}

fn parse_query_schema(text: &str) -> Result<Value, String> {
    let mut s: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    openapi::forbid_nul_in_strings(&mut s);
    Ok(s)
}
