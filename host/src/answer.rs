//! One request's answer, after `server.rs` routed it: a probe or the
//! document; else, under the bound on requests in flight, its credentials
//! read from the headers, then the console, a raw upload (streamed), or
//! its body read under its operation's limit and answered by a route
//! beside the API or by the API pipeline (admission, a forward at a far
//! node, the run on a reader or writer thread).

use crate::pipeline::{Answer, OnWorker, Prepared};
use crate::probes::{metrics_answer, probe, storage_ready};
use crate::raw_upload::Credentials;
use crate::server::BENCH_NATIVE_PREFIX;
use crate::shared::Shared;
use crate::side_routes::Side;
use crate::write_node::{Head, WriteNode};
use bytes::Bytes;
use futures_util::FutureExt;
use http_body_util::BodyExt;
use hyper::body::Incoming as HyperBody;
use hyper::Request;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use switchboard_gateway::{Failure, Incoming, Operation};
use tokio::sync::SemaphorePermit;

/// Oversized bodies up to this much beyond their limit are drained before
/// the 413 is sent.
const DRAIN_EXTRA_BYTES: usize = 32 << 20;

/// `side` and `op`: what the side routes' table and `operation_of` found
/// for the request's path.
pub(crate) async fn answer(shared: &Arc<Shared>, req: Request<HyperBody>, side: Option<Side>, op: Option<&'static Operation>, peer: std::net::IpAddr, request_id: &str) -> Answer {
    if req.method() == hyper::Method::GET {
        if let Some(answer) = unlimited(shared, side, request_id).await {
            return answer;
        }
    }
    // Load shedding: a bounded number of API requests in the service.
    let _slot = match shared.limits.enter() {
        Ok(slot) => slot,
        Err(f) => return Answer::failure(&f, request_id),
    };
    let credentials = match credentials(&req) {
        Ok(c) => c,
        Err(f) => return Answer::failure(&f, request_id),
    };
    if op.is_none() && crate::console::serves(req.uri().path()) {
        return console(shared, req, credentials, peer, request_id).await;
    }
    let idempotency_key = match req.headers().get("idempotency-key").map(|v| v.to_str().map(String::from)) {
        Some(Err(_)) => return Answer::failure(&Failure::validation("invalid_idempotency_key", "Idempotency-Key may contain only visible ASCII characters (0x21 to 0x7E)"), request_id),
        other => other.and_then(Result::ok),
    };
    // The bench baseline's path only mirrors its operation: it has the
    // default body limit and no raw form.
    let native = shared.app.bench_baseline && side == Some(Side::BenchNative);
    let op = op.filter(|_| !native);
    let max_body = match op {
        Some(op) => {
            let content_type = req.headers().get("content-type").map(|v| v.to_str().unwrap_or("?"));
            if op.raw_body().is_some() && !switchboard_gateway::operations::is_json_content_type(content_type) {
                return raw_upload(shared, req, op, credentials, idempotency_key, request_id).await;
            }
            op.max_body_bytes()
        }
        _ => switchboard_gateway::operations::DEFAULT_MAX_BODY_BYTES,
    };
    let declared_len = req.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared_len.is_some_and(|len| len > (max_body + DRAIN_EXTRA_BYTES) as u64) {
        // Far too large to be worth reading: answer now and close.
        return Answer::failure(&too_large(max_body), request_id);
    }
    let whole = whole(shared, &req, side, native);
    let max_body = if matches!(whole, Some(Whole::ProviderEvents(_))) { crate::provider_events::MAX_BODY_BYTES } else { max_body };
    let method = req.method().as_str().to_string();
    let mut path = req.uri().path().to_string();
    if native {
        path = format!("/api/v1{}", &path[BENCH_NATIVE_PREFIX.len()..]);
    }
    let query = req.uri().query().map(String::from);
    // A far node: what may write is forwarded (API mutations, sandbox
    // routes, provider webhooks); its head is kept for that.
    let far = write_node_for(shared, &req).map(|node| (node, Head::of(&req)));
    let body = match read_body(req.into_body(), max_body).await {
        Ok(b) => b,
        Err(f) => return Answer::failure(&f, request_id),
    };
    if let (Some((node, head)), Some(Whole::Sandbox | Whole::ProviderEvents(_))) = (&far, &whole) {
        if let Some(answer) = node.send(head, reqwest::Body::from(body.clone()), false, request_id, op).await {
            return answer;
        }
    }
    let Ok(permit) = shared.permits.acquire().await else {
        return Answer::failure(&shutting_down(), request_id);
    };
    // Kept for a forward only when the request turns out to be a mutation.
    let forward_body = far.as_ref().map(|_| Bytes::from(body.clone()));
    let Credentials { authorization, session, csrf } = credentials;
    let work = Work { method, path, query, authorization, session, csrf, idempotency_key, body };
    match whole {
        Some(whole) => work.answer_whole(shared, whole, request_id).await,
        None => api(shared, work, far.zip(forward_body), op, permit, request_id).await,
    }
}

