//! A node far from its primary (`serve --write-node URL`): every mutation
//! it admits is forwarded whole to a node beside the primary (the write
//! node), which runs it with round trips of its own short link and
//! answers. A write then costs this node one round trip of its far link,
//! however many statements it runs, where running it here cost one round
//! trip per statement (a write transaction of an embedded replica is an
//! interactive transaction at the primary). docs/design/storage-and-nodes.md "Far nodes"
//! weighs this against shipping batches of writes from the replica.
//!
//! What holds, unchanged, because the write node runs the request through
//! its own full path: admission (it authenticates and validates again:
//! forwarding adds no trust), tenancy, the `Idempotency-Key` record in
//! the write's own transaction at the primary, fencing of jobs.
//!
//! Read your writes: after a forwarded write is answered this node pulls
//! the primary's new frames in the background (`Freshness`); a read that
//! arrives meanwhile waits for that pull, so a client
//! that wrote through this node reads its write here. A read that follows
//! no write of this node waits for nothing.

use crate::freshness::Freshness;
use crate::pipeline::Answer;
use bytes::Bytes;
use hyper::HeaderMap;
use std::sync::Arc;
use std::time::Duration;
use switchboard_gateway::write_node::ANSWER_HEADERS;
use switchboard_gateway::Failure;

/// Marks a request a node forwarded (the gateway's, the edge's too).
pub use switchboard_gateway::write_node::FORWARDED;

/// How long a forwarded JSON request may take at the write node, in
/// request deadlines (`--request-timeout-ms`): its own component deadline
/// and a write gate's wait are well inside this (90 s by default).
const JSON_TIMEOUT_DEADLINES: u32 = 3;

/// Request headers that belong to one connection, not to the request.
const HOP_BY_HOP: [&str; 9] = ["connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "host"];

pub struct WriteNode {
    base: String,
    client: reqwest::Client,
    fresh: Arc<Freshness>,
    /// A forwarded JSON request's whole time (`JSON_TIMEOUT_DEADLINES`).
    json_timeout: Duration,
}

/// Why a forward produced no answer of the write node.
enum NotForwarded {
    /// The write node could not be reached: the request never left this
    /// node, so it may run here instead (at the primary, slowly).
    Unreachable,
    /// Sent, and then the write node went away (or a proxy before it
    /// could not reach it): the change may or may not have been made.
    Lost(String),
    /// Sent, and no answer within the request's time: the change may or
    /// may not have been made, and there is no time left to run it here.
    TooLate,
}

impl NotForwarded {
    /// A failure once the request had left: sending it, or reading the answer.
    fn after_sending(e: reqwest::Error) -> NotForwarded {
        if e.is_timeout() {
            NotForwarded::TooLate
        } else {
            NotForwarded::Lost(e.without_url().to_string())
        }
    }
}

impl WriteNode {
    /// `deadline`: one request's (`--request-timeout-ms`).
    pub fn new(base: &str, fresh: Arc<Freshness>, deadline: Duration) -> anyhow::Result<WriteNode> {
        let client =
            reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).pool_idle_timeout(Duration::from_secs(60)).tcp_nodelay(true).redirect(reqwest::redirect::Policy::none()).build()?;
        Ok(WriteNode { base: base.trim_end_matches('/').to_string(), client, fresh, json_timeout: deadline * JSON_TIMEOUT_DEADLINES })
    }

    /// Sends the request to the write node and turns its answer into this
    /// node's. `streamed`: a raw upload's body, which has no overall
    /// timeout (its size and the link decide how long it takes).
    async fn forward(&self, method: &hyper::Method, path_and_query: &str, headers: &HeaderMap, body: reqwest::Body, streamed: bool, request_id: &str) -> Result<Answer, NotForwarded> {
        let method = reqwest::Method::from_bytes(method.as_str().as_bytes()).map_err(|_| NotForwarded::Unreachable)?;
        let mut req = self.client.request(method, format!("{}{}", self.base, path_and_query));
        for (name, value) in headers {
            let n = name.as_str();
            if HOP_BY_HOP.contains(&n) || n == "content-length" && streamed || n == "x-request-id" || n == FORWARDED {
                continue;
            }
            req = req.header(n, value.as_bytes());
        }
        req = req.header(FORWARDED, "1").header("x-request-id", request_id).body(body);
        if !streamed {
            req = req.timeout(self.json_timeout);
        }
        let sent = req.send().await;
        let response = match sent {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Err(NotForwarded::Unreachable),
            Err(e) => return Err(NotForwarded::after_sending(e)),
        };
        let status = response.status().as_u16();
        let mut answer_headers = Vec::new();
        for name in ANSWER_HEADERS {
            for v in response.headers().get_all(name) {
                if let Ok(v) = v.to_str() {
                    answer_headers.push((name, v.to_string()));
                }
            }
        }
        let json = response.headers().get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("application/json"));
        let body: Bytes = response.bytes().await.map_err(NotForwarded::after_sending)?;
        // The write node answered after its commit: pull it before the next read.
        self.fresh.wrote();
        Ok(Answer {
            status,
            content_type: if json { "application/json" } else { "text/plain; charset=utf-8" },
            body: String::from_utf8_lossy(&body).into_owned(),
            headers: answer_headers,
            operation: "forwarded",
            download: None,
        })
    }
}

