//! One request, end to end, after HTTP parsing: the gateway admits it, the
//! host applies idempotency and the transaction, the owning component
//! answers, the host builds the envelope. Runs on a blocking thread.

use crate::db::{self, Db};
use crate::engine::switchboard::platform::types as wit;
use crate::engine::{AsyncAnswer, CallError, Components};
use crate::keys::Keys;
use std::sync::Arc;
use std::time::Duration;
use switchboard_gateway::exchange::{self, Outcome};
use switchboard_gateway::{Admitted, Failure, Gateway, Incoming};
use switchboard_storage::databases::{self, Databases};

mod reads;

pub struct App {
    pub gateway: Gateway,
    /// Main (keys, sessions, users, placement) and the databases businesses
    /// live in: every business's work runs on its own (`App::db_for`).
    pub dbs: std::sync::Arc<Databases>,
    pub components: Components,
    /// How long one component call may run before it is interrupted.
    pub deadline: Duration,
    /// Serve the native baseline route used by bench/ (off by default).
    pub bench_baseline: bool,
    /// Serve the sandbox-only routes (off by default).
    pub sandbox_routes: bool,
    /// Body limit of a raw (streamed) upload.
    pub max_upload_bytes: usize,
    /// Each database's job runner bell, rung when a step is made due now.
    pub bells: crate::bells::Bells,
    /// The uses of keys and sessions noted and not yet written.
    pub usage: crate::usage::Usage,
}

/// What goes back over HTTP.
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub headers: Vec<(&'static str, String)>,
    /// The operationId, for the access log.
    pub operation: &'static str,
    /// A raw answer (a download) instead of `body`; see "Streamed answers".
    pub download: Option<Download>,
}

/// A download: the component answered with a body piece.
pub struct Download {
    /// From the first piece.
    pub content_type: String,
    pub content_disposition: Option<String>,
    /// The first piece's bytes.
    pub first: Vec<u8>,
    /// Set when more pieces follow (the first piece had a `next-cursor`).
    pub rest: Option<Continuation>,
}

/// What it takes to pull the next pieces of a streamed answer: the request's
/// connection, its read transaction still open (every piece reads the same
/// snapshot), the request with `stream-cursor` set to the next piece, and
/// the component that answers it. `server.rs`/`download.rs` drive it with
/// [`App::next_piece`] and end it with [`App::end_stream`]; dropped without
/// that, the connection closes and the transaction ends with it.
pub struct Continuation {
    conn: Option<crate::db::Connection>,
    db: Arc<Db>,
    request: wit::Request,
    component: &'static str,
}

/// How [`App::read_on_worker`] ended. Made once per read and matched at
/// once: the answer is not boxed.
#[allow(clippy::large_enum_variant)]
pub enum OnWorker {
    Done(Answer),
    /// The component reached an import that calls out: a reader thread
    /// finishes it ([`App::finish_blocking`]).
    Blocking(Box<Begun>),
}

/// A read with its transaction begun, for [`App::finish_blocking`].
pub struct Begun {
    admitted: Admitted,
    db: Arc<Db>,
    conn: crate::db::Connection,
    req: wit::Request,
    component: &'static str,
    request_id: String,
}

/// One later piece of a streamed answer.
pub struct Piece {
    pub bytes: Vec<u8>,
    /// Another piece follows.
    pub more: bool,
}

impl Answer {
    pub fn failure(f: &Failure, request_id: &str) -> Answer {
        Answer { status: f.status, content_type: "application/json", body: f.envelope(request_id).to_string(), headers: f.headers.clone(), operation: "-", download: None }
    }
    fn json(status: u16, body: String) -> Answer {
        Answer { status, content_type: "application/json", body, headers: Vec::new(), operation: "-", download: None }
    }
    /// A route of ours outside the operation table (sandbox, provider
    /// webhooks): `data` in the success envelope, or the failure's.
    pub fn of_route(result: Result<serde_json::Value, Failure>, status: u16, operation: &'static str, request_id: &str) -> Answer {
        match result {
            Ok(data) => Answer::json(status, switchboard_gateway::errors::success_envelope(&data.to_string(), request_id)).for_operation(operation),
            Err(f) => Answer::failure(&f, request_id),
        }
    }
    pub(crate) fn for_operation(mut self, operation: &'static str) -> Answer {
        self.operation = operation;
        self
    }
}

pub(crate) use switchboard_storage::unavailable;

/// What an admitted request needs next.
pub enum Prepared {
    /// Answered already (a gateway failure, the contract, a 501).
    Done(Answer),
    /// A read: runs in its own read transaction (`App::read`).
    Read(Read),
    /// A mutation: runs in a write transaction, possibly beside others
    /// (`App::write_batch`).
    Write(Write),
}