/// A probe, the document or the public `/metrics`: answered outside the
/// bound on requests in flight.
async fn unlimited(shared: &Arc<Shared>, side: Option<Side>, request_id: &str) -> Option<Answer> {
    Some(match side? {
        Side::OpenApi => Answer { status: 200, content_type: "application/json", body: shared.app.gateway.document_text().to_string(), headers: Vec::new(), operation: "openapi", download: None },
        Side::Metrics if shared.metrics_on_public => metrics_answer(shared).await,
        Side::Healthz => probe(Ok(()), "healthz", request_id),
        Side::Readyz => {
            let s = shared.clone();
            let ready = tokio::task::spawn_blocking(move || storage_ready(s.app.dbs.main())).await.unwrap_or_else(|_| Err("the readiness check failed".into()));
            probe(ready, "readyz", request_id)
        }
        _ => return None,
    })
}

/// The request's credentials: its `Authorization`, else a console
/// session's cookie, and the CSRF token a console page echoes (an API key
/// wins, so with one the cookie is not read).
fn credentials(req: &Request<HyperBody>) -> Result<Credentials, Failure> {
    let header = |name: &str| req.headers().get(name).map(|v| v.to_str().map(String::from));
    let authorization = match header("authorization") {
        Some(Err(_)) => return Err(Failure::authentication("the Authorization header is not valid text")),
        other => other.and_then(Result::ok),
    };
    let session = match authorization {
        Some(_) => None,
        None => req.headers().get_all("cookie").iter().filter_map(|v| v.to_str().ok()).find_map(crate::console::sessions::from_cookie_header).map(String::from),
    };
    let csrf = header("x-csrf-token").and_then(Result::ok);
    Ok(Credentials { authorization, session, csrf })
}

/// A console route, on a blocking thread.
async fn console(shared: &Arc<Shared>, req: Request<HyperBody>, credentials: Credentials, peer: std::net::IpAddr, request_id: &str) -> Answer {
    let r = crate::console::ConsoleRequest {
        method: req.method().as_str().to_string(),
        path: req.uri().path().to_string(),
        authorization: credentials.authorization.is_some(),
        session: credentials.session,
        csrf: credentials.csrf,
        peer,
        // Said, not assumed: a body without a Content-Type is not JSON here.
        json: req.headers().get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|t| switchboard_gateway::operations::is_json_content_type(Some(t))),
        body: Vec::new(),
    };
    let body = match read_body(req.into_body(), crate::console::MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(f) => return Answer::failure(&f, request_id),
    };
    let s = shared.clone();
    let rid = request_id.to_string();
    let span = tracing::Span::current();
    match tokio::task::spawn_blocking(move || span.in_scope(|| crate::console::respond(&s.app, &s.console, crate::console::ConsoleRequest { body, ..r }, &rid))).await {
        Ok(a) => a,
        Err(_) => Answer::failure(&internal(), request_id),
    }
}

/// A raw upload: the file itself is the body, streamed into staging and
/// never held whole; a far node streams it on to the write node as it
/// arrives.
async fn raw_upload(shared: &Arc<Shared>, req: Request<HyperBody>, op: &'static Operation, credentials: Credentials, idempotency_key: Option<String>, request_id: &str) -> Answer {
    if let Some(node) = write_node_for(shared, &req) {
        let head = Head::of(&req);
        let body = reqwest::Body::wrap_stream(http_body_util::BodyDataStream::new(req.into_body()));
        return node.send(&head, body, true, request_id, Some(op)).await.unwrap_or_else(|| Answer::failure(&crate::write_node::unreachable(), request_id));
    }
    crate::raw_upload::answer(shared, req, request_id, credentials, idempotency_key, DRAIN_EXTRA_BYTES).await
}

/// Which route beside the API answers the request whole, if one does.
fn whole(shared: &Shared, req: &Request<HyperBody>, side: Option<Side>, native: bool) -> Option<Whole> {
    if shared.app.sandbox_routes && side == Some(Side::Sandbox) {
        Some(Whole::Sandbox)
    } else if side == Some(Side::ProviderEvents) {
        // A provider's webhook: its headers carry the signature.
        let headers =
            req.headers().iter().filter(|(k, _)| !matches!(k.as_str(), "authorization" | "cookie")).filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string()))).collect();
        Some(Whole::ProviderEvents(headers))
    } else if native {
        Some(Whole::BenchNative)
    } else {
        None
    }
}

