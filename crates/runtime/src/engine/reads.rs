//! Reads on the tokio worker (issue 52): `instantiate_async` and
//! `call_async` on the worker that polls the request, instead of the hop
//! to a reader thread and back (`host/src/readers.rs`), which was most of
//! a read's context switches and 7-20 µs of its CPU (bench/README.md,
//! "Async wasmtime against the blocking design").
//!
//! Three things make it safe to run a guest on a worker:
//!
//! * **Epoch yields.** A call's store has a deadline of one epoch tick and
//!   a callback that, at each tick, yields the worker back to tokio (the
//!   worker's other connections run) and extends the deadline by one more
//!   tick, until the request's deadline, counted in wall time from the
//!   call's start as the blocking path's epoch deadline is, has passed:
//!   then it interrupts the guest, which answers the same `Deadline` error.
//!   A slow list or a runaway guest hands its worker back every 10 ms.
//! * **WASI's async bindings.** The sync ones `block_on` a runtime of their
//!   own when a guest writes to stdout or stderr (a panic message), which
//!   panics inside a tokio worker.
//! * **No call out from a worker.** The provider imports (messenger,
//!   carrier, ai) and `http-out` use `reqwest::blocking`, which panics
//!   inside a tokio worker, and may wait seconds. This linker does not
//!   link them: a component's imports of them are stubs that trap. A read
//!   that reaches one is answered [`AsyncAnswer::Blocking`]: nothing of it
//!   was written (a read transaction) and no provider was called, so the
//!   host runs it again on the blocking path, on the same connection and
//!   snapshot, and every later request of that operation goes there
//!   first.
//!
//! The store import's SQLite calls stay synchronous inside the guest's
//! fiber: a read's queries take microseconds, and awaiting each would put
//! a hop back per query.
//!
//! Off by default: `Switches::async_reads` (`serve` with
//! `SWITCHBOARD_ASYNC_READS=1`) turns it on. Measured on
//! the two shared cores of the benchmark machine (bench/README.md, "Issue
//! 52, fifth session: reads on the worker"), it cost the same CPU per read
//! as the hop (0.88-1.26 of it for a GET, 1.02-1.05 for a list) and served
//! fewer reads per second with a worse p99 (fewer runnable threads get
//! fewer of a loaded machine's time slices), though a long export moved
//! the reads' p99 less (1.38-1.58 times, against 1.45-1.87).

use super::imports::RequestState;
use super::{classify, classify_instantiate, types, warm, CallError, Components};
use std::collections::{HashMap, HashSet};
use std::sync::RwLock;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store, UpdateDeadline};

/// The `resource-area` world with `handle` called through `call_async`;
/// its imports are the engine's own (sync) host implementations.
pub(super) mod async_world {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "resource-area",
        exports: { default: async },
        with: {
            "switchboard:platform/types": crate::engine::switchboard::platform::types,
            "switchboard:platform/store": crate::engine::switchboard::platform::store,
            "switchboard:platform/jobs": crate::engine::switchboard::platform::jobs,
            "switchboard:provider/clock": crate::engine::switchboard::provider::clock,
            "switchboard:provider/ids": crate::engine::switchboard::provider::ids,
            "switchboard:provider/log": crate::engine::switchboard::provider::log,
        },
    });
}

use async_world::{ResourceArea as AsyncArea, ResourceAreaPre as AsyncPre};

type Answer = Result<Result<types::Success, types::Failure>, CallError>;

/// How an async call ended.
pub enum AsyncAnswer {
    /// The component answered (or failed); the connection is handed back
    /// with whatever it did.
    Answered(crate::db::Connection, Answer),
    /// The component reached an import that calls out: run it again on the
    /// blocking path ([`Components::call`]) with this connection.
    Blocking(crate::db::Connection),
}

