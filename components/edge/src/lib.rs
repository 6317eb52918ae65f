//! The edge build's router: the whole public API as one component that
//! exports `wasi:http/incoming-handler`, so a runtime we did not write
//! (`wasmtime serve`, Spin's HTTP trigger) can run it.
//!
//! It links what `switchboard serve` runs, not copies of it: the gateway
//! crate admits each request (route, key, tenancy, scopes, validation
//! against the OpenAPI document, Idempotency-Key syntax) and runs a
//! mutation's idempotency flow and the answer's rendering
//! (`switchboard_gateway::exchange`); the area libraries answer. Their
//! `store`, `jobs`, `clock`, `ids` and `log` imports, and this router's
//! `transaction`, are plugged by `switchboard-edge-store`, which reaches
//! the libSQL primary over `wasi:http` (see docs/design/edge.md). Jobs a request enqueues are rows in its transaction; a native
//! node holding the dispatcher lease runs them.
//!
//! With `SWITCHBOARD_WRITE_NODE` (a node beside the primary), mutations and
//! what only a node serves are forwarded to it whole ([`forward`]), and so
//! are authenticated reads unless `SWITCHBOARD_EDGE_READS=primary`; a read
//! run here sends its key lookup (and its rate limit's update, [`limits`])
//! with its first statement and closes its transaction after the answer.
//!
//! Businesses over several databases (issue 47): keys, rate limits and
//! placement are main's (the primary); a request run here reads its
//! business's placement in main with its key lookup (`transaction::place`)
//! and runs its statements in that database. A write knows it before its
//! `BEGIN IMMEDIATE`; a read runs its first statement at main as if its
//! business were main's, and again at the business's database when it is
//! not (one round trip more, and one after the answer to end the read left
//! at main).
//!
//! Each request runs in a fresh instance (the runtime's rule). A panic, or
//! memory running out, still answers the 500 failure envelope (see
//! [`fault`]); the runtime's time limit stops an instance without one.

// Built natively only for its unit tests: what serves HTTP runs only in
// the component, so natively much of it is never called.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod fault;
mod forward;
mod http;
mod limits;

mod bindings {
    wit_bindgen::generate!({
        world: "edge-router",
        path: "../../wit",
        with: {
            "switchboard:platform/store@0.1.0": switchboard_guest::store,
            "switchboard:platform/types@0.1.0": switchboard_guest::bindings::switchboard::platform::types,
        },
    });
}

use bindings::switchboard::platform::transaction;
use http::Head;
use switchboard_gateway::exchange::{self, Outcome, Reply};
use switchboard_gateway::operations::{BusinessIn, Component, OperationId, DEFAULT_MAX_BODY_BYTES};
use switchboard_gateway::storage::{self, Sql, Value};
use switchboard_gateway::{Admitted, Failure, Gateway, Incoming, KeyDirectory, KeyRecord, SessionRecord};
use switchboard_guest::{Request, Success};

const OPENAPI_PATH: &str = "/api/v1/openapi.json";
const HEALTHZ_PATH: &str = "/healthz";
const READYZ_PATH: &str = "/readyz";

/// An area's request entry point.
type Handle = fn(Request) -> Result<Success, switchboard_guest::Failure>;

/// The areas this build links. Messaging and voice call providers (the
/// messenger, signed recording links) that live in a native node; their
/// operations go to the write node (501 without one). The gateway's own
/// operations run no area ([`Gateway::own_answer`]).
fn area(component: Component) -> Option<Handle> {
    match component {
        Component::Contacts => Some(switchboard_contacts_area::handle),
        Component::Agents => Some(switchboard_agents_area::handle),
        Component::DataSources => Some(switchboard_data_sources_area::handle),
        Component::Webhooks => Some(switchboard_webhooks_area::handle),
        Component::Campaigns => Some(switchboard_campaigns_area::handle),
        Component::Messaging | Component::Voice | Component::Gateway => None,
    }
}