/// An API request, with its body read and an instance permit held.
/// Admission (route, key, tenancy, scopes, body) is host code only and
/// quick: it runs here. Component calls never run on a tokio worker: the
/// sync WASI bindings a guest prints through (a panic message, say) block
/// on a runtime of their own, which panics inside a worker.
async fn api(shared: &Arc<Shared>, work: Work, far: Option<((&WriteNode, Head), Bytes)>, op: Option<&'static Operation>, permit: SemaphorePermit<'_>, request_id: &str) -> Answer {
    let prepared = work.prepare(shared, request_id);
    let mut permit = Some(permit);
    let is_write = matches!(prepared, Prepared::Write(_));
    if let (true, Some(((node, head), body))) = (is_write, far) {
        // Admitted here (a bad request costs no round trip), run there: the
        // write node admits it again, rate limits included. No instance of
        // this node's pool is held meanwhile.
        drop(permit.take());
        if let Some(answer) = node.send(&head, reqwest::Body::from(body), false, request_id, op).await {
            // The write node counted a pull of main; a business of another
            // database reads its writes after a pull of that one.
            if let Prepared::Write(w) = &prepared {
                if w.home.name != switchboard_storage::databases::MAIN {
                    w.home.db.freshness().wrote();
                }
            }
            return answer;
        }
        permit = shared.permits.acquire().await.ok();
    }
    let _permit = permit;
    if let Prepared::Read(r) = &prepared {
        // Read your writes: what this node wrote at the primary (forwarded
        // or shipped) is pulled into its replica first.
        r.db().freshness().caught_up().await;
    }
    let rate_headers = match &prepared {
        Prepared::Done(_) => Ok(Vec::new()),
        Prepared::Read(r) => {
            tracing::Span::current().record("businessId", r.business_id());
            shared.limits.admit(r.key_id(), r.business_id())
        }
        Prepared::Write(w) => {
            tracing::Span::current().record("businessId", w.business_id());
            shared.limits.admit(w.key_id(), w.business_id())
        }
    };
    let rate_headers = match rate_headers {
        Ok(h) => h,
        Err(f) => return Answer::failure(&f, request_id),
    };
    let mut answer = run_prepared(shared, prepared, request_id).await;
    answer.headers.extend(rate_headers);
    answer
}

/// Where a far node sends a request it does not run itself: its write
/// node, unless the request came from a far node already.
fn write_node_for<'a>(shared: &'a Shared, req: &Request<HyperBody>) -> Option<&'a WriteNode> {
    shared.write_node.as_ref().filter(|_| !req.headers().contains_key(crate::write_node::FORWARDED))
}

fn internal() -> Failure {
    Failure::internal("the request failed inside the service")
}

fn shutting_down() -> Failure {
    Failure::new(503, "capacity", "shutting_down", "the server is shutting down")
}

/// Runs an admitted request: a read on the worker (or a reader thread), a
/// mutation on the writer thread.
async fn run_prepared(shared: &Arc<Shared>, prepared: Prepared, request_id: &str) -> Answer {
    match prepared {
        Prepared::Done(answer) => answer,
        // On the worker itself (`engine/reads.rs`), a panic answered as
        // the reader threads answer one; what reaches an import that calls
        // out is finished on a reader thread.
        Prepared::Read(read) if shared.app.reads_on_worker(&read) => match AssertUnwindSafe(shared.app.read_on_worker(read)).catch_unwind().await {
            Ok(OnWorker::Done(answer)) => answer,
            Ok(OnWorker::Blocking(begun)) => {
                let shared2 = shared.clone();
                let span = tracing::Span::current();
                match shared.readers.run(move || span.in_scope(|| shared2.app.finish_blocking(*begun))).await {
                    Some(a) => a,
                    None => Answer::failure(&internal(), request_id),
                }
            }
            Err(_) => Answer::failure(&internal(), request_id),
        },
        Prepared::Read(read) => {
            let shared2 = shared.clone();
            let span = tracing::Span::current();
            match shared.readers.run(move || span.in_scope(|| shared2.app.read(read))).await {
                Some(a) => a,
                None => Answer::failure(&internal(), request_id),
            }
        }
        Prepared::Write(write) => {
            // A target the service would call out to is judged here, before
            // the write: DNS may take seconds and must not hold the writer.
            if shared.app.components.public_only() {
                for url in write.outbound_targets() {
                    if let Err(refusal) = crate::outbound::check_target(&url).await {
                        return Answer::failure(&target_failure(refusal), request_id);
                    }
                }
            }
            // So is a large body's parse (the component's prepare step):
            // the database's bulk thread runs it, then the write
            // (`writer.rs`).
            let (reply, answer) = tokio::sync::oneshot::channel();
            if shared.writers.send(shared, (write, reply)).is_err() {
                return Answer::failure(&shutting_down(), request_id);
            }
            answer.await.unwrap_or_else(|_| Answer::failure(&internal(), request_id))
        }
    }
}

