//! The write path: every API mutation of this node, in group commits
//! (`App::write_batch`), run by one writer thread per database (a
//! business's mutations go to its database's).

use crate::db;
use crate::engine::CallError;
use crate::pipeline::{unavailable, Answer, App, Write};
use crate::shared::{QueuedWrite, Shared};
use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;
use switchboard_gateway::exchange::{self, Reply};
use switchboard_gateway::storage::Statements;
use switchboard_gateway::Failure;

/// Most mutations one write transaction takes: under load, a batch holds
/// what queued while the previous one ran (at most one per instance slot).
const MAX_WRITE_BATCH: usize = 64;

/// The same on a database whose writes are shipped to a libSQL server
/// (`storage::ship`): each batch there pays a round trip, the pull of its
/// frames and several milliseconds of fixed CPU at the node and the
/// server, so under load fewer, larger batches write more (issue 47:
/// about 1.1x the creates per second beside sqld with 256 against 64, A/B
/// in pairs, bench/README.md).
const MAX_SHIPPED_BATCH: usize = 256;

/// How much lower a bulk thread's priority is (its nice value): under CPU
/// contention the kernel gives it about a tenth of the time of a thread at
/// the default priority (scheduler weights 110 against 1024).
const BULK_NICE: i32 = 10;

/// The queues of each database's writer threads, started on first use: one
/// for its ordinary mutations, one for its bulk ones.
#[derive(Default)]
pub(crate) struct Writers {
    queues: parking_lot::Mutex<HashMap<(String, bool), Sender<QueuedWrite>>>,
}

impl Writers {
    /// Queues `w` for its database's writer thread, or, when it has a large
    /// body to parse first (`Write::needs_prepare`: a contacts import, a
    /// JSON upload), for the database's bulk thread; `Err` when that thread
    /// is gone (the server is shutting down).
    pub(crate) fn send(&self, shared: &Arc<Shared>, w: QueuedWrite) -> Result<(), ()> {
        let mut queues = self.queues.lock();
        let key = (w.0.home.name.clone(), w.0.needs_prepare());
        let queue = match queues.get(&key) {
            Some(q) => q,
            None => {
                let (tx, rx) = std::sync::mpsc::channel();
                if key.1 {
                    start_bulk(shared.clone(), &key.0, rx).map_err(|_| ())?;
                } else {
                    let cap = if w.0.home.db.ships_writes() { MAX_SHIPPED_BATCH } else { MAX_WRITE_BATCH };
                    start(shared.clone(), &key.0, cap, rx).map_err(|_| ())?;
                }
                queues.entry(key).or_insert(tx)
            }
        };
        queue.send(w).map_err(|_| ())
    }
}

/// A database's bulk thread: parses each bulk mutation's body (the
/// component's prepare step) and runs its write, one at a time, at a lower
/// CPU priority than the server's other threads, so that on a busy machine
/// an import takes the CPU that other businesses' requests leave instead
/// of sharing it evenly (issue 47: their p99 under another business's
/// back-to-back imports). Its write still takes the database's write gate
/// as a request (a business's own bulk write is still a foreground write
/// of its database).
fn start_bulk(shared: Arc<Shared>, database: &str, queue: std::sync::mpsc::Receiver<QueuedWrite>) -> std::io::Result<()> {
    std::thread::Builder::new().name(format!("bulk-{database}")).spawn(move || {
        // SAFETY: setpriority with this thread's own id (Linux threads are
        // tasks); a failure leaves the priority as it was.
        #[cfg(target_os = "linux")]
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, BULK_NICE);
        }
        while let Ok((mut write, reply)) = queue.recv() {
            shared.app.prepare_write(&mut write);
            let answer = shared.app.write_batch(vec![write], &mut || false).pop();
            if let Some(answer) = answer {
                let _ = reply.send(answer);
            }
        }
    })?;
    Ok(())
}

