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
//! the libSQL primary over `wasi:http` (see ARCHITECTURE.md "The edge
//! build"). Jobs a request enqueues are rows in its transaction; a native
//! node holding the dispatcher lease runs them.
//!
//! Each request runs in a fresh instance (the runtime's rule). A panic, or
//! memory running out, still answers the 500 failure envelope (see
//! [`fault`]); the runtime's time limit stops an instance without one.

mod fault;
mod http;

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
use switchboard_gateway::operations::{Component, DEFAULT_MAX_BODY_BYTES};
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
/// operations answer 501 here and are served by `switchboard serve`.
fn area(component: Component) -> Option<Handle> {
    match component {
        Component::Contacts => Some(switchboard_contacts_area::handle),
        Component::Agents => Some(switchboard_agents_area::handle),
        Component::DataSources => Some(switchboard_data_sources_area::handle),
        Component::Webhooks => Some(switchboard_webhooks_area::handle),
        Component::Campaigns => Some(switchboard_campaigns_area::handle),
        Component::Messaging | Component::Voice => None,
    }
}

/// What a request came to: a whole answer, or a download streamed in pieces.
pub enum Answer {
    Whole(Reply),
    /// The first piece and, when more follow, the request that pulls them.
    Download { status: u16, first: switchboard_guest::bindings::switchboard::platform::types::BodyPiece, rest: Option<(Request, Handle)> },
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
    let incoming = Incoming {
        method: &head.method,
        path: &head.path,
        query: head.query.as_deref(),
        authorization: head.authorization.as_deref(),
        // The console is not served at the edge: cookies are not read.
        session: None,
        csrf: None,
        idempotency_key: head.idempotency_key.as_deref(),
        body,
    };
    let mut admitted = match gateway.admit(incoming, &PrimaryKeys) {
        Ok(a) => a,
        Err(f) => return whole(Reply::failure(&f, request_id)),
    };
    let op = admitted.op;
    if op.id == "getAutomationContract" {
        let data = switchboard_gateway::contract::contract_json(gateway);
        return whole(Reply::json(200, switchboard_gateway::errors::success_envelope(&data, request_id)));
    }
    let Some(handle) = area(op.component) else {
        return whole(Reply::failure(&not_at_the_edge(op.id, "its area calls a provider that runs in a node"), request_id));
    };
    let req = request(&mut admitted, request_id);
    if op.method.is_mutation() {
        whole(write(&admitted, req, handle, request_id))
    } else {
        read(&admitted, req, handle, request_id)
    }
}

fn gateway() -> &'static Gateway {
    static GATEWAY: std::sync::OnceLock<Gateway> = std::sync::OnceLock::new();
    GATEWAY.get_or_init(|| Gateway::lazy().expect("the embedded OpenAPI document is valid"))
}

fn not_at_the_edge(op: &str, why: &str) -> Failure {
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
        operation: a.op.id.to_string(),
        business_id: a.business_id.clone().unwrap_or_default(),
        path_params: a.path_params.clone(),
        query: a.query.clone(),
        body: a.body.take(),
        scopes: a.scopes.clone(),
        caller: a.caller.clone(),
        request_id: request_id.to_string(),
        stream_cursor: None,
    }
}

/// A read: one read transaction at the primary (one snapshot).
fn read(a: &Admitted, req: Request, handle: Handle, request_id: &str) -> Answer {
    if transaction::control("BEGIN").is_err() {
        return Answer::Whole(Reply::failure(&unavailable(), request_id));
    }
    let result = handle(req.clone());
    match result {
        // A download: the pieces after the first are pulled while the
        // answer streams, on the same snapshot.
        Ok(Success { status, body: Some(piece), .. }) if (200..300).contains(&status) => {
            let rest = piece.next_cursor.clone().map(|cursor| (Request { stream_cursor: Some(cursor), ..req }, handle));
            if rest.is_none() {
                let _ = transaction::control("ROLLBACK");
            }
            Answer::Download { status, first: piece, rest }
        }
        result => {
            let _ = transaction::control("ROLLBACK");
            Answer::Whole(render(a, result, request_id))
        }
    }
}

/// A mutation: one write transaction at the primary, the shared flow inside.
fn write(a: &Admitted, req: Request, handle: Handle, request_id: &str) -> Reply {
    if transaction::control("BEGIN IMMEDIATE").is_err() {
        return Reply::failure(&unavailable(), request_id);
    }
    let (_, reply) = exchange::mutation(EdgeSql, a, request_id, switchboard_guest::clock::now_ms(), |tx| {
        let mut result = handle(req);
        if matches!(&result, Ok(s) if s.body.is_some()) {
            // Downloads are reads (see the host's pipeline).
            log_error(&format!("requestId={request_id} {} (a mutation) answered with a raw body piece", a.op.id));
            result = Err(switchboard_guest::Failure { status: 500, code: "internal_error".into(), message: "the handler produced an invalid answer".into(), category: "internal".into(), retryable: false });
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

fn from_wit(v: switchboard_guest::Value) -> Value {
    use switchboard_guest::Value as W;
    match v {
        W::Null => Value::Null,
        W::Integer(i) => Value::Integer(i),
        W::Real(f) => Value::Real(f),
        W::Text(s) => Value::Text(s),
        W::Blob(b) => Value::Blob(b),
    }
}

fn to_wit(v: Value) -> switchboard_guest::Value {
    use switchboard_guest::Value as W;
    match v {
        Value::Null => W::Null,
        Value::Integer(i) => W::Integer(i),
        Value::Real(f) => W::Real(f),
        Value::Text(s) => W::Text(s),
        Value::Blob(b) => W::Blob(b),
    }
}

impl Sql for EdgeSql {
    fn query(&mut self, sql: &str, params: Vec<Value>) -> Result<Vec<Vec<Value>>, String> {
        if storage::transaction_control(sql) {
            return transaction::control(sql).map(|_| Vec::new()).map_err(|e| e.message);
        }
        let rows = switchboard_guest::store::query(sql, &params.into_iter().map(to_wit).collect::<Vec<_>>()).map_err(|e| e.message)?;
        Ok(rows.into_iter().map(|r| r.into_iter().map(from_wit).collect()).collect())
    }
    fn execute(&mut self, sql: &str, params: Vec<Value>) -> Result<u64, String> {
        if storage::transaction_control(sql) {
            return transaction::control(sql).map(|_| 0).map_err(|e| e.message);
        }
        switchboard_guest::store::execute(sql, &params.into_iter().map(to_wit).collect::<Vec<_>>()).map_err(|e| e.message)
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

/// API keys, read at the primary on every request (revocation is immediate).
struct PrimaryKeys;

impl KeyDirectory for PrimaryKeys {
    fn find_by_hash(&self, key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        storage::find_key(&mut EdgeSql, key_hash).map_err(|_| unavailable())
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