fn target_failure(refusal: crate::outbound::TargetRefusal) -> Failure {
    use crate::outbound::TargetRefusal;
    let (code, message) = match refusal {
        TargetRefusal::NotPublic => (
            "webhook_target_not_public",
            "callbackUrl must be a public address: this server refuses loopback, private, link-local, documentation and other special-purpose addresses and the name localhost, also when a name resolves to one (serve --webhook-allow-private accepts them, for local development)",
        ),
        TargetRefusal::Unresolvable => ("webhook_target_unresolvable", "callbackUrl's host does not resolve, so it cannot be checked to be a public address (serve --webhook-allow-private skips the check, for local development)"),
    };
    let mut failure = Failure::validation(code, message);
    failure.details = vec![switchboard_gateway::validate::Violation { field: "callbackUrl".into(), rule: "publicTarget", message: message.into() }];
    failure
}

/// A request with its body read, ready for the pipeline.
struct Work {
    method: String,
    path: String,
    query: Option<String>,
    authorization: Option<String>,
    session: Option<String>,
    csrf: Option<String>,
    idempotency_key: Option<String>,
    body: Vec<u8>,
}

/// A request that is not an API operation, served whole on a blocking thread.
enum Whole {
    Sandbox,
    BenchNative,
    /// A provider's webhook, with the request's headers.
    ProviderEvents(Vec<(String, String)>),
}

impl Work {
    /// The gateway's view of the request; `body` is moved out of `self` by
    /// the caller first.
    fn incoming(&self, body: Vec<u8>) -> Incoming<'_> {
        Incoming {
            method: &self.method,
            path: &self.path,
            query: self.query.as_deref(),
            authorization: self.authorization.as_deref(),
            session: self.session.as_deref(),
            csrf: self.csrf.as_deref(),
            idempotency_key: self.idempotency_key.as_deref(),
            body,
        }
    }

    /// An API request: admitted, and what runs it next.
    fn prepare(mut self, shared: &Shared, request_id: &str) -> Prepared {
        let body = std::mem::take(&mut self.body);
        shared.app.prepare(self.incoming(body), request_id)
    }

    /// A request that is not an API operation, whole: on a reader thread
    /// (the bench's native read takes the same path to a thread as a
    /// read), else on a blocking thread.
    async fn answer_whole(self, shared: &Arc<Shared>, whole: Whole, request_id: &str) -> Answer {
        let shared2 = shared.clone();
        let rid = request_id.to_string();
        let ran = if matches!(whole, Whole::BenchNative) {
            shared.readers.run(move || self.run_whole(whole, &shared2, &rid)).await
        } else {
            tokio::task::spawn_blocking(move || self.run_whole(whole, &shared2, &rid)).await.ok()
        };
        ran.unwrap_or_else(|| Answer::failure(&internal(), request_id))
    }

    fn run_whole(mut self, whole: Whole, shared: &Shared, request_id: &str) -> Answer {
        let body = std::mem::take(&mut self.body);
        let incoming = self.incoming(body);
        match whole {
            Whole::Sandbox => crate::sandbox::inbound(&shared.app, incoming.path, incoming.method, incoming.authorization, &incoming.body, request_id),
            Whole::BenchNative => crate::bench_native::handle(&shared.app, incoming, request_id),
            Whole::ProviderEvents(headers) if crate::carrier_events::business_of(incoming.path).is_some() => {
                crate::carrier_events::receive(&shared.app, incoming.path, incoming.method, incoming.query, headers, incoming.body, request_id)
            }
            Whole::ProviderEvents(headers) => crate::provider_events::receive(&shared.app, incoming.path, incoming.method, incoming.query, headers, incoming.body, request_id),
        }
    }
}

/// Reads the body up to `max` bytes. A larger body is read on (and
/// discarded) up to DRAIN_EXTRA_BYTES more, so the client, which is usually
/// still writing, receives the 413 instead of a broken pipe.
async fn read_body(mut body: HyperBody, max: usize) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| Failure::validation("body_read_failed", "the request body could not be read"))?;
        if let Ok(data) = frame.into_data() {
            seen += data.len();
            if seen > max + DRAIN_EXTRA_BYTES {
                break;
            }
            if seen <= max {
                buf.extend_from_slice(&data);
            }
        }
    }
    if seen > max {
        return Err(too_large(max));
    }
    Ok(buf)
}

fn too_large(max: usize) -> Failure {
    Failure::too_large(max)
}