/// Whether this build answers the component's operations itself.
fn served_here(component: Component) -> bool {
    component == Component::Gateway || area(component).is_some()
}

/// An area's prepare step (WIT `handler.prepare`), for the operations that
/// have one (`Operation::prepared_before_write`).
type Prepare = fn(Request) -> Result<Vec<u8>, switchboard_guest::Failure>;

fn prepare_step(component: Component) -> Option<Prepare> {
    match component {
        Component::Contacts => Some(switchboard_contacts_area::prepare),
        Component::DataSources => Some(switchboard_data_sources_area::prepare),
        Component::Gateway | Component::Webhooks | Component::Messaging | Component::Agents | Component::Voice | Component::Campaigns => None,
    }
}

/// What a request came to: a whole answer, a download streamed in pieces,
/// or the write node's answer (already streamed to the client).
// One per request, moved once: boxing the first piece would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Answer {
    Whole(Reply),
    Forwarded(u16),
    /// The first piece and, when more follow, the request that pulls them.
    Download {
        status: u16,
        first: switchboard_guest::bindings::switchboard::platform::types::BodyPiece,
        rest: Option<(Request, Handle)>,
    },
}

/// Serves one request (everything but writing the answer).
pub fn serve(head: Head, read_body: impl FnOnce(usize) -> Result<Vec<u8>, Failure>, request_id: &str) -> Answer {
    let whole = |r: Reply| Answer::Whole(r);
    if head.method == "GET" {
        match head.path.as_str() {
            HEALTHZ_PATH => return whole(probe(Ok(()), request_id)),
            READYZ_PATH => return whole(probe(ready(), request_id)),
            OPENAPI_PATH => return whole(Reply::json(200, gateway().document_text().to_string())),
            _ => {}
        }
    }
    let gateway = gateway();
    let op = gateway.route(&head.method, &head.path).ok().map(|(op, _)| op);
    if let Some(op) = op {
        if op.raw_body().is_some() && !switchboard_gateway::operations::is_json_content_type(head.content_type.as_deref()) {
            return whole(Reply::failure(&not_at_the_edge(op.id, "a raw upload is staged on a node's disk"), request_id));
        }
    }
    let max = op.map_or(DEFAULT_MAX_BODY_BYTES, |op| op.max_body_bytes());
    if head.content_length.is_some_and(|len| len > (max + http::DRAIN_EXTRA_BYTES) as u64) {
        return whole(Reply::failure(&Failure::too_large(max), request_id));
    }
    let body = match read_body(max) {
        Ok(b) => b,
        Err(f) => return whole(Reply::failure(&f, request_id)),
    };
    let reads_here = op.is_some_and(|op| !op.method.is_mutation() && op.business_in != BusinessIn::Public);
    if reads_here {
        return read_at_primary(gateway, &head, body, request_id);
    }
    let keys = PrimaryKeys::placing(op.and_then(|op| claimed_business(op, &head, &body)));
    let mut admitted = match gateway.admit(incoming(&head, body), &keys) {
        Ok(a) => a,
        Err(f) => return whole(Reply::failure(&f, request_id)),
    };
    let rate_headers = match keys.rate_outcome() {
        Ok(h) => h,
        Err(f) => return whole(Reply::failure(&f, request_id)),
    };
    let op = admitted.op;
    if let Some(body) = gateway.own_answer(op, request_id) {
        return whole(Reply::json(op.success_status[0], body));
    }
    let Some(handle) = area(op.component) else {
        return whole(Reply::failure(&not_at_the_edge(op.id, "its area calls a provider that runs in a node"), request_id));
    };
    if let Err(f) = keys.place(&admitted) {
        return whole(Reply::failure(&f, request_id));
    }
    let req = request(&mut admitted, request_id);
    let mut reply = write(&admitted, req, handle, request_id);
    reply.headers.extend(rate_headers);
    whole(reply)
}

