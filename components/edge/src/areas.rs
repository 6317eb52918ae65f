//! An admitted request in the area that answers it: which areas this
//! build links, the component's view of the request, a read on the
//! transaction already begun, a mutation's write transaction (its prepare
//! step first), and the answer's rendering.

use crate::bindings::switchboard::platform::transaction;
use crate::store::{unavailable, EdgeSql};
use crate::{log_event, Answer};
use switchboard_gateway::exchange::{self, Outcome, Reply};
use switchboard_gateway::operations::{Component, OperationId};
use switchboard_gateway::{Admitted, Failure};
use switchboard_guest::{Request, Success};

/// An area's request entry point.
pub(crate) type Handle = fn(Request) -> Result<Success, switchboard_guest::Failure>;

/// The areas this build links. Messaging and voice call providers (the
/// messenger, signed recording links) that live in a native node; their
/// operations go to the write node (501 without one). The gateway's own
/// operations run no area ([`Gateway::own_answer`]).
pub(crate) fn area(component: Component) -> Option<Handle> {
    match component {
        Component::Contacts => Some(switchboard_contacts_area::handle),
        Component::Agents => Some(switchboard_agents_area::handle),
        Component::DataSources => Some(switchboard_data_sources_area::handle),
        Component::Webhooks => Some(switchboard_webhooks_area::handle),
        Component::Campaigns => Some(switchboard_campaigns_area::handle),
        Component::Messaging | Component::Voice | Component::Gateway => None,
    }
}

/// Whether this build answers the component's operations itself.
pub(crate) fn served_here(component: Component) -> bool {
    component == Component::Gateway || area(component).is_some()
}

/// An area's prepare step (WIT `handler.prepare`), for the operations that
/// have one (`Operation::prepared_before_write`).
pub(crate) type Prepare = fn(Request) -> Result<Vec<u8>, switchboard_guest::Failure>;

pub(crate) fn prepare_step(component: Component) -> Option<Prepare> {
    match component {
        Component::Contacts => Some(switchboard_contacts_area::prepare),
        Component::DataSources => Some(switchboard_data_sources_area::prepare),
        Component::Gateway | Component::Webhooks | Component::Messaging | Component::Agents | Component::Voice | Component::Campaigns => None,
    }
}

/// The component's view of the request; the body moves into it.
pub(crate) fn request(a: &mut Admitted, request_id: &str) -> Request {
    switchboard_gateway::component_request!(Request, a, request_id)
}

/// A read on the transaction already begun (one snapshot); it ends after
/// the answer ([`after_answer`], or the download's last piece).
pub(crate) fn read(a: &Admitted, req: Request, handle: Handle, request_id: &str) -> Answer {
    let result = handle(req.clone());
    match result {
        // A download: the pieces after the first are pulled while the
        // answer streams, on the same snapshot.
        Ok(Success { status, body: Some(piece), .. }) if (200..300).contains(&status) => {
            let rest = piece.next_cursor.clone().map(|cursor| (Request { stream_cursor: Some(cursor), ..req }, handle));
            Answer::Download { status, first: piece, rest }
        }
        result => Answer::Whole(render(a, result, request_id)),
    }
}

/// A mutation: one write transaction at the primary, the shared flow inside.
pub(crate) fn write(a: &Admitted, mut req: Request, handle: Handle, request_id: &str) -> Reply {
    // A large body is parsed before the transaction, as in a node's
    // pipeline: the prepared bytes replace the body; a failure is the answer.
    let mut refused = None;
    if let Some(prepare) = prepare_step(a.op.component).filter(|_| a.op.prepared_before_write()) {
        let with_body = Request { body: req.body.take(), ..req.clone() };
        match prepare(with_body) {
            Ok(prepared) => req.prepared = Some(prepared),
            Err(f) => refused = Some(f),
        }
    }
    if transaction::control("BEGIN IMMEDIATE").is_err() {
        return Reply::failure(&unavailable(), request_id);
    }
    let (_, reply) = exchange::mutation(EdgeSql, a, request_id, switchboard_guest::clock::now_ms(), |tx| {
        let mut result = match refused {
            Some(f) => Err(f),
            None => handle(req),
        };
        if matches!(&result, Ok(s) if s.body.is_some()) {
            // Downloads are reads (see the host's pipeline).
            log_event("error", "a mutation answered with a raw body piece", &[("requestId", &request_id), ("operation", &a.op.id)]);
            result =
                Err(switchboard_guest::Failure { status: 500, code: "internal_error".into(), message: "the handler produced an invalid answer".into(), category: "internal".into(), retryable: false });
        }
        (tx, render(a, result, request_id))
    });
    if let Err(e) = transaction::control("COMMIT") {
        log_event("error", "could not commit", &[("requestId", &request_id), ("error", &e.message)]);
        let failure = if e.kind == "busy" { unavailable() } else { Failure::internal("the change could not be saved; nothing was written, retry").retryable(true) };
        return Reply::failure(&failure, request_id);
    }
    reply
}

pub(crate) fn render(a: &Admitted, result: Result<Success, switchboard_guest::Failure>, request_id: &str) -> Reply {
    let outcome = match result {
        Ok(s) => Outcome::Success { status: s.status, data_json: s.data_json },
        Err(f) => Outcome::Failed { status: f.status, code: f.code, message: f.message, category: f.category, retryable: f.retryable },
    };
    if let Some(fault) = outcome.fault() {
        log_event("error", "request failed inside the service", &[("requestId", &request_id), ("fault", &fault)]);
    }
    exchange::render(a.op, outcome, request_id)
}

pub(crate) fn not_at_the_edge(op: OperationId, why: &str) -> Failure {
    Failure::new(501, "configuration", "not_served_at_edge", format!("{op} is not served by an edge node ({why}); send it to a switchboard serve node")).retryable(false)
}