/// What a forward repeats of the request: taken before its body is read.
pub struct Head {
    method: hyper::Method,
    path_and_query: String,
    headers: HeaderMap,
}

impl Head {
    pub fn of(req: &hyper::Request<hyper::body::Incoming>) -> Head {
        Head { method: req.method().clone(), path_and_query: req.uri().path_and_query().map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string()), headers: req.headers().clone() }
    }
}

/// A request forwarded by a far node keeps the id that node gave it, so
/// both access logs and the answer name it alike.
pub fn forwarded_request_id(req: &hyper::Request<hyper::body::Incoming>) -> Option<String> {
    req.headers().get(FORWARDED)?;
    let id = req.headers().get("x-request-id")?.to_str().ok()?;
    uuid::Uuid::parse_str(id).ok().map(|u| u.to_string())
}

impl WriteNode {
    /// Forwards a request to the write node; `None` when it may run here
    /// instead (at the primary, slowly): the write node could not be
    /// reached, so nothing was sent; or it was sent and no answer came, and
    /// the request has an `Idempotency-Key` (streamed bodies excepted: they
    /// are gone), whose record at the primary makes a second run a replay.
    pub async fn send(&self, head: &Head, body: reqwest::Body, streamed: bool, request_id: &str, op: Option<&'static switchboard_gateway::Operation>) -> Option<Answer> {
        match self.forward(&head.method, &head.path_and_query, &head.headers, body, streamed, request_id).await {
            Ok(answer) => Some(Answer { operation: op.map_or("forwarded", |o| o.id.as_str()), ..answer }),
            Err(NotForwarded::Unreachable) => None,
            Err(NotForwarded::Lost(reason)) => {
                let failure = lost(&reason);
                (streamed || !head.headers.contains_key("idempotency-key")).then(|| Answer::failure(&failure, request_id))
            }
            // As the edge answers when its deadline passes (the gateway's
            // write_node::too_late): running it here would answer after the
            // client's own time, so the client retries with its key instead.
            Err(NotForwarded::TooLate) => {
                tracing::warn!(requestId = request_id, "the write node did not answer a forwarded request in time");
                Some(Answer::failure(&switchboard_gateway::write_node::too_late(), request_id))
            }
        }
    }
}

/// The answer when the write node could not be reached and the request
/// cannot run here (a streamed upload: its body went to the attempt).
pub use switchboard_gateway::write_node::unreachable;

/// The answer when a forwarded request was sent and no answer came back.
fn lost(reason: &str) -> Failure {
    tracing::warn!(reason, "the write node did not answer a forwarded request");
    switchboard_gateway::write_node::lost()
}
