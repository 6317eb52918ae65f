//! HTTP: hyper accepts, each request is routed and answered
//! (`answer.rs`), the node's background loops run beside it as one
//! supervised set (`supervisor.rs`, `background.rs`), and a stop lets
//! in-flight requests finish, then ends and joins every loop.

use crate::pipeline::App;
use crate::probes::serve_metrics;
use crate::shared::{full, to_response, ResBody, Shared};
use crate::side_routes::{side_route, Side};
use crate::supervisor::Supervisor;
use http_body_util::BodyExt;
use hyper::body::Incoming as HyperBody;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing::Instrument;

/// Prefix of the native baseline route served with `--bench-baseline`.
pub const BENCH_NATIVE_PREFIX: &str = "/_bench/native";

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
    let write_node = write_node.map(|url| crate::write_node::WriteNode::new(&url, app.dbs.main().freshness(), app.deadline)).transpose()?;
    let listener = TcpListener::bind(addr).await.map_err(|e| anyhow::anyhow!("--listen {addr}: {e}"))?;
    tracing::info!(url = %format!("http://{}", listener.local_addr()?), "listening on");
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
    let loops = Arc::new(Supervisor::new());
    crate::background::spawn_maintenance(shared.clone(), &loops, upload_sweep_after, webhook_log_retention);
    // Each database's own loops (its pulls, its checkpoints and, unless a
    // far node leaves background work to the nodes beside the primary, its
    // job runner), for the databases open now and those opened later.
    crate::background::DatabaseLoops::new(shared.clone(), loops.clone(), runner, shutdown_timeout).watch();
    crate::background::spawn_usage_flush(shared.clone(), &loops);
    if let Some(listener) = metrics_listener {
        tracing::info!(url = %format!("http://{}/metrics", listener.local_addr()?), "metrics on");
        let metrics = shared.clone();
        loops.spawn("metrics", |mut stop| async move {
            tokio::select! {
                _ = serve_metrics(metrics, listener) => {}
                _ = stop.wait() => {}
            }
        });
    }
    crate::background::spawn_plugin_reloads(shared.clone(), &loops);
    let graceful = accept_until_stopped(&shared, listener).await;
    tracing::info!("shutting down: finishing in-flight requests");
    if tokio::time::timeout(shutdown_timeout, graceful.shutdown()).await.is_err() {
        tracing::warn!(shutdownTimeoutMs = shutdown_timeout.as_millis() as u64, "in-flight requests did not finish within the shutdown limit");
    }
    // Every loop ends; the job runners finish their current steps
    // (committed or rolled back whole).
    loops.stop().await;
    let last = shared.clone();
    let _ = tokio::task::spawn_blocking(move || {
        for (_, db) in last.app.dbs.all() {
            db.checkpoint(true);
        }
    })
    .await;
    tracing::info!("stopped");
    Ok(())
}

/// Serves every connection `listener` accepts until SIGTERM or Ctrl-C;
/// the connections still open are then the returned set's to finish.
async fn accept_until_stopped(shared: &Arc<Shared>, listener: TcpListener) -> GracefulShutdown {
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
    graceful
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
    let routed = op.map(|o| o.id.as_str());
    let span = match routed {
        Some(id) => tracing::info_span!("request", requestId = %request_id, operation = id, businessId = tracing::field::Empty),
        None => tracing::info_span!("request", requestId = %request_id, operation = tracing::field::Empty, businessId = tracing::field::Empty),
    };
    let mut answer = crate::answer::answer(&shared, req, side, op, peer, &request_id).instrument(span.clone()).await;
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