/// The database a request runs on, and its name.
#[derive(Clone)]
pub struct Home {
    pub name: String,
    pub db: Arc<Db>,
}

/// An admitted read.
pub struct Read {
    admitted: Admitted,
    /// The business's database.
    db: Arc<Db>,
    req: wit::Request,
    component: &'static str,
    request_id: String,
}

/// An admitted mutation.
pub struct Write {
    pub(crate) admitted: Admitted,
    /// The business's database (its name picks the writer thread).
    pub(crate) home: Home,
    pub(crate) req: wit::Request,
    pub(crate) component: &'static str,
    pub(crate) request_id: String,
    /// The request's span: the writer thread runs the mutation inside it.
    pub(crate) span: tracing::Span,
    /// The answer of a prepare step that failed ([`App::prepare_write`]):
    /// given in the write transaction instead of calling the component, so
    /// an Idempotency-Key records it as it would the component's.
    pub(crate) refused: Option<Box<Answer>>,
}

impl Read {
    /// The business's database.
    pub fn db(&self) -> &Arc<Db> {
        &self.db
    }
    pub fn key_id(&self) -> Option<&str> {
        self.admitted.key_id.as_deref()
    }
    pub fn business_id(&self) -> Option<&str> {
        self.admitted.business_id.as_deref()
    }
}

impl Write {
    pub fn key_id(&self) -> Option<&str> {
        self.admitted.key_id.as_deref()
    }
    pub fn business_id(&self) -> Option<&str> {
        self.admitted.business_id.as_deref()
    }

    /// Whether the component's prepare step is still to run
    /// ([`App::prepare_write`]).
    pub fn needs_prepare(&self) -> bool {
        self.admitted.op.prepared_before_write() && self.req.prepared.is_none() && self.refused.is_none()
    }

    /// The URLs this mutation would make the service call out to (empty for
    /// most operations; see `Operation::outbound_url_fields`).
    pub fn outbound_targets(&self) -> Vec<String> {
        let fields = self.admitted.op.outbound_url_fields();
        if fields.is_empty() {
            return Vec::new();
        }
        let Some(body) = self.req.body.as_deref().and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok()) else {
            return Vec::new();
        };
        fields.iter().filter_map(|f| body.get(*f).and_then(|v| v.as_str()).map(String::from)).collect()
    }
}

impl App {
    /// Admits a request (route, key, tenancy, scopes, body) and says what
    /// runs it. No component runs here and nothing is written, so it may run
    /// on any thread.
    pub fn prepare(&self, incoming: Incoming, request_id: &str) -> Prepared {
        match self.gateway.admit(incoming, &self.keys()) {
            Ok(a) => self.route(a, request_id),
            Err(f) => Prepared::Done(Answer::failure(&f, request_id)),
        }
    }

    /// The mutation of a raw upload whose body is staged (`raw_upload.rs`):
    /// `a` comes from `Gateway::admit_raw`. The component receives a body
    /// naming the staged upload, built here from the validated query, and
    /// moves the chunks inside the request's transaction. Whatever it did
    /// not move (a 4xx, a trap, a replay or a key conflict) is discarded
    /// before the answer goes out.
    pub fn handle_staged(&self, mut a: Admitted, staged: &crate::staging::Staged, request_id: &str) -> Answer {
        let param = |name: &str| a.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
        let home = self.home(a.business_id.as_deref());
        let body = serde_json::json!({
            "businessId": a.business_id.clone().unwrap_or_default(),
            "dataSourceId": param("dataSourceId"),
            "fileName": param("fileName"),
            "format": param("format"),
            "stagedUploadId": staged.id,
            "byteSize": staged.size,
            "sha256": staged.sha256,
        });
        a.seal_raw(body.to_string(), staged.size, &staged.sha256);
        let answer = match self.route(a, request_id) {
            Prepared::Done(answer) => answer,
            Prepared::Read(r) => self.read(r),
            Prepared::Write(mut w) => {
                self.prepare_write(&mut w);
                self.write_batch(vec![w], &mut || false).pop().expect("one answer per write")
            }
        };
        if let Ok(home) = home {
            crate::staging::discard(&home.db, &staged.id);
        }
        answer
    }

