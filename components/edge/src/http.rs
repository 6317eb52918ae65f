//! `wasi:http` in and out: the request's head and bounded body, the answer
//! (with `x-request-id` and `cache-control: no-store`, as a node sends it),
//! and a download streamed piece by piece.

use crate::bindings::switchboard::platform::transaction;
use crate::head::Head;
use crate::{fault, forward, Answer};
use switchboard_gateway::exchange::Reply;
use switchboard_gateway::Failure;
use wasip2::http::types::{Fields, IncomingBody, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam};
use wasip2::io::streams::{OutputStream, StreamError};

/// A header's value as text; `Err` when it is not visible ASCII/UTF-8.
fn header(fields: &Fields, name: &str) -> Option<Result<String, ()>> {
    fields.get(name).into_iter().next().map(|v| String::from_utf8(v).map_err(|_| ()))
}

pub fn handle(request: IncomingRequest, out: ResponseOutparam) {
    let request_id = uuid::Uuid::new_v4().to_string();
    fault::guard(out, &request_id);
    let started = std::time::Instant::now();
    let deadline = wasip2::clocks::monotonic_clock::now().saturating_add(crate::settings().deadline_ns);
    transaction::set_deadline(deadline);
    let (answer, forwarded) = answer(&request, &request_id, deadline);
    let status = match answer {
        Answer::Whole(reply) => {
            let status = reply.status;
            send(reply, &request_id);
            status
        }
        Answer::Forwarded(status) => status,
        Answer::Download { status, first, rest } => {
            download(status, first, rest, &request_id);
            status
        }
    };
    let answered_ms = started.elapsed().as_secs_f64() * 1000.0;
    let trips = transaction::round_trips();
    crate::after_answer();
    // The access log: no path (it holds ids), no tenant data. One write
    // per line: `eprintln!` writes each piece on its own, and the runtime's
    // concurrent instances share one stderr, so their pieces interleave.
    // Round trips: to the primary until the answer was sent, to the write
    // node (0 or 1), and to the primary after the answer (a read's end).
    let line = format!(
        "level=info msg=request requestId={request_id} status={status} ms={answered_ms:.2} primaryRoundTrips={trips} nodeRoundTrips={} afterAnswerRoundTrips={}\n",
        u8::from(forwarded),
        transaction::round_trips() - trips
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
}

/// The answer, and whether it came from the write node.
fn answer(request: &IncomingRequest, request_id: &str, deadline: u64) -> (Answer, bool) {
    let method = match request.method() {
        Method::Get => "GET".to_string(),
        Method::Head => "HEAD".to_string(),
        Method::Post => "POST".to_string(),
        Method::Put => "PUT".to_string(),
        Method::Delete => "DELETE".to_string(),
        Method::Connect => "CONNECT".to_string(),
        Method::Options => "OPTIONS".to_string(),
        Method::Trace => "TRACE".to_string(),
        Method::Patch => "PATCH".to_string(),
        Method::Other(m) => m,
    };
    let target = request.path_with_query().unwrap_or_else(|| "/".into());
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (target, None),
    };
    let headers = request.headers();
    let authorization = match header(&headers, "authorization") {
        Some(Err(())) => return (Answer::Whole(Reply::failure(&Failure::authentication("the Authorization header is not valid text"), request_id)), false),
        other => other.and_then(Result::ok),
    };
    let idempotency_key = match header(&headers, "idempotency-key") {
        Some(Err(())) => {
            return (Answer::Whole(Reply::failure(&Failure::validation("invalid_idempotency_key", "Idempotency-Key may contain only visible ASCII characters (0x21 to 0x7E)"), request_id)), false)
        }
        other => other.and_then(Result::ok),
    };
    let content_type = header(&headers, "content-type").map(|v| v.unwrap_or_else(|_| "?".into()));
    let content_length = header(&headers, "content-length").and_then(Result::ok).and_then(|v| v.trim().parse().ok());
    drop(headers);
    if let Some(reply) = fault::test_route(&method, &path, request_id) {
        return (Answer::Whole(reply), false);
    }
    let head = Head { method, path, query, authorization, idempotency_key, content_type, content_length };
    if let Some(node) = &crate::settings().write_node {
        if crate::for_the_node(&head.method, &head.path) {
            let node = match node {
                Ok(n) => n,
                Err(why) => {
                    crate::log_event("error", "the write node setting is not valid", &[("requestId", &request_id), ("error", why)]);
                    let f = Failure::new(500, "configuration", "write_node_misconfigured", "this edge node's write node setting is not valid").retryable(false);
                    return (Answer::Whole(Reply::failure(&f, request_id)), false);
                }
            };
            return match forward::forward(node, request, &head, request_id, deadline) {
                forward::Forwarded::Answered(status) => (Answer::Forwarded(status), true),
                forward::Forwarded::Failed(f) => (Answer::Whole(Reply::failure(&f, request_id)), true),
            };
        }
    }
    (crate::serve(head, |max| read_body(request, max), request_id), false)
}

