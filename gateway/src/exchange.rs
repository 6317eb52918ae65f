//! An admitted request's exchange with the component that owns it: the flow
//! of a mutation inside its owner's write transaction (savepoint,
//! idempotency lookup, the call, recording the answer) and the answer built
//! from what the component returned. The native host and the edge build
//! both run exactly this; they differ only in how they reach storage and
//! the component.

use crate::errors::{status_for_category, success_envelope, Failure, CATEGORIES};
use crate::operations::Response;
use crate::storage::{self, Statements, REDACTED};
use crate::{Admitted, Operation};
use switchboard_sql::Mismatch;

/// An answer ready for HTTP.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub headers: Vec<(&'static str, String)>,
}

impl Reply {
    pub fn json(status: u16, body: String) -> Reply {
        Reply { status, content_type: "application/json", body, headers: Vec::new() }
    }
    pub fn failure(f: &Failure, request_id: &str) -> Reply {
        Reply { status: f.status, content_type: "application/json", body: f.envelope(request_id).to_string(), headers: f.headers.clone() }
    }
}

/// What a component call came to (a download is handled by the caller).
pub enum Outcome {
    Success {
        status: u16,
        data_json: String,
    },
    Failed {
        status: u16,
        code: String,
        message: String,
        category: String,
        retryable: bool,
    },
    /// Stopped at its deadline.
    Deadline,
    /// Stopped at its memory limit.
    ResourceLimit,
    /// No instance was free.
    Capacity,
    /// It trapped (the caller logs the detail).
    Trap,
}

/// The answer for an outcome. A success whose status is not 2xx is a bug
/// in the component; the caller logs it (see [`Outcome::fault`]).
pub fn render(op: &Operation, outcome: Outcome, request_id: &str) -> Reply {
    match outcome {
        Outcome::Success { status, data_json } if (200..300).contains(&status) => match op.response {
            Response::Json(_) => Reply::json(status, success_envelope(&data_json, request_id)),
            Response::Raw(media) => Reply { status, content_type: media, body: data_json, headers: Vec::new() },
        },
        Outcome::Success { .. } => Reply::failure(&Failure::internal("the handler produced an invalid answer"), request_id),
        Outcome::Failed { status, code, message, category, retryable } => {
            let category = CATEGORIES.iter().find(|c| **c == category).copied().unwrap_or("internal");
            let status = if (400..600).contains(&status) { status } else { status_for_category(category) };
            Reply::failure(&Failure::new(status, category, &code, message).retryable(retryable), request_id)
        }
        Outcome::Deadline => Reply::failure(&Failure::new(503, "capacity", "handler_deadline_exceeded", "the request took too long and was stopped; nothing was written").retryable(true), request_id),
        Outcome::ResourceLimit => {
            Reply::failure(&Failure::new(500, "internal", "handler_resource_limit", "the request exceeded its memory limit and was stopped; nothing was written").retryable(false), request_id)
        }
        Outcome::Capacity => Reply::failure(&Failure::new(503, "capacity", "over_capacity", "the server is at capacity; retry shortly"), request_id),
        Outcome::Trap => Reply::failure(&Failure::internal("the request failed inside the service; nothing was written"), request_id),
    }
}

impl Outcome {
    /// What to log about a misbehaving component, if anything.
    pub fn fault(&self) -> Option<String> {
        match self {
            Outcome::Success { status, .. } if !(200..300).contains(status) => Some(format!("component answered success with status {status}")),
            _ => None,
        }
    }
}

