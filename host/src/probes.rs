//! What operators ask a node: liveness (`/healthz`), readiness
//! (`/readyz`: storage takes a write transaction) and the Prometheus
//! metrics (`/metrics`, on the public listener or on `--metrics-listen`).

use crate::pipeline::Answer;
use crate::shared::{full, to_response, Shared};
use hyper::body::Incoming as HyperBody;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use switchboard_gateway::Failure;
use tokio::net::TcpListener;

/// Liveness: the process answers. No key needed, nothing touched.
pub(crate) const HEALTHZ_PATH: &str = "/healthz";
/// Readiness: storage takes a write transaction within READY_WAIT
/// (migrations were applied and components compiled before the listener
/// opened). No key needed.
pub(crate) const READYZ_PATH: &str = "/readyz";
const READY_WAIT: Duration = Duration::from_secs(2);
/// Prometheus metrics (`metrics.rs`). No key needed.
pub(crate) const METRICS_PATH: &str = "/metrics";

/// `GET /metrics`: the Prometheus text, read on a blocking thread (the
/// queue gauges query storage).
pub(crate) async fn metrics_answer(shared: &Arc<Shared>) -> Answer {
    let s = shared.clone();
    let text = tokio::task::spawn_blocking(move || {
        crate::jobs::queue_gauges(s.app.dbs.all().iter().map(|(_, db)| &**db));
        crate::metrics::render()
    })
    .await
    .unwrap_or_default();
    Answer { status: 200, content_type: "text/plain; version=0.0.4", body: text, headers: Vec::new(), operation: "metrics", download: None }
}

/// The `--metrics-listen` listener: `GET /metrics` and nothing else.
pub(crate) async fn serve_metrics(shared: Arc<Shared>, listener: TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let shared = shared.clone();
        let svc = hyper::service::service_fn(move |req: Request<HyperBody>| {
            let shared = shared.clone();
            async move {
                let request_id = uuid::Uuid::new_v4().to_string();
                let answer = if req.method() == hyper::Method::GET && req.uri().path() == METRICS_PATH {
                    metrics_answer(&shared).await
                } else {
                    Answer::failure(&Failure::not_found("not_found", "this listener serves GET /metrics only"), &request_id)
                };
                let body = full(answer.body.clone().into_bytes());
                Ok::<_, std::convert::Infallible>(to_response(answer, body, &request_id))
            }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

/// Storage is ready when a write transaction can begin (the file is
/// writable, not locked by a stuck writer) and end.
pub(crate) fn storage_ready(db: &crate::db::Db) -> Result<(), String> {
    let Some(_gate) = db.write_gate(READY_WAIT) else {
        return Err(format!("storage: the write gate stayed busy for {} s", READY_WAIT.as_secs()));
    };
    // Its own connection with a short busy timeout: a lock held by another
    // process answers within READY_WAIT, not the pool's ten seconds.
    let conn = db.fresh_conn().map_err(|e| format!("storage: no connection: {e}"))?;
    conn.busy_timeout(READY_WAIT).map_err(|e| format!("storage: {e}"))?;
    crate::db::execute(&conn, "BEGIN IMMEDIATE", vec![]).map_err(|e| format!("storage: cannot begin a write: {e}"))?;
    crate::db::execute(&conn, "ROLLBACK", vec![]).map_err(|e| format!("storage: cannot end a write: {e}"))?;
    Ok(())
}

/// The answer of a health probe: `200 {status: "ok"}` in the success
/// envelope, or `503 not_ready` naming what failed.
pub(crate) fn probe(result: Result<(), String>, operation: &'static str, request_id: &str) -> Answer {
    match result {
        Ok(()) => Answer {
            status: 200,
            content_type: "application/json",
            body: switchboard_gateway::errors::success_envelope(r#"{"status":"ok"}"#, request_id),
            headers: Vec::new(),
            operation,
            download: None,
        },
        Err(reason) => Answer { operation, ..Answer::failure(&Failure::new(503, "capacity", "not_ready", reason).retryable(true), request_id) },
    }
}
