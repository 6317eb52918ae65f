//! The raw form of an upload (an operation with a `RawBody` variant, sent
//! with a Content-Type other than application/json): the body is never held
//! whole. In order:
//!
//! 1. admission (`Gateway::admit_raw`: authentication, tenancy, scopes,
//!    Idempotency-Key syntax, query metadata) before a byte is staged;
//! 2. the body's frames are hashed (SHA-256) and cut into chunks of exactly
//!    `staging::CHUNK_BYTES`, each written in its own short transaction
//!    (`staging::write`); memory holds one chunk plus one frame;
//! 3. the ordinary mutation path (`App::handle_staged`) runs with a body
//!    naming the staged upload; the component moves the chunks.
//!
//! Every way out that does not end in the component's move discards the
//! staged rows before answering; a future dropped mid-way (the connection
//! torn down) discards them from `Drop`; a crash leaves them to the sweep.

use crate::pipeline::Answer;
use crate::shared::Shared;
use crate::staging::{self, Staged, CHUNK_BYTES};
use http_body_util::BodyExt;
use hyper::body::Incoming as HyperBody;
use hyper::Request;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use switchboard_gateway::{Admitted, Failure, Incoming};

/// Stages one body; discards what it staged when dropped unarmed.
struct Stager {
    shared: Arc<Shared>,
    id: String,
    business: String,
    buf: Vec<u8>,
    hasher: Sha256,
    total: u64,
    seq: i64,
    /// Something may be staged under `id` that nobody else will remove.
    armed: bool,
}

impl Stager {
    fn new(shared: Arc<Shared>, business: String) -> Stager {
        Stager { shared, id: uuid::Uuid::now_v7().to_string(), business, buf: Vec::with_capacity(CHUNK_BYTES), hasher: Sha256::new(), total: 0, seq: 0, armed: false }
    }

    /// Hashes and buffers a frame, writing every full chunk.
    async fn push(&mut self, mut data: &[u8]) -> Result<(), Failure> {
        self.hasher.update(data);
        self.total += data.len() as u64;
        while !data.is_empty() {
            let take = (CHUNK_BYTES - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == CHUNK_BYTES {
                self.write(None).await?;
            }
        }
        Ok(())
    }

    /// Writes the last (short) chunk, if any, and marks the upload complete.
    async fn finish(&mut self) -> Result<Staged, Failure> {
        let sha = hex::encode(std::mem::take(&mut self.hasher).finalize());
        self.write(Some(sha.clone())).await?;
        Ok(Staged { id: self.id.clone(), size: self.total, sha256: sha })
    }

    /// Writes the buffered chunk (if any) on the staging thread, which copies
    /// it into the row and hands the buffer back: one buffer per upload, and
    /// the per-chunk allocations all happen on that one thread.
    async fn write(&mut self, complete: Option<String>) -> Result<(), Failure> {
        let buf = std::mem::take(&mut self.buf);
        let has_data = !buf.is_empty();
        let staged_bytes = self.seq as u64 * CHUNK_BYTES as u64 + buf.len() as u64;
        // A completion without a last chunk keeps the next seq: only seq 0
        // creates the upload's row.
        let seq = self.seq;
        self.armed = true;
        let (shared, id, biz) = (self.shared.clone(), self.id.clone(), self.business.clone());
        let done = self
            .shared
            .staging
            .run(move || {
                let data = has_data.then_some(buf.as_slice());
                let r = shared.app.db_for(&biz).and_then(|db| staging::write(&db, &id, &biz, seq, data, staged_bytes, complete.as_deref()));
                (r, buf)
            })
            .await;
        let Some((result, mut buf)) = done else {
            return Err(Failure::internal("the upload could not be stored; retry"));
        };
        buf.clear();
        self.buf = buf;
        if has_data {
            self.seq += 1;
        }
        result
    }

    /// Removes what was staged, and waits for it, so the answer that follows
    /// is only sent once nothing is left.
    async fn discard(&mut self) {
        if std::mem::take(&mut self.armed) {
            let (shared, id, biz) = (self.shared.clone(), self.id.clone(), self.business.clone());
            let _ = tokio::task::spawn_blocking(move || discard(&shared, &biz, &id)).await;
        }
    }
}

impl Drop for Stager {
    fn drop(&mut self) {
        if self.armed {
            let (shared, id, biz) = (self.shared.clone(), self.id.clone(), self.business.clone());
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn_blocking(move || discard(&shared, &biz, &id));
            }
        }
    }
}