/// The gateway's view of the request.
fn incoming(head: &Head, body: Vec<u8>) -> Incoming<'_> {
    Incoming {
        method: &head.method,
        path: &head.path,
        query: head.query.as_deref(),
        authorization: head.authorization.as_deref(),
        // The console is not served at the edge: cookies are not read.
        session: None,
        csrf: None,
        idempotency_key: head.idempotency_key.as_deref(),
        body,
    }
}

/// The `businessId` a request names (its query parameter or body field),
/// lowercased; what a read assumes its key belongs to until the key's row
/// is back.
fn claimed_business(op: &switchboard_gateway::Operation, head: &Head, body: &[u8]) -> Option<String> {
    let found = match op.business_in {
        BusinessIn::Query => switchboard_gateway::operations::parse_query(head.query.as_deref().unwrap_or(""))?.into_iter().find(|(k, _)| k == "businessId").map(|(_, v)| v),
        BusinessIn::Body => serde_json::from_slice::<serde_json::Value>(body).ok()?.get("businessId")?.as_str().map(String::from),
        BusinessIn::Public => None,
    }?;
    Some(found.to_ascii_lowercase())
}

/// A read at the primary in as few round trips as it can: the key lookup
/// (and its rate limit's update) travel in the pipeline that carries the
/// `BEGIN` and the area's first statement. Admission is speculative: the
/// area runs as if the key belonged to the business the request names, and
/// its answer is given only once the key's row says so (a read has no side
/// effects, and an area reads nothing of the key but its business). The
/// transaction ends after the answer ([`http::handle`]), off its path.
fn read_at_primary(gateway: &Gateway, head: &Head, body: Vec<u8>, request_id: &str) -> Answer {
    let whole = |r: Reply| Answer::Whole(r);
    let op = gateway.route(&head.method, &head.path).ok().map(|(op, _)| op).expect("routed by the caller");
    let token = switchboard_gateway::auth::bearer_token(head.authorization.as_deref()).filter(|t| switchboard_gateway::auth::looks_like_key(t));
    let (Some(token), Some(business)) = (token, claimed_business(op, head, &body)) else {
        // Refused before any lookup (no key), or refused whatever the key
        // (no business): admission as usual answers.
        let keys = PrimaryKeys::placing(claimed_business(op, head, &body));
        return match gateway.admit(incoming(head, body), &keys) {
            Ok(mut a) => match keys.rate_outcome().and_then(|headers| keys.place(&a).map(|()| headers)) {
                Ok(headers) => begin_and_read(&mut a, request_id, headers),
                Err(f) => whole(Reply::failure(&f, request_id)),
            },
            Err(f) => whole(Reply::failure(&f, request_id)),
        };
    };
    let hash = switchboard_gateway::auth::hash_key(token);
    let pending = Pending::queue(&hash, true, Some(&business));
    let assumed = Assumed { business_id: business };
    let mut speculative = match gateway.admit(incoming(head, body.clone()), &assumed) {
        Ok(a) => a,
        Err(_) => {
            // Refused even so: the key decides what the answer is (401
            // before anything else, as a node answers).
            let known = match pending.key() {
                Ok(k) => Known(k),
                Err(f) => return whole(Reply::failure(&f, request_id)),
            };
            return match gateway.admit(incoming(head, body), &known) {
                Ok(mut a) => match pending.rate_outcome().and_then(|headers| pending.placed().map(|()| headers)) {
                    Ok(headers) => {
                        let Some(handle) = area(a.op.component) else { return whole(Reply::failure(&not_at_the_edge(a.op.id, "its area calls a provider that runs in a node"), request_id)) };
                        let req = request(&mut a, request_id);
                        with_headers(read(&a, req, handle, request_id), headers)
                    }
                    Err(f) => whole(Reply::failure(&f, request_id)),
                },
                Err(f) => whole(Reply::failure(&f, request_id)),
            };
        }
    };
    let Some(handle) = area(speculative.op.component) else {
        return whole(Reply::failure(&not_at_the_edge(speculative.op.id, "its area calls a provider that runs in a node"), request_id));
    };
    let req = request(&mut speculative, request_id);
    let answer = read(&speculative, req, handle, request_id);
    // Now the key: the same admission with its real row decides.
    let known = match pending.key() {
        Ok(k) => Known(k),
        Err(f) => return whole(Reply::failure(&f, request_id)),
    };
    if let Err(f) = gateway.admit(incoming(head, body), &known) {
        return whole(Reply::failure(&f, request_id));
    }
    // The business's database answered (or main, its placement): a
    // placement that could not be read answers 503, never main's rows.
    match pending.rate_outcome().and_then(|headers| pending.placed().map(|()| headers)) {
        Ok(headers) => with_headers(answer, headers),
        Err(f) => whole(Reply::failure(&f, request_id)),
    }
}

