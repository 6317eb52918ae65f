//! HTTP: hyper accepts, the body is read under the size limit, the pipeline
//! runs on a blocking thread, and shutdown lets in-flight requests finish.

use crate::pipeline::{Answer, App, Prepared};
use crate::probes::{metrics_answer, probe, serve_metrics, storage_ready};
use crate::shared::{full, to_response, ResBody, Shared};
use crate::side_routes::{side_route, Side};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming as HyperBody;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchboard_gateway::{Failure, Incoming};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing::Instrument;

/// Oversized bodies up to this much beyond their limit are drained before
/// the 413 is sent.
const DRAIN_EXTRA_BYTES: usize = 32 << 20;
/// Prefix of the native baseline route served with `--bench-baseline`.
pub const BENCH_NATIVE_PREFIX: &str = "/_bench/native";

/// How often the maintenance loop runs (the staged-upload sweep); the
/// idempotency purge, the pushed statuses' purge and the finished jobs'
/// purge run every 12th round (hourly).
const MAINTENANCE_EVERY: Duration = Duration::from_secs(300);

/// How `serve` runs, from the command line.
pub struct Settings {
    pub addr: SocketAddr,
    /// Staged uploads idle this long are removed.
    pub upload_sweep_after: Duration,
    /// How long a stop waits for requests in flight, then for job steps
    /// still calling out.
    pub shutdown_timeout: Duration,
    pub runner: crate::jobs::RunnerConfig,
    pub limits: crate::limits::Settings,
    /// Where `/metrics` is served instead of the public listener.
    pub metrics_listen: Option<SocketAddr>,
    /// `--write-node`: forward mutations to this node beside the primary
    /// (and leave background jobs to the nodes there).
    pub write_node: Option<String>,
    /// Console cookies are `Secure` (the public URL is https).
    pub secure_cookies: bool,
    /// How long the webhook delivery log is kept (`--webhook-log-retention-days`).
    pub webhook_log_retention: Duration,
}

pub async fn serve(app: App, settings: Settings) -> anyhow::Result<()> {
    let Settings { addr, upload_sweep_after, shutdown_timeout, runner, limits, metrics_listen, write_node, secure_cookies, webhook_log_retention } = settings;
    let write_node = write_node.map(|url| crate::write_node::WriteNode::new(&url, app.dbs.main().freshness())).transpose()?;
    let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("--listen {addr}: {e}"))?;
    let local = listener.local_addr()?;
    crate::logging::line("info", &format!("listening on http://{local}"));
    let metrics_listener = match metrics_listen {
        Some(at) => Some(TcpListener::bind(at).await.map_err(|e| anyhow::anyhow!("--metrics-listen {at}: {e}"))?),
        None => None,
    };
    let shared = Arc::new(Shared {
        metrics_on_public: metrics_listener.is_none(),
        app,
        permits: Semaphore::new(crate::engine::MAX_INSTANCES as usize),
        staging: crate::staging::Writer::start(),
        writers: crate::writer::Writers::default(),
        // Enough that a slow read rarely sends others to the blocking pool,
        // few enough that each stays warm.
        readers: crate::readers::Readers::start(std::thread::available_parallelism().map_or(2, |n| n.get()).max(2) * 2)?,
        limits: crate::limits::Limits::new(limits),
        write_node,
        console: crate::console::Console::new(secure_cookies),
    });
    let janitor = shared.clone();
    tokio::spawn(async move {
        for round in 0u64.. {
            let j = janitor.clone();
            let _ = tokio::task::spawn_blocking(move || {
                for (_, db) in j.app.dbs.all() {
                    if round % 12 == 0 {
                        crate::pipeline::purge_expired_idempotency(&db);
                        crate::plugins::pushed::purge(&db);
                        crate::jobs::purge_finished(&db, crate::clock::now_ms());
                        crate::jobs::purge_webhook_log(&db, crate::clock::now_ms(), webhook_log_retention);
                    }
                    crate::staging::sweep(&db, upload_sweep_after);
                }
                j.limits.forget_idle();
                j.console.forget_idle();
            })
            .await;
            tokio::time::sleep(MAINTENANCE_EVERY).await;
        }
    });

    let stop_jobs = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Each database's own loops (its pulls, its checkpoints and, unless a
    // far node leaves background work to the nodes beside the primary, its
    // job runner), for the databases open now and those opened later.
    let databases = crate::background::DatabaseLoops::new(shared.clone(), stop_jobs.clone(), runner, shutdown_timeout);
    databases.watch();
    let recorder = shared.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(crate::usage::FLUSH_EVERY).await;
            let r = recorder.clone();
            let _ = tokio::task::spawn_blocking(move || crate::usage::flush(r.app.dbs.main())).await;
        }
    });

    if let Some(listener) = metrics_listener {
        crate::logging::line("info", &format!("metrics on http://{}/metrics", listener.local_addr()?));
        tokio::spawn(serve_metrics(shared.clone(), listener));
    }

    crate::background::spawn_plugin_reloads(shared.clone());
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown_signal());
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let svc = hyper::service::service_fn(move |req| handle(shared.clone(), req, peer.ip()));
                let conn = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(crate::wire::EnvelopeIo::new(stream)), svc);
                let watched = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = watched.await;
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    crate::logging::line("info", "shutting down: finishing in-flight requests");
    if tokio::time::timeout(shutdown_timeout, graceful.shutdown()).await.is_err() {
        crate::logging::line("warn", &format!("in-flight requests did not finish within {} ms", shutdown_timeout.as_millis()));
    }
    // The runners finish their current steps (committed or rolled back whole).
    stop_jobs.store(true, std::sync::atomic::Ordering::SeqCst);
    databases.join_runners().await;
    let last = shared.clone();
    let _ = tokio::task::spawn_blocking(move || {
        for (_, db) in last.app.dbs.all() {
            db.checkpoint(true);
        }
    })
    .await;
    crate::logging::line("info", "stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// The operation a request path names, routed once per request (for the
/// access log and the body limit; the gateway routes again when it admits,
/// with the path parameters). The bench baseline's path names the API
/// operation it mirrors.
fn operation_of(shared: &Shared, method: &str, path: &str) -> Option<&'static switchboard_gateway::Operation> {
    use switchboard_gateway::operations::{route, RouteMatch};
    let found = match path.strip_prefix(BENCH_NATIVE_PREFIX) {
        Some(rest) if shared.app.bench_baseline => route(method, &format!("/api/v1{rest}")),
        _ => route(method, path),
    };
    match found {
        RouteMatch::Found(op, _) => Some(op),
        // A known path with another method: its template is the most literal
        // one that fits, which the router does not name.
        RouteMatch::MethodNotAllowed(_) | RouteMatch::NotFound => None,
    }
}