/// Removes a staged upload from its business's database.
fn discard(shared: &Shared, business: &str, id: &str) {
    if let Ok(db) = shared.app.db_for(business) {
        staging::discard(&db, id);
    }
}

fn too_large(limit: usize) -> Failure {
    Failure::new(413, "validation", "payload_too_large", format!("the upload exceeds this server's limit of {limit} bytes for a raw upload body"))
}

/// Reads and drops up to `budget` more bytes, so a client still writing its
/// body receives the answer instead of a broken pipe.
async fn drain(body: &mut HyperBody, mut budget: usize) {
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            if data.len() >= budget {
                return;
            }
            budget -= data.len();
        }
    }
}

/// A form body (`curl -d @file` sends `application/x-www-form-urlencoded`,
/// `curl -F` sends `multipart/form-data`) is not the file: its bytes would
/// be ingested as data and could become an empty or mangled version. It is
/// refused with 415 naming what is accepted.
fn form_encoded(content_type: Option<&hyper::header::HeaderValue>) -> Option<Failure> {
    let media = content_type?.to_str().ok()?.split(';').next()?.trim().to_ascii_lowercase();
    if media == "application/x-www-form-urlencoded" || media.starts_with("multipart/") {
        return Some(Failure::new(
            415,
            "validation",
            "unsupported_media_type",
            format!(
                "a {media} body is a form, not the file: send the file itself as the body (curl --data-binary @FILE) with \
                 Content-Type text/csv, text/tab-separated-values, application/octet-stream or the XLSX/XLSM type, \
                 or use application/json for the base64 form"
            ),
        ));
    }
    None
}

/// Who a raw upload comes from: an API key, or a console session with its
/// CSRF token.
pub(crate) struct Credentials {
    pub authorization: Option<String>,
    pub session: Option<String>,
    pub csrf: Option<String>,
}