    fn route(&self, mut a: Admitted, request_id: &str) -> Prepared {
        let op = a.op;
        if let Some(body) = self.gateway.own_answer(op, request_id) {
            return Prepared::Done(Answer::json(op.success_status[0], body).for_operation(op.id.as_str()));
        }
        let component = op.component.name();
        if !self.components.has(component) {
            let mut answer = Answer::failure(
                // Not a fault and not worth retrying: this build has no such
                // component yet (a deployment matter, hence `configuration`).
                &Failure::new(501, "configuration", "not_implemented", format!("{} is part of the contract but not built yet in this release", op.id)).retryable(false),
                request_id,
            );
            answer.operation = op.id.as_str();
            return Prepared::Done(answer);
        }
        let home = match self.home(a.business_id.as_deref()) {
            Ok(home) => home,
            Err(f) => return Prepared::Done(Answer::failure(&f, request_id).for_operation(op.id.as_str())),
        };
        let req = self.request(&mut a, request_id);
        let request_id = request_id.to_string();
        if op.method.is_mutation() {
            Prepared::Write(Write { admitted: a, home, req, component, request_id, span: tracing::Span::current(), refused: None })
        } else {
            Prepared::Read(Read { admitted: a, db: home.db, req, component, request_id })
        }
    }

    /// The keys and console sessions admission looks callers up in: main's.
    pub fn keys(&self) -> Keys<'_> {
        Keys { db: self.dbs.main(), usage: &self.usage }
    }

    /// The database `business` lives in (main for a request of no
    /// business, or of one main does not know: its own checks refuse it
    /// there as before).
    pub fn home(&self, business: Option<&str>) -> Result<Home, Failure> {
        let main = || Home { name: databases::MAIN.into(), db: self.dbs.main().clone() };
        let Some(business) = business else { return Ok(main()) };
        match self.dbs.home(business) {
            Ok(Some((name, db))) => Ok(Home { name, db }),
            Ok(None) => Ok(main()),
            Err(e) => {
                tracing::error!(businessId = %business, error = %format!("{e:#}"), "a business's database cannot be reached");
                Err(unavailable())
            }
        }
    }

    /// [`App::home`]'s database.
    pub fn db_for(&self, business: &str) -> Result<Arc<Db>, Failure> {
        self.home(Some(business)).map(|h| h.db)
    }

    /// The component's view of the request; the body moves into it.
    fn request(&self, a: &mut Admitted, request_id: &str) -> wit::Request {
        switchboard_gateway::component_request!(wit::Request, a, request_id)
    }

    /// Runs the prepare step of a mutation that has one
    /// (`Operation::prepared_before_write`: parsing a large body), before
    /// its write transaction, so the parse never holds the write gate. The
    /// prepared bytes replace the body; a failure becomes the mutation's
    /// answer. Runs on a blocking thread, never the writer's.
    pub fn prepare_write(&self, w: &mut Write) {
        if !w.needs_prepare() {
            return;
        }
        let _in_request = w.span.enter();
        // The step reads and writes nothing: it borrows no connection.
        let step = crate::metrics::prepare_step(w.admitted.op.id.as_str());
        let result = self.components.prepare(w.component, &w.req, self.deadline);
        drop(step);
        match result {
            Ok(Ok(prepared)) => {
                w.req.body = None;
                w.req.prepared = Some(prepared);
            }
            Ok(Err(f)) => w.refused = Some(Box::new(self.render(&w.admitted, Ok(Err(f)), &w.request_id))),
            Err(e) => w.refused = Some(Box::new(self.render(&w.admitted, Err(e), &w.request_id))),
        }
    }

    pub(crate) fn render(&self, a: &Admitted, result: Result<Result<wit::Success, wit::Failure>, CallError>, request_id: &str) -> Answer {
        let outcome = match result {
            Ok(Ok(wit::Success { status, body: Some(piece), .. })) if (200..300).contains(&status) => return self.download(status, piece, None, request_id),
            Ok(Ok(s)) => Outcome::Success { status: s.status, data_json: s.data_json },
            Ok(Err(f)) => Outcome::Failed { status: f.status, code: f.code, message: f.message, category: f.category, retryable: f.retryable },
            Err(CallError::Deadline) => Outcome::Deadline,
            Err(CallError::ResourceLimit) => Outcome::ResourceLimit,
            Err(CallError::Capacity) => Outcome::Capacity,
            Err(CallError::Trap(detail)) => {
                tracing::error!(requestId = %request_id, detail = %detail, "component trapped");
                Outcome::Trap
            }
        };
        if let Some(fault) = outcome.fault() {
            tracing::error!(requestId = %request_id, fault = %fault, "component answered an invalid outcome");
        }
        let r = exchange::render(a.op, outcome, request_id);
        Answer { status: r.status, content_type: r.content_type, body: r.body, headers: r.headers, operation: "-", download: None }
    }
}
