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

mod areas;
mod fault;
mod forward;
mod head;
mod http;
mod keys;
mod limits;
mod settings;
mod store;

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

use areas::{area, not_at_the_edge, read, request, served_here, write, Handle};
use bindings::switchboard::platform::transaction;
use head::Head;
pub use keys::after_answer;
use keys::{Assumed, Known, Pending, PrimaryKeys};
pub use settings::{settings, Settings};
use store::{unavailable, EdgeSql};
use switchboard_gateway::exchange::Reply;
use switchboard_gateway::operations::{BusinessIn, DEFAULT_MAX_BODY_BYTES};
use switchboard_gateway::storage::Statements;
use switchboard_gateway::{Admitted, Failure, Gateway, Incoming};
use switchboard_guest::Request;

const OPENAPI_PATH: &str = "/api/v1/openapi.json";
const HEALTHZ_PATH: &str = "/healthz";
const READYZ_PATH: &str = "/readyz";

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

fn probe(result: Result<(), String>, request_id: &str) -> Reply {
    match result {
        Ok(()) => Reply::json(200, switchboard_gateway::errors::success_envelope(r#"{"status":"ok"}"#, request_id)),
        Err(reason) => Reply::failure(&Failure::new(503, "capacity", "not_ready", reason).retryable(true), request_id),
    }
}

/// Ready when the primary answers a statement.
fn ready() -> Result<(), String> {
    EdgeSql.query("SELECT 1", &[]).map(|_| ()).map_err(|_| "the database primary cannot be reached".to_string())
}

/// One log line in the key=value form the runtime's stderr carries: a
/// short, stable message and its fields (`requestId`, `error`, ...), each
/// value quoted when it holds a space, a quote or an `=`.
fn log_event(level: &str, message: &str, fields: &[(&str, &dyn std::fmt::Display)]) {
    eprintln!("{}", log_line(level, message, fields));
}

fn log_line(level: &str, message: &str, fields: &[(&str, &dyn std::fmt::Display)]) -> String {
    let quoted = |v: &str| {
        if v.is_empty() || v.contains([' ', '"', '=', '\\']) || v.contains(char::is_control) {
            format!("{v:?}")
        } else {
            v.to_string()
        }
    };
    let mut line = format!("level={level} msg={}", quoted(message));
    for (name, value) in fields {
        line.push_str(&format!(" {name}={}", quoted(&value.to_string())));
    }
    line
}

struct Edge;

impl wasip2::exports::http::incoming_handler::Guest for Edge {
    fn handle(request: wasip2::http::types::IncomingRequest, out: wasip2::http::types::ResponseOutparam) {
        http::handle(request, out);
    }
}

#[cfg(target_arch = "wasm32")]
wasip2::http::proxy::export!(Edge);

#[cfg(test)]
mod tests {
    #[test]
    fn log_lines_keep_their_fields_apart_and_quote_what_would_blur_them() {
        let e = "connection refused: \"node\" a=b";
        let line = super::log_line("error", "forwarding failed", &[("requestId", &"r-1"), ("error", &e), ("attempt", &2)]);
        assert_eq!(line, r#"level=error msg="forwarding failed" requestId=r-1 error="connection refused: \"node\" a=b" attempt=2"#);
        assert_eq!(super::log_line("info", "ready", &[("note", &"")]), r#"level=info msg=ready note="""#);
    }
}