/// A raw upload end to end: admitted before anything is staged, its body
/// streamed into staging under the upload limit, then the ordinary
/// mutation over the staged file.
pub(crate) async fn answer(shared: &Arc<Shared>, req: Request<HyperBody>, request_id: &str, credentials: Credentials, idempotency_key: Option<String>, drain_extra: usize) -> Answer {
    let limit = shared.app.max_upload_bytes;
    // With `Expect: 100-continue` the client waits for a go-ahead that hyper
    // sends only when the body is first read: a refusal needs no draining.
    let expects_continue = req.headers().get("expect").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let declared = req.headers().get("content-length").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let (parts, mut body) = req.into_parts();
    let refuse = |f: Failure| Answer::failure(&f, request_id);
    let refuse_draining = |f: Failure, body: HyperBody| async move {
        let mut body = body;
        if !expects_continue {
            drain(&mut body, drain_extra).await;
        }
        refuse(f)
    };
    if declared.is_some_and(|n| n > (limit + drain_extra) as u64) {
        return refuse(too_large(limit));
    }

    // 1. Admission, before anything is staged.
    let admitted = match admit(shared, &parts, credentials, idempotency_key).await {
        Ok(a) => a,
        Err(f) => return refuse_draining(f, body).await,
    };
    let operation = admitted.op.id.as_str();
    tracing::Span::current().record("businessId", admitted.business_id.as_deref());
    let rate_headers = match shared.limits.admit(admitted.key_id.as_deref(), admitted.business_id.as_deref()) {
        Ok(h) => h,
        Err(f) => return refuse_draining(f, body).await,
    };
    let with_op = |mut a: Answer| {
        a.operation = operation;
        a.headers.extend(rate_headers.iter().cloned());
        a
    };
    if let Some(f) = form_encoded(parts.headers.get("content-type")) {
        return with_op(refuse_draining(f, body).await);
    }
    if declared.is_some_and(|n| n > limit as u64) {
        return with_op(refuse_draining(too_large(limit), body).await);
    }

    // 2. Stream the body into staging.
    let streaming = std::time::Instant::now();
    let mut stager = Stager::new(shared.clone(), admitted.business_id.clone().unwrap_or_default());
    let staged = match stage(&mut stager, &mut body, limit, drain_extra).await {
        Ok(staged) => staged,
        Err(f) => {
            stager.discard().await;
            return with_op(refuse(f));
        }
    };

    // The access log's duration minus this is the mutation (the move).
    tracing::info!(requestId = %request_id, bytes = staged.size, durationMs = streaming.elapsed().as_millis() as u64, "upload staged");

    // 3. The ordinary mutation; it discards whatever the component left.
    let Ok(_permit) = shared.permits.acquire().await else {
        stager.discard().await;
        return with_op(refuse(Failure::new(503, "capacity", "shutting_down", "the server is shutting down")));
    };
    let s = shared.clone();
    let rid = request_id.to_string();
    match tokio::task::spawn_blocking(move || s.app.handle_staged(admitted, &staged, &rid)).await {
        Ok(a) => {
            stager.armed = false;
            with_op(a)
        }
        Err(_) => {
            stager.discard().await;
            with_op(refuse(Failure::internal("the request failed inside the service; nothing was written")))
        }
    }
}

/// Admits the upload's request line and credentials (its body is not read
/// yet), on a blocking thread: the key lookup may read storage.
async fn admit(shared: &Arc<Shared>, parts: &hyper::http::request::Parts, credentials: Credentials, idempotency_key: Option<String>) -> Result<Admitted, Failure> {
    let s = shared.clone();
    let (method, path, query) = (parts.method.as_str().to_string(), parts.uri.path().to_string(), parts.uri.query().map(String::from));
    let admitted = tokio::task::spawn_blocking(move || {
        let incoming = Incoming {
            method: &method,
            path: &path,
            query: query.as_deref(),
            authorization: credentials.authorization.as_deref(),
            session: credentials.session.as_deref(),
            csrf: credentials.csrf.as_deref(),
            idempotency_key: idempotency_key.as_deref(),
            body: Vec::new(),
        };
        s.app.gateway.admit_raw(incoming, &s.app.keys())
    })
    .await;
    admitted.unwrap_or_else(|_| Err(Failure::internal("the request failed inside the service")))
}

/// Streams the body into `stager` up to `limit` bytes (a larger body is
/// refused, drained up to `drain_extra` bytes past the limit so the client
/// reads the refusal). On a refusal the caller discards what was staged.
async fn stage(stager: &mut Stager, body: &mut HyperBody, limit: usize, drain_extra: usize) -> Result<Staged, Failure> {
    while let Some(frame) = body.frame().await {
        // The client went away (or broke the framing) mid-body.
        let frame = frame.map_err(|_| Failure::validation("body_read_failed", "the request body could not be read to its end"))?;
        let Ok(data) = frame.into_data() else { continue };
        if stager.total + data.len() as u64 > limit as u64 {
            let already = (stager.total as usize + data.len()).saturating_sub(limit);
            if already < drain_extra {
                drain(body, drain_extra - already).await;
            }
            return Err(too_large(limit));
        }
        stager.push(&data).await?;
    }
    if stager.total == 0 {
        return Err(Failure::validation("empty_file", "the request body is empty; send the file's bytes as the body"));
    }
    stager.finish().await
}
