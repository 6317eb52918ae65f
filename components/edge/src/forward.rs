//! Requests the edge does not run itself, sent whole to a write node
//! (`SWITCHBOARD_WRITE_NODE`: an ordinary `switchboard serve --primary-url`
//! node beside the primary) over `wasi:http/outgoing-handler`, and its
//! answer streamed back: every mutation (sends, media, calls, batches, raw
//! uploads, and the writes the edge could run at the primary itself, which
//! there cost a round trip of the far link per statement), the reads of
//! areas this build does not link (messaging, voice), `/metrics`, sandbox
//! routes, provider webhooks and signed recording links, and, unless `SWITCHBOARD_EDGE_READS=primary`,
//! every other authenticated read.
//!
//! The write node admits the request fully itself (key, tenancy, scopes,
//! validation, idempotency): the edge adds no trust and checks nothing
//! first, so a write costs one round trip of the link. It marks the
//! request as forwarded (`switchboard-forwarded`, the header a far native
//! node sends), so the write node never forwards it again and logs it
//! under the edge's `X-Request-Id`.
//!
//! Bodies stream both ways (a 64 MiB raw upload is never held here); no
//! wait goes past the request's deadline (`SWITCHBOARD_EDGE_DEADLINE_MS`).

use crate::head::Head;
use crate::settings::Node;
use switchboard_gateway::Failure;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, FutureIncomingResponse, IncomingBody, IncomingRequest, IncomingResponse, Method, OutgoingBody, OutgoingRequest, OutgoingResponse, RequestOptions, ResponseOutparam,
};
use wasip2::io::streams::{InputStream, OutputStream, StreamError};

use switchboard_gateway::write_node::{lost, too_late, unreachable, FORWARDED};

/// Request headers that reach the write node; the rest are the client's
/// connection's or nothing the API reads.
const REQUEST_HEADERS: [&str; 6] = ["authorization", "idempotency-key", "content-type", "content-length", "accept", "range"];

/// Content headers of the write node's answer handed to the client
/// besides the API's own (the gateway's `write_node::ANSWER_HEADERS`);
/// never hop-by-hop ones: the runtime frames the answer itself.
const CONTENT_HEADERS: [&str; 8] = ["content-type", "content-length", "content-range", "accept-ranges", "content-disposition", "cache-control", "x-request-id", "etag"];

/// Nanoseconds to connect to the write node.
const CONNECT_TIMEOUT_NS: u64 = 3_000_000_000;

/// What a forward came to.
pub enum Forwarded {
    /// The write node's answer was streamed to the client with this status.
    Answered(u16),
    /// No answer of the write node: the caller answers this failure.
    Failed(Failure),
}

fn connect_failed(e: &ErrorCode) -> bool {
    matches!(
        e,
        ErrorCode::DnsTimeout
            | ErrorCode::DnsError(_)
            | ErrorCode::DestinationNotFound
            | ErrorCode::DestinationUnavailable
            | ErrorCode::DestinationIpProhibited
            | ErrorCode::DestinationIpUnroutable
            | ErrorCode::ConnectionRefused
            | ErrorCode::ConnectionTimeout
            | ErrorCode::TlsProtocolError
            | ErrorCode::TlsCertificateError
            | ErrorCode::TlsAlertReceived(_)
    )
}

fn timed_out(e: &ErrorCode) -> bool {
    matches!(e, ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout | ErrorCode::ConnectionWriteTimeout)
}

/// Nanoseconds left before `deadline` (a monotonic instant), at least 1.
fn left(deadline: u64) -> u64 {
    deadline.saturating_sub(wasip2::clocks::monotonic_clock::now()).max(1)
}

/// Forwards `request` (its head already read into `head`) and streams the
/// write node's answer to the client.
pub fn forward(node: &Node, request: &IncomingRequest, head: &Head, request_id: &str, deadline: u64) -> Forwarded {
    let outgoing = match outgoing_request(node, request, head, request_id) {
        Ok(o) => o,
        Err(f) => return Forwarded::Failed(f),
    };
    // A GET or HEAD goes without a body (not even an empty chunked one).
    let bodyless = matches!(head.method.as_str(), "GET" | "HEAD");
    let body_out = if bodyless {
        None
    } else {
        match outgoing.body() {
            Ok(b) => Some(b),
            Err(_) => return Forwarded::Failed(unreachable()),
        }
    };
    let options = RequestOptions::new();
    let _ = options.set_connect_timeout(Some(CONNECT_TIMEOUT_NS.min(left(deadline))));
    // The answer's head comes once the write node has read the whole body
    // and run the request: bounded by the request's deadline, not less.
    let _ = options.set_first_byte_timeout(Some(left(deadline)));
    let _ = options.set_between_bytes_timeout(Some(left(deadline)));
    let pending = match outgoing_handler::handle(outgoing, Some(options)) {
        Ok(p) => p,
        Err(e) => {
            crate::log_event("error", "forwarding failed", &[("requestId", &request_id), ("error", &format!("{e:?}"))]);
            return Forwarded::Failed(unreachable());
        }
    };
    if let Some(body_out) = body_out {
        send_body(request, body_out, deadline);
    }
    match answer_head(&pending, request_id, deadline) {
        Ok(response) => stream_answer(response, request_id, deadline),
        Err(f) => Forwarded::Failed(f),
    }
}