/// How much of a body over its limit is still read (and dropped) before
/// the 413, so that the client, still sending, reads the answer instead of
/// a reset connection. Larger bodies are cut off at once.
pub const DRAIN_EXTRA_BYTES: usize = 32 << 20;

fn read_body(request: &IncomingRequest, max: usize) -> Result<Vec<u8>, Failure> {
    let unreadable = || Failure::validation("unreadable_body", "the request body could not be read");
    let body = request.consume().map_err(|_| unreadable())?;
    let mut bytes = Vec::new();
    let mut total = 0usize;
    {
        let stream = body.stream().map_err(|_| unreadable())?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => {
                    total += chunk.len();
                    if total <= max {
                        bytes.extend_from_slice(&chunk);
                    } else if total > max + DRAIN_EXTRA_BYTES {
                        return Err(Failure::too_large(max));
                    }
                }
                Err(StreamError::Closed) => break,
                Err(_) => return Err(unreadable()),
            }
        }
    }
    let _ = IncomingBody::finish(body);
    if total > max {
        return Err(Failure::too_large(max));
    }
    Ok(bytes)
}

fn head_fields(content_type: &str, request_id: &str, extra: &[(&str, String)]) -> Fields {
    let fields = Fields::new();
    let _ = fields.append("content-type", content_type.as_bytes());
    let _ = fields.append("x-request-id", request_id.as_bytes());
    let _ = fields.append("cache-control", b"no-store");
    for (name, value) in extra {
        let _ = fields.append(&name.to_ascii_lowercase(), value.as_bytes());
    }
    fields
}

/// Starts the answer: status and head now, the body stream to write.
fn start(status: u16, fields: Fields) -> Option<(OutgoingBody, OutputStream)> {
    let out = fault::take_outparam()?;
    let response = OutgoingResponse::new(fields);
    let _ = response.set_status_code(status);
    let body = response.body().ok()?;
    ResponseOutparam::set(out, Ok(response));
    let stream = body.write().ok()?;
    Some((body, stream))
}

fn write_all(stream: &OutputStream, bytes: &[u8]) -> bool {
    bytes.chunks(4096).all(|chunk| stream.blocking_write_and_flush(chunk).is_ok())
}

pub fn send(reply: Reply, request_id: &str) {
    let fields = head_fields(reply.content_type, request_id, &reply.headers);
    let Some((body, stream)) = start(reply.status, fields) else { return };
    let written = write_all(&stream, reply.body.as_bytes());
    drop(stream);
    if written {
        let _ = OutgoingBody::finish(body, None);
    }
}

/// A raw answer: the first piece, then each next piece pulled from the
/// area on the read's snapshot. A piece that fails ends the body without
/// finishing it, so the client sees a broken transfer, never a short file.
fn download(status: u16, first: switchboard_guest::bindings::switchboard::platform::types::BodyPiece, mut rest: Option<(switchboard_guest::Request, crate::Handle)>, request_id: &str) {
    let mut extra = Vec::new();
    if let Some(cd) = &first.content_disposition {
        extra.push(("content-disposition", cd.clone()));
    }
    let Some((body, stream)) = start(status, head_fields(&first.content_type, request_id, &extra)) else { return };
    let mut ok = write_all(&stream, &first.bytes);
    while ok {
        let Some((req, handle)) = rest.take() else { break };
        let cursor = req.stream_cursor.clone();
        match handle(req.clone()) {
            Ok(switchboard_guest::Success { status, body: Some(piece), .. }) if (200..300).contains(&status) && piece.next_cursor != cursor => {
                ok = write_all(&stream, &piece.bytes);
                rest = piece.next_cursor.map(|c| (switchboard_guest::Request { stream_cursor: Some(c), ..req }, handle));
            }
            _ => {
                crate::log_event("error", "a download's next piece failed; the transfer is cut", &[("requestId", &request_id)]);
                ok = false;
            }
        }
    }
    drop(stream);
    if ok {
        let _ = OutgoingBody::finish(body, None);
    }
}