/// What the async path adds to [`Components`]: a linker of its own (WASI's
/// async bindings, no import that calls out), each component linked with
/// it, warm instances of its own bindings, and the operations seen calling
/// out.
pub(super) struct AsyncReads {
    on: bool,
    pres: HashMap<String, AsyncPre<RequestState>>,
    warm: warm::WarmInstances<AsyncArea>,
    calls_out: RwLock<HashSet<String>>,
}

impl AsyncReads {
    /// A linker for `engine` and a linked instance-pre per area component;
    /// on and warm as `switches` say.
    pub(super) fn link<'a>(engine: &Engine, components: impl Iterator<Item = (&'a String, &'a Component)>, switches: super::Switches) -> anyhow::Result<AsyncReads> {
        let mut linker: Linker<RequestState> = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        super::ResourceArea::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        super::voice_world::switchboard::platform::recording_links::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        let mut pres = HashMap::new();
        let mut stubbed = HashSet::new();
        for (name, component) in components {
            stub_calls_out(&mut linker, engine, component, &mut stubbed)?;
            let pre = linker.instantiate_pre(component)?;
            pres.insert(name.clone(), AsyncPre::new(pre)?);
        }
        Ok(AsyncReads { on: switches.async_reads, pres, warm: warm::WarmInstances::new(switches.warm_instances), calls_out: RwLock::new(HashSet::new()) })
    }

    /// Drops the idle instances (the pool ran out of slots).
    pub(super) fn clear_warm(&self) -> usize {
        self.warm.clear()
    }

    fn calls_out(&self, operation: &str) -> bool {
        self.calls_out.read().unwrap_or_else(|e| e.into_inner()).contains(operation)
    }

    fn note_calls_out(&self, operation: &str, e: &wasmtime::Error) {
        let mut set = self.calls_out.write().unwrap_or_else(|e| e.into_inner());
        if set.insert(operation.to_string()) {
            tracing::info!(operation, import = %format!("{e:#}"), "a read reached an import that calls out: its requests run on the reader threads from now on");
        }
    }
}

/// The interfaces whose host side calls out (`reqwest::blocking`, and
/// waits): linked as stubs that trap on the async path.
const CALLS_OUT: [&str; 4] = ["switchboard:platform/http-out@", "switchboard:provider/ai@", "switchboard:provider/messenger@", "switchboard:provider/carrier@"];

/// What a stub's error starts with ([`reached_a_stub`]).
const STUB: &str = "calls out, not on the async path: ";

