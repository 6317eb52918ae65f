//! The rules of a request forwarded to a write node, the same for a far
//! native node (host/src/write_node.rs, over reqwest) and the edge
//! (components/edge/src/forward.rs, over `wasi:http`): the header that
//! marks it, the write node's answer headers a client is given, and the
//! answers when no answer of the write node comes.

use crate::Failure;

/// Marks a request a node (or the edge) forwarded: the write node runs it
/// itself and never forwards it again (so a misconfigured pair cannot
/// loop), and takes its `X-Request-Id`, so both access logs name the
/// request alike.
pub const FORWARDED: &str = "switchboard-forwarded";

/// Headers of the write node's answer that are the API's (rate limits,
/// replays, authentication challenges, where a thing was made): the
/// forwarding node hands them to the client. Content and framing headers
/// are each build's own.
pub const ANSWER_HEADERS: [&str; 8] = ["retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "idempotent-replayed", "www-authenticate", "allow", "location"];

/// The write node could not be reached: nothing was sent, nothing done.
pub fn unreachable() -> Failure {
    Failure::new(503, "upstream", "write_node_unavailable", "the node that runs this request cannot be reached; nothing was done, retry shortly").retryable(true).with_header("Retry-After", "1".into())
}

/// Sent, and no answer came back: the change may or may not have been made.
pub fn lost() -> Failure {
    Failure::new(
        503,
        "upstream",
        "write_node_unavailable",
        "the node that runs this request did not answer; the change may or may not have been made: retry with the same Idempotency-Key to learn which",
    )
    .retryable(true)
}

/// The request's deadline passed while the write node was working on it.
pub fn too_late() -> Failure {
    Failure::new(
        504,
        "upstream",
        "write_node_timeout",
        "the node that runs this request did not answer in time; a change may or may not have been made: retry with the same Idempotency-Key to learn which",
    )
    .retryable(true)
}