fn with_headers(answer: Answer, headers: Vec<(&'static str, String)>) -> Answer {
    match answer {
        Answer::Whole(mut r) => {
            r.headers.extend(headers);
            Answer::Whole(r)
        }
        other => other,
    }
}

fn begin_and_read(a: &mut Admitted, request_id: &str, headers: Vec<(&'static str, String)>) -> Answer {
    let Some(handle) = area(a.op.component) else {
        return Answer::Whole(Reply::failure(&not_at_the_edge(a.op.id, "its area calls a provider that runs in a node"), request_id));
    };
    if transaction::control("BEGIN").is_err() {
        return Answer::Whole(Reply::failure(&unavailable(), request_id));
    }
    let req = request(a, request_id);
    with_headers(read(a, req, handle, request_id), headers)
}

/// The key lookup, the rate limit's update and the placement of the
/// business the request names, of one request, queued to travel with its
/// next statement (all three read at main).
struct Pending {
    key: u32,
    rate: Option<u32>,
    /// The business placed, and its placement's handle.
    place: Option<(String, u32)>,
}

impl Pending {
    /// Queues the rate limit's update (outside the transaction) and, after
    /// a `BEGIN` when `begin`, the key lookup and `business`'s placement
    /// (the stream moves to its database when the placement is back).
    fn queue(hash: &str, begin: bool, business: Option<&str>) -> Pending {
        let rate = settings().rates.map(|r| {
            let (sql, params) = r.statement(hash);
            transaction::prefetch(&sql, &to_wit(params))
        });
        if begin {
            let _ = transaction::control("BEGIN");
        }
        let key = transaction::prefetch(storage::FIND_KEY, &[switchboard_guest::Value::Text(hash.to_string())]);
        let place = business.map(|b| (b.to_string(), transaction::place(b)));
        Pending { key, rate, place }
    }

    /// Whether the business's placement was read (the stream is at its
    /// database); 503 when it could not be.
    fn placed(&self) -> Result<(), Failure> {
        match &self.place {
            Some((_, handle)) => transaction::prefetched(*handle).map(|_| ()).map_err(|_| unavailable()),
            None => Ok(()),
        }
    }

    /// The key's row (sent now if nothing carried it yet).
    fn key(&self) -> Result<Option<KeyRecord>, Failure> {
        let rows = transaction::prefetched(self.key).map_err(|_| unavailable())?;
        Ok(rows.first().map(|r| storage::key_record(&r.iter().cloned().map(Value::from).collect::<Vec<_>>())))
    }

    /// The answer's `RateLimit-*` headers, or the 429. A limit that could
    /// not be read limits nothing (a missing table is made after the
    /// answer).
    fn rate_outcome(&self) -> Result<Vec<(&'static str, String)>, Failure> {
        let (Some(rates), Some(handle)) = (settings().rates, self.rate) else { return Ok(Vec::new()) };
        match transaction::prefetched(handle) {
            Ok(rows) => rates.outcome(&rows.into_iter().map(|r| r.into_iter().map(Value::from).collect()).collect::<Vec<_>>()),
            Err(e) => {
                if limits::table_missing(&e.message) {
                    MAKE_RATE_TABLE.with(|m| m.set(true));
                } else {
                    log_error(&format!("the rate limit could not be read: {}", e.message));
                }
                Ok(Vec::new())
            }
        }
    }
}

thread_local! {
    /// Set when a request found the rate-limit table missing.
    static MAKE_RATE_TABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// After the answer: ends a read's transaction at the primary (one round
/// trip the client does not wait for), and makes the rate-limit table when
/// a request found it missing.
pub fn after_answer() {
    let _ = transaction::control("ROLLBACK");
    if MAKE_RATE_TABLE.with(|m| m.replace(false)) {
        if let Err(e) = EdgeSql.execute(limits::TABLE, vec![]) {
            log_error(&format!("the rate-limit table could not be made: {e}"));
        }
    }
}

/// Admission's view of a key whose row is still on its way: it belongs to
/// the business the request names and holds every scope.
struct Assumed {
    business_id: String,
}

impl KeyDirectory for Assumed {
    fn find_by_hash(&self, _key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        Ok(Some(KeyRecord { key_id: String::new(), business_id: self.business_id.clone(), scopes: switchboard_gateway::auth::SCOPES.iter().map(|s| s.to_string()).collect(), revoked: false }))
    }
    fn find_session(&self, _token_hash: &str) -> Result<Option<SessionRecord>, Failure> {
        Ok(None)
    }
}

/// A key's row, once known.
struct Known(Option<KeyRecord>);

impl KeyDirectory for Known {
    fn find_by_hash(&self, _key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        Ok(self.0.clone())
    }
    fn find_session(&self, _token_hash: &str) -> Result<Option<SessionRecord>, Failure> {
        Ok(None)
    }
}

/// The edge's configuration, from its environment (`wasmtime serve --env`,
/// spin.toml's `environment`).
pub struct Settings {
    /// `SWITCHBOARD_WRITE_NODE`, when set.
    pub write_node: Option<Result<forward::Node, String>>,
    /// Authenticated reads go to the write node too (the default with one;
    /// `SWITCHBOARD_EDGE_READS=primary` runs them here, at the primary).
    pub reads_at_node: bool,
    /// `SWITCHBOARD_EDGE_DEADLINE_MS` (9,000 by default: set it a little
    /// below the runtime's own limit): no wait on the primary or the write
    /// node goes past it, and the answer is then ours (503/504).
    pub deadline_ns: u64,
    /// The rate limits of requests run here (None: off).
    pub rates: Option<limits::Rates>,
}

pub fn settings() -> &'static Settings {
    static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(|| {
        let write_node = forward::Node::from_env();
        let reads = std::env::var("SWITCHBOARD_EDGE_READS").unwrap_or_default();
        let reads_at_node = write_node.is_some() && reads.trim() != "primary";
        let deadline_ms: u64 = std::env::var("SWITCHBOARD_EDGE_DEADLINE_MS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(9_000);
        Settings { write_node, reads_at_node, deadline_ns: deadline_ms.saturating_mul(1_000_000), rates: limits::Rates::from_env() }
    })
}

/// Paths beside the API a node serves (its metrics, sandbox routes when it
/// has them, provider webhooks, signed recording links): forwarded to the
/// write node as they are.
fn node_route(path: &str) -> bool {
    path == "/metrics" || ["/sandbox/", "/providers/v1/", "/recordings/"].iter().any(|p| path.starts_with(p))
}

/// Whether the write node answers this request (given there is one).
pub fn for_the_node(method: &str, path: &str) -> bool {
    if node_route(path) {
        return true;
    }
    match gateway().route(method, path) {
        Ok((op, _)) => op.method.is_mutation() || !served_here(op.component) || (settings().reads_at_node && op.business_in != switchboard_gateway::operations::BusinessIn::Public),
        // No route: answered here (404, 405).
        Err(_) => false,
    }
}

fn gateway() -> &'static Gateway {
    static GATEWAY: std::sync::OnceLock<Gateway> = std::sync::OnceLock::new();
    GATEWAY.get_or_init(|| Gateway::lazy().expect("the embedded OpenAPI document is valid"))
}

fn not_at_the_edge(op: OperationId, why: &str) -> Failure {
    Failure::new(501, "configuration", "not_served_at_edge", format!("{op} is not served by an edge node ({why}); send it to a switchboard serve node")).retryable(false)
}

fn probe(result: Result<(), String>, request_id: &str) -> Reply {
    match result {
        Ok(()) => Reply::json(200, switchboard_gateway::errors::success_envelope(r#"{"status":"ok"}"#, request_id)),
        Err(reason) => Reply::failure(&Failure::new(503, "capacity", "not_ready", reason).retryable(true), request_id),
    }
}

/// Ready when the primary answers a statement.
fn ready() -> Result<(), String> {
    EdgeSql.query("SELECT 1", vec![]).map(|_| ()).map_err(|_| "the database primary cannot be reached".to_string())
}

/// The component's view of the request; the body moves into it.
fn request(a: &mut Admitted, request_id: &str) -> Request {
    Request {
        operation: a.op.id.as_str().to_string(),
        business_id: a.business_id.clone().unwrap_or_default(),
        path_params: a.path_params.clone(),
        query: a.query.clone(),
        body: a.body.take(),
        caller: a.caller.clone(),
        request_id: request_id.to_string(),
        stream_cursor: None,
        prepared: None,
    }
}

/// A read on the transaction already begun (one snapshot); it ends after
/// the answer ([`after_answer`], or the download's last piece).
fn read(a: &Admitted, req: Request, handle: Handle, request_id: &str) -> Answer {
    let result = handle(req.clone());
    match result {
        // A download: the pieces after the first are pulled while the
        // answer streams, on the same snapshot.
        Ok(Success { status, body: Some(piece), .. }) if (200..300).contains(&status) => {
            let rest = piece.next_cursor.clone().map(|cursor| (Request { stream_cursor: Some(cursor), ..req }, handle));
            Answer::Download { status, first: piece, rest }
        }
        result => Answer::Whole(render(a, result, request_id)),
    }
}

/// A mutation: one write transaction at the primary, the shared flow inside.
fn write(a: &Admitted, mut req: Request, handle: Handle, request_id: &str) -> Reply {
    // A large body is parsed before the transaction, as in a node's
    // pipeline: the prepared bytes replace the body; a failure is the answer.
    let mut refused = None;
    if let Some(prepare) = prepare_step(a.op.component).filter(|_| a.op.prepared_before_write()) {
        let with_body = Request { body: req.body.take(), ..req.clone() };
        match prepare(with_body) {
            Ok(prepared) => req.prepared = Some(prepared),
            Err(f) => refused = Some(f),
        }
    }
    if transaction::control("BEGIN IMMEDIATE").is_err() {
        return Reply::failure(&unavailable(), request_id);
    }
    let (_, reply) = exchange::mutation(EdgeSql, a, request_id, switchboard_guest::clock::now_ms(), |tx| {
        let mut result = match refused {
            Some(f) => Err(f),
            None => handle(req),
        };
        if matches!(&result, Ok(s) if s.body.is_some()) {
            // Downloads are reads (see the host's pipeline).
            log_error(&format!("requestId={request_id} {} (a mutation) answered with a raw body piece", a.op.id));
            result =
                Err(switchboard_guest::Failure { status: 500, code: "internal_error".into(), message: "the handler produced an invalid answer".into(), category: "internal".into(), retryable: false });
        }
        (tx, render(a, result, request_id))
    });
    if let Err(e) = transaction::control("COMMIT") {
        log_error(&format!("requestId={request_id} could not commit: {}", e.message));
        let failure = if e.kind == "busy" { unavailable() } else { Failure::internal("the change could not be saved; nothing was written, retry").retryable(true) };
        return Reply::failure(&failure, request_id);
    }
    reply
}

fn render(a: &Admitted, result: Result<Success, switchboard_guest::Failure>, request_id: &str) -> Reply {
    let outcome = match result {
        Ok(s) => Outcome::Success { status: s.status, data_json: s.data_json },
        Err(f) => Outcome::Failed { status: f.status, code: f.code, message: f.message, category: f.category, retryable: f.retryable },
    };
    if let Some(fault) = outcome.fault() {
        log_error(&format!("requestId={request_id} {fault}"));
    }
    exchange::render(a.op, outcome, request_id)
}

fn unavailable() -> Failure {
    Failure::new(503, "upstream", "primary_unavailable", "the database primary cannot be reached; nothing was written, retry shortly")
}

fn log_error(line: &str) {
    eprintln!("level=error msg=\"{}\"", line.replace('"', "'"));
}

/// Statements of the shared request path, on the request's stream.
struct EdgeSql;

/// Parameters as the `store` import takes them (the conversion is
/// switchboard_guest's, one for every component).
fn to_wit(params: Vec<Value>) -> Vec<switchboard_guest::Value> {
    params.into_iter().map(switchboard_guest::Value::from).collect()
}

impl Sql for EdgeSql {
    fn query(&mut self, sql: &str, params: Vec<Value>) -> Result<Vec<Vec<Value>>, String> {
        if storage::transaction_control(sql) {
            return transaction::control(sql).map(|_| Vec::new()).map_err(|e| e.message);
        }
        let rows = switchboard_guest::store::query(sql, &to_wit(params)).map_err(|e| e.message)?;
        Ok(rows.into_iter().map(|r| r.into_iter().map(Value::from).collect()).collect())
    }
    fn execute(&mut self, sql: &str, params: Vec<Value>) -> Result<u64, String> {
        if storage::transaction_control(sql) {
            return transaction::control(sql).map(|_| 0).map_err(|e| e.message);
        }
        switchboard_guest::store::execute(sql, &to_wit(params)).map_err(|e| e.message)
    }
}

impl exchange::Owner for EdgeSql {
    fn unavailable(&self) -> Failure {
        unavailable()
    }
    fn log_error(&self, line: &str) {
        log_error(line);
    }
}

/// API keys, read at the primary on every request (revocation is
/// immediate), with the rate limit's update and the placement of the
/// business the request names in the same round trip.
struct PrimaryKeys {
    business: Option<String>,
    pending: std::cell::RefCell<Option<Pending>>,
}

impl PrimaryKeys {
    /// Keys whose lookup carries `business`'s placement.
    fn placing(business: Option<String>) -> PrimaryKeys {
        PrimaryKeys { business, pending: std::cell::RefCell::new(None) }
    }

    /// Moves the request's stream to the admitted business's database
    /// before its transaction begins: the placement read with the key, or
    /// (a business the request did not name as expected) read now.
    fn place(&self, a: &Admitted) -> Result<(), Failure> {
        let Some(business) = a.business_id.as_deref().filter(|b| !b.is_empty()) else { return Ok(()) };
        if let Some(pending) = &*self.pending.borrow() {
            if pending.place.as_ref().is_some_and(|(placed, _)| placed == business) {
                return pending.placed();
            }
        }
        transaction::prefetched(transaction::place(business)).map(|_| ()).map_err(|_| unavailable())
    }

    fn rate_outcome(&self) -> Result<Vec<(&'static str, String)>, Failure> {
        match &*self.pending.borrow() {
            Some(p) => p.rate_outcome(),
            None => Ok(Vec::new()),
        }
    }
}

impl KeyDirectory for PrimaryKeys {
    fn find_by_hash(&self, key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        let pending = Pending::queue(key_hash, false, self.business.as_deref());
        let key = pending.key();
        *self.pending.borrow_mut() = Some(pending);
        key
    }
    fn find_session(&self, _token_hash: &str) -> Result<Option<SessionRecord>, Failure> {
        Ok(None)
    }
}

struct Edge;

impl wasip2::exports::http::incoming_handler::Guest for Edge {
    fn handle(request: wasip2::http::types::IncomingRequest, out: wasip2::http::types::ResponseOutparam) {
        http::handle(request, out);
    }
}

#[cfg(target_arch = "wasm32")]
wasip2::http::proxy::export!(Edge);