/// The request to the write node: the headers it reads (`REQUEST_HEADERS`),
/// marked as forwarded under the edge's request id, to the same method and
/// target under the node's URL.
fn outgoing_request(node: &Node, request: &IncomingRequest, head: &Head, request_id: &str) -> Result<OutgoingRequest, Failure> {
    let headers = Fields::new();
    let incoming = request.headers();
    for name in REQUEST_HEADERS {
        if name == "content-length" && matches!(head.method.as_str(), "GET" | "HEAD") {
            continue;
        }
        for value in incoming.get(name) {
            let _ = headers.append(name, &value);
        }
    }
    drop(incoming);
    let _ = headers.append(FORWARDED, b"1");
    let _ = headers.append("x-request-id", request_id.as_bytes());
    let outgoing = OutgoingRequest::new(headers);
    let method = match head.method.as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.to_string()),
    };
    let target = match &head.query {
        Some(q) => format!("{}{}?{q}", node.prefix, head.path),
        None => format!("{}{}", node.prefix, head.path),
    };
    if outgoing.set_method(&method).is_err()
        || outgoing.set_scheme(Some(&node.scheme)).is_err()
        || outgoing.set_authority(Some(&node.authority)).is_err()
        || outgoing.set_path_with_query(Some(&target)).is_err()
    {
        return Err(Failure::validation("malformed_request", "the request's target cannot be forwarded"));
    }
    Ok(outgoing)
}

/// The client's body, piece by piece, as it arrives. A write that fails
/// means the write node stopped reading (it answered early, or went away):
/// its answer, or its absence, says which.
fn send_body(request: &IncomingRequest, body_out: OutgoingBody, deadline: u64) {
    let mut body_sent = true;
    if let Ok(body_in) = request.consume() {
        if let (Ok(input), Ok(output)) = (body_in.stream(), body_out.write()) {
            body_sent = pipe(&input, &output, deadline);
            drop(output);
            drop(input);
        }
        let _ = IncomingBody::finish(body_in);
    }
    if body_sent {
        let _ = OutgoingBody::finish(body_out, None);
    } else {
        drop(body_out);
    }
}

/// The write node's answer's head, within the deadline; else the failure
/// the client gets (unreachable, too late, or lost).
fn answer_head(pending: &FutureIncomingResponse, request_id: &str, deadline: u64) -> Result<IncomingResponse, Failure> {
    let timer = wasip2::clocks::monotonic_clock::subscribe_instant(deadline);
    let ready = pending.subscribe();
    let woke = wasip2::io::poll::poll(&[&ready, &timer]);
    drop(ready);
    if !woke.contains(&0) {
        crate::log_event("error", "the write node did not answer before the deadline", &[("requestId", &request_id)]);
        return Err(too_late());
    }
    match pending.get() {
        Some(Ok(Ok(r))) => Ok(r),
        Some(Ok(Err(e))) => {
            crate::log_event("error", "forwarding failed", &[("requestId", &request_id), ("error", &format!("{e:?}"))]);
            Err(if connect_failed(&e) {
                unreachable()
            } else if timed_out(&e) {
                too_late()
            } else {
                lost()
            })
        }
        _ => Err(lost()),
    }
}

/// Streams the write node's answer to the client: its status, the headers
/// the client gets (`CONTENT_HEADERS` and the API's own) and its body; a
/// body cut short is cut for the client too.
fn stream_answer(response: IncomingResponse, request_id: &str, deadline: u64) -> Forwarded {
    let status = response.status();
    let fields = Fields::new();
    let answer_headers = response.headers();
    for name in CONTENT_HEADERS.iter().chain(&switchboard_gateway::write_node::ANSWER_HEADERS) {
        for value in answer_headers.get(name) {
            let _ = fields.append(name, &value);
        }
    }
    drop(answer_headers);
    if fields.get("x-request-id").is_empty() {
        let _ = fields.append("x-request-id", request_id.as_bytes());
    }
    let Ok(body_in) = response.consume() else { return Forwarded::Failed(lost()) };
    let Some(out) = crate::fault::take_outparam() else { return Forwarded::Answered(status) };
    let answer = OutgoingResponse::new(fields);
    let _ = answer.set_status_code(status);
    let Ok(body_out) = answer.body() else { return Forwarded::Answered(status) };
    ResponseOutparam::set(out, Ok(answer));
    let mut whole = false;
    if let (Ok(input), Ok(output)) = (body_in.stream(), body_out.write()) {
        whole = pipe(&input, &output, deadline);
    }
    let _ = IncomingBody::finish(body_in);
    if whole {
        let _ = OutgoingBody::finish(body_out, None);
    } else {
        // A body cut short is a broken transfer for the client, never a
        // short answer that looks whole.
        crate::log_event("error", "the write node's answer was cut; the transfer is cut", &[("requestId", &request_id)]);
    }
    Forwarded::Answered(status)
}

/// Copies `input` to `output` until `input` ends (true), or until a side
/// fails or the deadline passes (false).
fn pipe(input: &InputStream, output: &OutputStream, deadline: u64) -> bool {
    loop {
        let timer = wasip2::clocks::monotonic_clock::subscribe_instant(deadline);
        let readable = input.subscribe();
        let woke = wasip2::io::poll::poll(&[&readable, &timer]);
        drop(readable);
        if !woke.contains(&0) {
            return false;
        }
        match input.read(64 * 1024) {
            Ok(chunk) => {
                if !write_all(output, &chunk) {
                    return false;
                }
            }
            Err(StreamError::Closed) => return output.blocking_flush().is_ok(),
            Err(_) => return false,
        }
    }
}

/// Writes `bytes` as fast as `output` takes them.
fn write_all(output: &OutputStream, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        let n = match output.check_write() {
            Ok(0) => {
                output.subscribe().block();
                continue;
            }
            Ok(n) => (n as usize).min(bytes.len()),
            Err(_) => return false,
        };
        if output.write(&bytes[..n]).is_err() {
            return false;
        }
        bytes = &bytes[n..];
    }
    true
}
