//! What every route of the server shares: the app, the instance permits,
//! the staging writer, the queue of the writer thread, the readers, the
//! limits, the far node's write node and the console's state; and the
//! response body type and helpers every route answers with.

use crate::pipeline::{Answer, App};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use tokio::sync::Semaphore;

pub(crate) struct Shared {
    pub(crate) app: App,
    /// Bounds concurrent component calls to the instance pool's size.
    pub(crate) permits: Semaphore,
    /// Runs the chunk writes of raw uploads.
    pub(crate) staging: crate::staging::Writer,
    /// Feed each database's writer thread (group commit of mutations).
    pub(crate) writers: crate::writer::Writers,
    /// The threads that run reads (`readers.rs`).
    pub(crate) readers: crate::readers::Readers,
    /// Rate limits and the bound on requests in flight.
    pub(crate) limits: crate::limits::Limits,
    /// `/metrics` is answered on the public listener (no --metrics-listen).
    pub(crate) metrics_on_public: bool,
    /// A far node's write node (`--write-node`): mutations are forwarded.
    pub(crate) write_node: Option<crate::write_node::WriteNode>,
    /// The console's login limits and cookie settings.
    pub(crate) console: crate::console::Console,
}

/// A mutation waiting for the writer thread, and where its answer goes.
pub(crate) type QueuedWrite = (crate::pipeline::Write, tokio::sync::oneshot::Sender<Answer>);

/// The job runner of one database: its jobs, leases and fences are rows
/// of that database.
pub(crate) struct DatabaseJobs {
    pub(crate) shared: std::sync::Arc<Shared>,
    pub(crate) db: std::sync::Arc<crate::db::Db>,
}

impl crate::jobs::JobHost for DatabaseJobs {
    fn db(&self) -> &crate::db::Db {
        &self.db
    }
    fn components(&self) -> &crate::engine::Components {
        &self.shared.app.components
    }
}

/// An error of a streamed body.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Every response body: a whole one, or a streamed answer's pieces.
pub(crate) type ResBody = BoxBody<Bytes, BoxError>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> ResBody {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed()
}

/// The head of `a` with `body` (taken out of `a` by the caller). A
/// download's content type and disposition were checked to be valid header
/// values when the answer was built (`App::download`).
pub(crate) fn to_response(a: Answer, body: ResBody, request_id: &str) -> Response<ResBody> {
    let mut b = Response::builder().status(StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR));
    match &a.download {
        Some(d) => {
            b = b.header("content-type", d.content_type.as_str());
            if let Some(cd) = &d.content_disposition {
                b = b.header("content-disposition", cd.as_str());
            }
        }
        None => b = b.header("content-type", a.content_type),
    }
    b = b.header("x-request-id", request_id).header("cache-control", "no-store");
    for (k, v) in a.headers {
        b = b.header(k, v);
    }
    b.body(body).expect("valid response parts")
}