/// The path as the access log records it: the operation's template
/// (`/api/v1/contacts/{contactId}`), never the raw path, which can carry a
/// mobile number or other personal data; `-` for a path that is no route
/// of ours.
fn logged_path(shared: &Shared, path: &str, side: Option<Side>, op: Option<&switchboard_gateway::Operation>) -> String {
    match side {
        Some(Side::OpenApi | Side::Healthz | Side::Readyz | Side::Metrics) => return path.to_string(),
        Some(Side::Sandbox) if shared.app.sandbox_routes => return path.to_string(),
        Some(Side::ProviderEvents) if crate::carrier_events::business_of(path).is_some() => return crate::carrier_events::template(path).to_string(),
        Some(Side::ProviderEvents) => return crate::provider_events::TEMPLATE.to_string(),
        _ => {}
    }
    if op.is_none() && crate::console::serves(path) {
        return crate::console::logged_path(path).to_string();
    }
    match op {
        Some(op) if shared.app.bench_baseline && side == Some(Side::BenchNative) => format!("{BENCH_NATIVE_PREFIX}{}", &op.path["/api/v1".len()..]),
        Some(op) => op.path.to_string(),
        None => "-".to_string(),
    }
}

async fn handle(shared: Arc<Shared>, req: Request<HyperBody>, peer: std::net::IpAddr) -> Result<Response<ResBody>, std::convert::Infallible> {
    let started = Instant::now();
    let request_id = crate::write_node::forwarded_request_id(&req).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let method = req.method().as_str().to_string();
    // The side routes' table is read once per request.
    let side = side_route(req.uri().path());
    if side == Some(Side::Recording) {
        // Signed recording links: checked and streamed on their own (the
        // access log names no call).
        let response = crate::recordings::respond(shared.clone(), req, &request_id).await;
        crate::metrics::request("getRecording", response.status().as_u16(), started);
        crate::logging::request(&request_id, &method, "/recordings/{callId}/{fileName}", "getRecording", response.status().as_u16(), started.elapsed().as_micros());
        return Ok(response);
    }
    let op = operation_of(&shared, &method, req.uri().path());
    let path = logged_path(&shared, req.uri().path(), side, op);
    // One span per request: its events (the access line, a component's
    // log lines) carry these fields; the business is recorded once known.
    // The operation is named at creation when the route is known: each
    // `record` re-renders the span's fields.
    let routed = op.map(|o| o.id);
    let span = match routed {
        Some(id) => tracing::info_span!("request", requestId = %request_id, operation = id, businessId = tracing::field::Empty),
        None => tracing::info_span!("request", requestId = %request_id, operation = tracing::field::Empty, businessId = tracing::field::Empty),
    };
    let mut answer = answer(&shared, req, side, op, peer, &request_id).instrument(span.clone()).await;
    // A failure before the operation ran (admission's 400, 401, 403, 413)
    // counts under the operation its method and path name, as its success would.
    if let (Some(id), "-") = (routed, answer.operation) {
        answer.operation = id;
    }
    if routed != Some(answer.operation) {
        span.record("operation", answer.operation);
    }
    let _in_request = span.enter();
    crate::metrics::request(answer.operation, answer.status, started);
    // A body whole, or the first piece of a download (of which the rest may
    // follow as a stream).
    let (whole, rest) = match answer.download.as_mut() {
        Some(d) => (std::mem::take(&mut d.first), d.rest.take()),
        None => (std::mem::take(&mut answer.body).into_bytes(), None),
    };
    let body = match rest {
        // The access line is written when the stream ends.
        Some(rest) => {
            let line = crate::download::AccessLine { request_id: request_id.clone(), method, path, operation: answer.operation, status: answer.status, started };
            crate::download::stream(shared.clone(), whole, rest, line).boxed()
        }
        None => {
            crate::logging::request(&request_id, &method, &path, answer.operation, answer.status, started.elapsed().as_micros());
            full(whole)
        }
    };
    Ok(to_response(answer, body, &request_id))
}