/// A writer thread: takes every mutation that is waiting, runs them in one
/// write transaction (each in its own savepoint) and commits once, then
/// answers them. One thread runs every API mutation of a database: its
/// writes are serialised by its write gate anyway, and a thread that stays
/// busy under load costs no wake-up per request, where a blocking thread
/// per request woke the next one at every hand-over of the gate. Another
/// database's writes run on their own thread, so a long one here never
/// queues them.
fn start(shared: Arc<Shared>, database: &str, cap: usize, queue: std::sync::mpsc::Receiver<QueuedWrite>) -> std::io::Result<()> {
    let name = if database == switchboard_storage::databases::MAIN { "writer".to_string() } else { format!("writer-{database}") };
    std::thread::Builder::new().name(name).spawn(move || {
        // The first mutation of the next batch, when one was waiting as
        // this batch closed.
        let mut waiting = None;
        while let Some(first) = waiting.take().or_else(|| queue.recv().ok()) {
            let mut batch = vec![first];
            while batch.len() < cap {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let (writes, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            let answers = shared.app.write_batch(writes, &mut || {
                waiting = waiting.take().or_else(|| queue.try_recv().ok());
                waiting.is_some()
            });
            for (reply, answer) in replies.into_iter().zip(answers) {
                // The client may have gone; its change is committed either way.
                let _ = reply.send(answer);
            }
        }
    })?;
    Ok(())
}

/// How long a mutation waits for the write gate before answering 503.
const WRITE_GATE_WAIT: Duration = Duration::from_secs(30);

/// Every request of a batch answered with the same failure.
fn failed_all(batch: &[Write], f: &Failure) -> Vec<Answer> {
    batch.iter().map(|w| Answer::failure(f, &w.request_id).for_operation(w.admitted.op.id.as_str())).collect()
}

/// How often a write batch runs when each run meets a write conflict at
/// the primary (`db::take_conflict`).
const CONFLICT_RETRIES: usize = 4;

impl App {
    /// Runs mutations one after another in one write transaction and
    /// commits once (group commit: under load, the requests that queued
    /// while the previous batch ran share its commit). Each runs inside its
    /// own savepoint, so a failed one leaves nothing behind and does not
    /// touch the others. No answer is released before the commit that
    /// holds its change; when the commit fails, every answer of the batch
    /// becomes a retryable failure, and nothing of the batch was written.
    /// Runs on a blocking thread; answers come back in order.
    /// Every write of a batch is of one database (the writer thread's).
    /// `more` says, as the batch commits, whether further writes wait for
    /// this database's writer: then a shipped batch carries its local
    /// transaction over to the next (`ship::Carry`).
    pub fn write_batch(&self, batch: Vec<Write>, more: &mut dyn FnMut() -> bool) -> Vec<Answer> {
        let Some(db) = batch.first().map(|w| w.home.db.clone()) else { return Vec::new() };
        debug_assert!(batch.iter().all(|w| Arc::ptr_eq(&w.home.db, &db)));
        let Some(mut gate) = db.write_gate(WRITE_GATE_WAIT) else {
            return failed_all(&batch, &unavailable());
        };
        // A replica node that ships its transactions runs the batch again
        // when the primary moved on meanwhile (its replica has pulled by
        // then); nothing of a conflicted run was written. After
        // CONFLICT_RETRIES such runs, the last takes the primary's write
        // lock first (`Writer::begin_locking`: nobody can move the primary
        // on meanwhile).
        for attempt in 0..=CONFLICT_RETRIES {
            db::take_conflict();
            let locking = attempt == CONFLICT_RETRIES;
            let began = match (locking, attempt) {
                (true, _) => gate.begin_locking(),
                (false, 0) => gate.begin_carrying(),
                (false, _) => gate.begin(),
            };
            let Ok(conn) = began else { return failed_all(&batch, &unavailable()) };
            let (back, answers) = self.write_batch_once(&batch, conn, &mut *more);
            gate.put_back(back);
            if !db::take_conflict() {
                return answers;
            }
            tracing::info!(requests = batch.len(), "write batch met a write conflict at the primary; running it again");
        }
        failed_all(&batch, &Failure::new(503, "capacity", "write_conflict", "the change met other writes at the primary and was not saved; nothing was written, retry").retryable(true))
    }

    /// Runs the batch on `conn`, inside its write transaction, and ends
    /// that; the connection comes back for the gate (which keeps it only
    /// if it is fit for another).
    fn write_batch_once(&self, batch: &[Write], mut conn: db::Connection, more: &mut dyn FnMut() -> bool) -> (db::Connection, Vec<Answer>) {
        let mut answers = Vec::with_capacity(batch.len());
        let mut lost = None;
        for w in batch {
            let _in_request = w.span.enter();
            let (back, answer) = self.mutate(conn, w);
            conn = back;
            answers.push(answer.for_operation(w.admitted.op.id.as_str()));
            if conn.is_autocommit() {
                // SQLite rolled the whole transaction back (an I/O error, a
                // full disk): the batch's earlier changes are gone too.
                lost = Some(format!("requestId={} ended the batch's transaction", w.request_id));
                break;
            }
        }
        let outcome = match lost {
            Some(why) => Err(anyhow::anyhow!(why)),
            None => {
                if more() {
                    conn.ask_carry(switchboard_storage::ship::CarryAsk::AndKeep);
                }
                db::execute(&conn, "COMMIT", vec![]).map(|_| ())
            }
        };
        if let Err(e) = outcome {
            let _ = db::execute(&conn, "ROLLBACK", vec![]);
            // A conflict is the caller's to handle: it runs the batch again.
            if !db::conflicted() {
                tracing::error!(requests = batch.len(), error = %e, "write batch could not commit");
            }
            let failure = if db::primary_unreachable() { unavailable() } else { Failure::internal("the change could not be saved; nothing was written, retry").retryable(true) };
            return (conn, failed_all(batch, &failure));
        }
        tracing::debug!(requests = batch.len(), "write batch committed");
        crate::metrics::write_batch(batch.len());
        (conn, answers)
    }

    /// One mutation inside the batch's transaction: the shared flow
    /// (`switchboard_gateway::exchange::mutation`) around the component call.
    fn mutate(&self, conn: db::Connection, w: &Write) -> (db::Connection, Answer) {
        let (a, req, component, request_id) = (&w.admitted, &w.req, w.component, w.request_id.as_str());
        let (tx, reply) = exchange::mutation(HostTx(conn), a, request_id, crate::clock::now_ms(), |tx| {
            if let Some(r) = &w.refused {
                return (tx, Reply { status: r.status, content_type: r.content_type, body: r.body.clone(), headers: r.headers.clone() });
            }
            let started = std::time::Instant::now();
            let (conn, mut result) = self.components.call(component, tx.0, req, self.deadline);
            crate::metrics::write_call(a.op.id.as_str(), started);
            if matches!(&result, Ok(Ok(s)) if s.body.is_some()) {
                // Downloads are reads: a raw answer cannot be recorded for an
                // idempotent replay, so a mutation answering one is a bug.
                result = Err(CallError::Trap(format!("{} (a mutation) answered with a raw body piece", a.op.id)));
            }
            let answer = self.render(a, result, request_id);
            (HostTx(conn), Reply { status: answer.status, content_type: answer.content_type, body: answer.body, headers: answer.headers })
        });
        if reply.status == 503 && reply.body.contains(exchange::BUSINESS_MOVING) {
            // Moved (or moving): the placement is read again next time.
            if let Some(business) = a.business_id.as_deref() {
                self.dbs.forget(business);
            }
        }
        (tx.0, Answer { status: reply.status, content_type: reply.content_type, body: reply.body, headers: reply.headers, operation: "-", download: None })
    }
}

/// The batch's connection as the shared mutation flow's transaction owner.
struct HostTx(db::Connection);

impl Statements for HostTx {
    type Error = anyhow::Error;
    fn query(&self, sql: &str, params: &[db::SqlValue]) -> anyhow::Result<Vec<Vec<db::SqlValue>>> {
        Statements::query(&self.0, sql, params)
    }
    fn execute(&self, sql: &str, params: &[db::SqlValue]) -> anyhow::Result<u64> {
        Statements::execute(&self.0, sql, params)
    }
}

impl exchange::Owner for HostTx {
    fn unavailable(&self) -> Failure {
        unavailable()
    }
    /// The shared flow's event, inside the request's span (which carries
    /// the request id as its field).
    fn log_error(&self, _request_id: &str, message: &'static str, error: &str) {
        tracing::error!(error, "{message}");
    }
}
