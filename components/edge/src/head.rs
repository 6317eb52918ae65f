//! The request's head: what the router reads before the body (the
//! incoming request's parser fills it; the router and the forward read it).

/// The parts of the request the router reads before its body.
pub struct Head {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub authorization: Option<String>,
    pub idempotency_key: Option<String>,
    pub content_type: Option<String>,
    pub content_length: Option<u64>,
}