/// Where a far node sends a request it does not run itself: its write
/// node, unless the request came from a far node already.
fn write_node_for<'a>(shared: &'a Shared, req: &Request<HyperBody>) -> Option<&'a crate::write_node::WriteNode> {
    shared.write_node.as_ref().filter(|_| !req.headers().contains_key(crate::write_node::FORWARDED))
}

/// `side` and `op`: what the side routes' table and `operation_of` found
/// for the request's path.
async fn answer(shared: &Arc<Shared>, req: Request<HyperBody>, side: Option<Side>, op: Option<&'static switchboard_gateway::Operation>, peer: std::net::IpAddr, request_id: &str) -> Answer {
    if req.method() == hyper::Method::GET {
        match side {
            Some(Side::OpenApi) => {
                return Answer { status: 200, content_type: "application/json", body: shared.app.gateway.document_text().to_string(), headers: Vec::new(), operation: "openapi", download: None }
            }
            Some(Side::Metrics) if shared.metrics_on_public => return metrics_answer(shared).await,
            Some(Side::Healthz) => return probe(Ok(()), "healthz", request_id),
            Some(Side::Readyz) => {
                let s = shared.clone();
                let ready = tokio::task::spawn_blocking(move || storage_ready(s.app.dbs.main())).await.unwrap_or_else(|_| Err("the readiness check failed".into()));
                return probe(ready, "readyz", request_id);
            }
            _ => {}
        }
    }
    // Load shedding: a bounded number of API requests in the service.
    let _slot = match shared.limits.enter() {
        Ok(slot) => slot,
        Err(f) => return Answer::failure(&f, request_id),
    };
    let header = |name: &str| req.headers().get(name).map(|v| v.to_str().map(String::from));
    let authorization = match header("authorization") {
        Some(Err(_)) => return Answer::failure(&Failure::authentication("the Authorization header is not valid text"), request_id),
        other => other.and_then(Result::ok),
    };
    // A console session: its cookie, and the CSRF token its page echoes
    // (an API key wins, so with one the cookie is not read).
    let session = match authorization {
        Some(_) => None,
        None => req.headers().get_all("cookie").iter().filter_map(|v| v.to_str().ok()).find_map(crate::console::sessions::from_cookie_header).map(String::from),
    };
    let csrf = header("x-csrf-token").and_then(Result::ok);
    if op.is_none() && crate::console::serves(req.uri().path()) {
        let r = crate::console::ConsoleRequest {
            method: req.method().as_str().to_string(),
            path: req.uri().path().to_string(),
            authorization: authorization.is_some(),
            session,
            csrf,
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
        return match tokio::task::spawn_blocking(move || span.in_scope(|| crate::console::respond(&s.app, &s.console, crate::console::ConsoleRequest { body, ..r }, &rid))).await {
            Ok(a) => a,
            Err(_) => Answer::failure(&Failure::internal("the request failed inside the service"), request_id),
        };
    }
    let idempotency_key = match header("idempotency-key") {
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
                // The file itself is the body: streamed into staging, never held whole.
                if let Some(node) = write_node_for(shared, &req) {
                    // A far node streams it on to the write node as it arrives.
                    let head = crate::write_node::Head::of(&req);
                    let body = reqwest::Body::wrap_stream(http_body_util::BodyDataStream::new(req.into_body()));
                    return node.send(&head, body, true, request_id, Some(op)).await.unwrap_or_else(|| Answer::failure(&crate::write_node::unreachable(), request_id));
                }
                let credentials = crate::raw_upload::Credentials { authorization, session, csrf };
                return crate::raw_upload::answer(shared, req, request_id, credentials, idempotency_key, DRAIN_EXTRA_BYTES).await;
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
    let method = req.method().as_str().to_string();
    let mut path = req.uri().path().to_string();
    let query = req.uri().query().map(String::from);
    let whole = if shared.app.sandbox_routes && side == Some(Side::Sandbox) {
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
    };
    if native {
        path = format!("/api/v1{}", &path[BENCH_NATIVE_PREFIX.len()..]);
    }
    let max_body = if matches!(whole, Some(Whole::ProviderEvents(_))) { crate::provider_events::MAX_BODY_BYTES } else { max_body };
    // A far node: what may write is forwarded (API mutations, sandbox
    // routes, provider webhooks); its head is kept for that.
    let far = write_node_for(shared, &req).map(|node| (node, crate::write_node::Head::of(&req)));
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
        return Answer::failure(&Failure::new(503, "capacity", "shutting_down", "the server is shutting down"), request_id);
    };
    let mut permit = Some(permit);
    // Kept for a forward only when the request turns out to be a mutation.
    let forward_body = far.as_ref().map(|_| Bytes::from(body.clone()));
    let work = Work { method, path, query, authorization, session, csrf, idempotency_key, body };
    if let Some(whole) = whole {
        let shared2 = shared.clone();
        let rid = request_id.to_string();
        // The bench's native read takes the same path to a thread as a read.
        let ran = if matches!(whole, Whole::BenchNative) {
            shared.readers.run(move || work.run_whole(whole, &shared2, &rid)).await
        } else {
            tokio::task::spawn_blocking(move || work.run_whole(whole, &shared2, &rid)).await.ok()
        };
        return ran.unwrap_or_else(|| Answer::failure(&Failure::internal("the request failed inside the service"), request_id));
    }
    // Admission (route, key, tenancy, scopes, body) is host code only and
    // quick: it runs here. Component calls never run on a tokio worker: the
    // sync WASI bindings a guest prints through (a panic message, say)
    // block on a runtime of their own, which panics inside a worker.
    let prepared = work.prepare(shared, request_id);
    let is_write = matches!(prepared, Prepared::Write(_));
    if let (true, Some((node, head)), Some(body)) = (is_write, &far, forward_body) {
        // Admitted here (a bad request costs no round trip), run there: the
        // write node admits it again, rate limits included. No instance of
        // this node's pool is held meanwhile.
        drop(permit.take());
        let forwarded = node.send(head, reqwest::Body::from(body), false, request_id, op).await;
        if let Some(answer) = forwarded {
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

/// Runs an admitted request: a read on a reader thread, a mutation on
/// the writer thread.
async fn run_prepared(shared: &Arc<Shared>, prepared: Prepared, request_id: &str) -> Answer {
    match prepared {
        Prepared::Done(answer) => answer,
        Prepared::Read(read) => {
            let shared2 = shared.clone();
            let span = tracing::Span::current();
            match shared.readers.run(move || span.in_scope(|| shared2.app.read(read))).await {
                Some(a) => a,
                None => Answer::failure(&Failure::internal("the request failed inside the service"), request_id),
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
                return Answer::failure(&Failure::new(503, "capacity", "shutting_down", "the server is shutting down"), request_id);
            }
            answer.await.unwrap_or_else(|_| Answer::failure(&Failure::internal("the request failed inside the service"), request_id))
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

    /// A request that is not an API operation, whole, on a blocking thread.
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