/// The owner of a write transaction, as the mutation flow needs it: its
/// statements (a failure the flow logs and answers as [`Owner::unavailable`]
/// or 500), and what it answers and logs itself.
pub trait Owner: Statements<Error: std::fmt::Display + From<Mismatch>> {
    /// Storage could not take the request (busy, or the primary is away).
    fn unavailable(&self) -> Failure;
    /// Logs a failure of the flow: a stable `message` (what failed), the
    /// request's id and the failure as fields.
    fn log_error(&self, request_id: &str, message: &'static str, error: &str);
}

/// The code of a write refused because its business is moving to another
/// database: retryable, nothing written (the caller reads its placement
/// again).
pub const BUSINESS_MOVING: &str = "business_moving";

fn moving() -> Failure {
    Failure::new(503, "capacity", BUSINESS_MOVING, "this business is moving to another database; nothing was written, retry in a few seconds").retryable(true).with_header("Retry-After", "1".into())
}

/// Runs one mutation inside the owner's open write transaction, in its own
/// savepoint, so a failed one leaves nothing behind. With an
/// Idempotency-Key, the lookup, the change and the record of its answer are
/// in the same transaction: an exact retry that races the first attempt
/// waits for it and replays it; it never executes twice. `call` runs the
/// component (getting the owner back with its answer); a 2xx/3xx answer
/// keeps its changes, anything else is rolled back, and 4xx answers are
/// recorded too so that a retry replays them (5xx are not).
pub fn mutation<S: Owner>(sql: S, a: &Admitted, request_id: &str, now_ms: i64, call: impl FnOnce(S) -> (S, Reply)) -> (S, Reply) {
    if sql.execute("SAVEPOINT request", &[]).is_err() {
        let f = sql.unavailable();
        return (sql, Reply::failure(&f, request_id));
    }
    // Undoes what this request wrote and ends its savepoint.
    let undo = |sql: &S| {
        let _ = sql.execute("ROLLBACK TO request", &[]).and_then(|_| sql.execute("RELEASE request", &[]));
    };
    let business = a.business_id.clone().unwrap_or_default();
    // A business moving to another database (or moved, at a node whose
    // placement is stale) writes nothing here, and nothing is recorded.
    match storage::business_moving(&sql, &business) {
        Ok(false) => {}
        Ok(true) => {
            undo(&sql);
            return (sql, Reply::failure(&moving(), request_id));
        }
        Err(_) => {
            undo(&sql);
            let f = sql.unavailable();
            return (sql, Reply::failure(&f, request_id));
        }
    }
    if let Some(key) = &a.idempotency_key {
        match storage::stored_result(&sql, &business, a.op.id.as_str(), key, now_ms) {
            Ok(Some((fingerprint, status, body))) => {
                undo(&sql);
                let reply = if fingerprint != a.fingerprint {
                    Reply::failure(&Failure::conflict("idempotency_key_conflict", "this Idempotency-Key was already used with a different request body; use a new key for a new request"), request_id)
                } else if body.contains(REDACTED) {
                    // The first answer carried a copy-once secret; the change
                    // happened once and its secret is not shown again.
                    Reply::failure(
                        &Failure::conflict(
                            "idempotency_replay_redacted",
                            "this request already succeeded, and its answer carried a secret that is shown only once; read the resource, or rotate the secret to get a new one",
                        ),
                        request_id,
                    )
                } else {
                    let mut r = Reply::json(status, body);
                    r.headers.push(("Idempotent-Replayed", "true".into()));
                    r
                };
                return (sql, reply);
            }
            Ok(None) => {}
            Err(_) => {
                undo(&sql);
                let f = sql.unavailable();
                return (sql, Reply::failure(&f, request_id));
            }
        }
    }
    let (sql, reply) = call(sql);
    let record = |sql: &S, reply: &Reply| match &a.idempotency_key {
        Some(key) => storage::record_result(sql, &business, a.op, key, &a.fingerprint, reply.status, &reply.body, now_ms),
        None => Ok(()),
    };
    let outcome = if reply.status < 400 {
        record(&sql, &reply).and_then(|_| sql.execute("RELEASE request", &[]).map(|_| ()))
    } else {
        sql.execute("ROLLBACK TO request", &[]).map(|_| ()).and_then(|_| if reply.status < 500 { record(&sql, &reply) } else { Ok(()) }).and_then(|_| sql.execute("RELEASE request", &[]).map(|_| ()))
    };
    if let Err(e) = outcome {
        undo(&sql);
        sql.log_error(request_id, "the change could not be saved", &e.to_string());
        let reply = Reply::failure(&Failure::internal("the change could not be saved; nothing was written, retry").retryable(true), request_id);
        return (sql, reply);
    }
    (sql, reply)
}