/// Links `component`'s imports of [`CALLS_OUT`] interfaces (those not in
/// `stubbed` yet) as functions that fail with [`STUB`].
fn stub_calls_out(linker: &mut Linker<RequestState>, engine: &Engine, component: &Component, stubbed: &mut HashSet<String>) -> anyhow::Result<()> {
    use wasmtime::component::types::ComponentItem;
    let ty = component.component_type();
    for (name, import) in ty.imports(engine) {
        if !CALLS_OUT.iter().any(|prefix| name.starts_with(prefix)) || stubbed.contains(name) {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = import.ty else { continue };
        let mut linked = linker.instance(name)?;
        for (item, export) in instance.exports(engine) {
            match export.ty {
                ComponentItem::ComponentFunc(_) => {
                    let what = format!("{STUB}{name}#{item}");
                    linked.func_new(item, move |_, _, _, _| Err(wasmtime::format_err!("{what}")))?;
                }
                ComponentItem::Resource(_) => linked.resource(item, wasmtime::component::ResourceType::host::<()>(), |_, _| Ok(()))?,
                _ => {}
            }
        }
        stubbed.insert(name.to_string());
    }
    Ok(())
}

/// Arms `store` for an async call of at most `deadline`: a yield at every
/// epoch tick, an interrupt once `deadline` has passed since now.
fn arm(store: &mut Store<RequestState>, deadline: Duration) {
    let until = Instant::now() + deadline;
    // A deadline shorter than a tick ends at the first tick, as the
    // blocking path's does.
    store.set_epoch_deadline(1);
    // tokio's `yield_now` wakes the task only after the worker has polled
    // its I/O driver: a plain yield would run the guest again after the
    // other queued tasks, and the driver (new requests, sockets ready) only
    // every 61 of them, 0.6 s of 10 ms slices.
    store.epoch_deadline_callback(move |_| Ok(if Instant::now() >= until { UpdateDeadline::Interrupt } else { UpdateDeadline::YieldCustom(1, Box::pin(tokio::task::yield_now())) }));
}

/// Whether a call failed on one of the stubs [`AsyncReads::link`] put in
/// place of an import that calls out.
fn reached_a_stub(e: &wasmtime::Error) -> bool {
    e.chain().any(|cause| cause.to_string().starts_with(STUB))
}

impl Components {
    /// Whether a read of `operation` runs on the worker ([`Self::call_async`]):
    /// the async path is on and the operation was never seen calling out.
    pub fn reads_on_worker(&self, operation: &str) -> bool {
        self.reads.on && !self.reads.calls_out(operation)
    }

    /// [`Self::call`] on the calling task: a warm instance of the async
    /// bindings that last answered the same business, else a fresh one,
    /// yielding the worker at every epoch tick. `conn` is handed back as
    /// `call` hands it back.
    pub async fn call_async(&self, name: &str, conn: crate::db::Connection, req: &types::Request, deadline: Duration) -> AsyncAnswer {
        let log_context = format!("component={name} requestId={}", req.request_id);
        let (mut store, instance, uses) = match self.reads.warm.take(name, &req.business_id) {
            Some(warm::Warm { mut store, instance, uses, .. }) => {
                store.data_mut().renew(conn, log_context);
                crate::metrics::component_instance("warm");
                (store, Some(instance), uses)
            }
            None => {
                crate::metrics::component_instance("fresh");
                (self.store(Some(conn), log_context, &req.business_id, deadline), None, 0)
            }
        };
        arm(&mut store, deadline);
        let instance = match instance {
            Some(instance) => instance,
            None => {
                let Some(pre) = self.reads.pres.get(name) else {
                    return AsyncAnswer::Answered(store.into_data().take_conn(), Err(CallError::Trap(format!("no component {name}"))));
                };
                match pre.instantiate_async(&mut store).await {
                    Ok(instance) => instance,
                    Err(e) => {
                        let e = classify_instantiate(e);
                        if self.made_room(&e) {
                            return Box::pin(self.call_async(name, store.into_data().take_conn(), req, deadline)).await;
                        }
                        return AsyncAnswer::Answered(store.into_data().take_conn(), Err(e));
                    }
                }
            }
        };
        let result = instance.switchboard_platform_handler().call_handle(&mut store, req).await;
        let conn = store.data_mut().take_conn();
        let result = match result {
            Ok(answer) => answer,
            Err(e) if reached_a_stub(&e) => {
                self.reads.note_calls_out(&req.operation, &e);
                return AsyncAnswer::Blocking(conn);
            }
            Err(e) => return AsyncAnswer::Answered(conn, Err(classify(e))),
        };
        self.reads.warm.put(name, &req.business_id, warm::Warm::new(store, instance, uses + 1));
        AsyncAnswer::Answered(conn, Ok(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{self, Db, SqlValue};

    const BIZ: &str = "0190cccc-0000-7000-8000-000000000001";
    const NUMBER: &str = "pn-async-reads";

    fn components(scratch: &std::path::Path) -> Components {
        let plugins = crate::plugins::Registry::start(None, scratch, true).unwrap();
        let setup = crate::engine::Setup::with_plugins(plugins);
        let testbed = std::path::PathBuf::from(concat!(env!("OUT_DIR"), "/guest-target/wasm32-wasip2/release/switchboard_testbed.wasm"));
        // The testbed answers `contacts` (it loops on `search=1000`).
        Components::load(&crate::engine::artifact_dir(None, scratch), &[("contacts".to_string(), testbed)], setup).unwrap()
    }

    fn request(operation: &str, query: &[(&str, &str)], body: Option<String>) -> types::Request {
        types::Request {
            operation: operation.into(),
            business_id: BIZ.into(),
            path_params: vec![],
            query: query.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            body,
            caller: None,
            request_id: "async-reads-test".into(),
            stream_cursor: None,
            prepared: None,
        }
    }

    /// A runaway guest on the worker ends at its deadline with the same
    /// error as on a reader thread; an operation that reaches an import
    /// that calls out comes back for the blocking path, which answers it on
    /// the same connection, and goes there from then on.
    #[test]
    fn a_deadline_on_the_worker_and_a_read_that_calls_out() {
        let scratch = std::env::temp_dir().join(format!("switchboard-async-reads-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&scratch).unwrap();
        let c = components(&scratch);
        let db = Db::open(&scratch.join("data")).unwrap();
        let conn = db.conn().unwrap().detach();
        db::execute(&conn, "INSERT INTO businesses (id, name, created_at) VALUES (?1, 'Async', '')", vec![SqlValue::Text(BIZ.into())]).unwrap();
        db::execute(
            &conn,
            "INSERT INTO channel_connections (id, business_id, channel, provider_id, status, connected_at, updated_at) VALUES ('cc1', ?1, 'chatapp', ?2, 'connected', '', '')",
            vec![SqlValue::Text(BIZ.into()), SqlValue::Text(NUMBER.into())],
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let runaway = request("listContacts", &[("search", "1000")], None);
        let deadline = Duration::from_millis(300);
        let conn = match rt.block_on(c.call_async("contacts", conn, &runaway, deadline)) {
            AsyncAnswer::Answered(conn, Err(CallError::Deadline)) => conn,
            AsyncAnswer::Answered(_, Err(CallError::Trap(t))) => panic!("a trap, not the deadline: {t}"),
            _ => panic!("the runaway read did not end at its deadline"),
        };
        let (conn, blocking) = c.call("contacts", conn, &runaway, deadline);
        assert!(matches!(blocking, Err(CallError::Deadline)), "the blocking path's answer is the same");
        // The worker's instance went away with its deadline; a fresh one answers.
        let fine = request("listContacts", &[("search", "1003")], None);
        let conn = match rt.block_on(c.call_async("contacts", conn, &fine, deadline)) {
            AsyncAnswer::Answered(conn, Ok(Ok(s))) if s.status == 200 => conn,
            _ => panic!("a fine read after a runaway one"),
        };

        // The messaging area's media upload calls the messenger: on the
        // worker it reaches a stub.
        let body = serde_json::json!({"phoneNumberId": NUMBER, "mimeType": "image/png", "fileName": "a.png", "contentBase64": "iVBORw0KGgo="}).to_string();
        let upload = request("uploadMedia", &[], Some(body));
        assert!(!c.reads.calls_out("uploadMedia"));
        let conn = match rt.block_on(c.call_async("messaging", conn, &upload, JOB_DEADLINE_FOR_TEST)) {
            AsyncAnswer::Blocking(conn) => conn,
            AsyncAnswer::Answered(_, Ok(Ok(s))) => panic!("answered on the worker: {} {}", s.status, s.data_json),
            AsyncAnswer::Answered(_, Ok(Err(f))) => panic!("failed on the worker: {} {}", f.code, f.message),
            AsyncAnswer::Answered(_, Err(_)) => panic!("a trap on the worker"),
        };
        assert!(c.reads.calls_out("uploadMedia"), "the operation goes to the blocking path from now on");
        assert!(!c.reads.calls_out("listContacts"));
        let (conn, answer) = c.call("messaging", conn, &upload, JOB_DEADLINE_FOR_TEST);
        match answer {
            Ok(Ok(s)) => assert!((200..300).contains(&s.status), "{}", s.data_json),
            Ok(Err(f)) => panic!("{} {}", f.code, f.message),
            Err(_) => panic!("the blocking path trapped"),
        }
        db.give_back(conn);
        drop(c);
        let _ = std::fs::remove_dir_all(&scratch);
    }

    const JOB_DEADLINE_FOR_TEST: Duration = Duration::from_secs(30);
}
