//! Async wasmtime against today's blocking design (issue 38):
//! `bench/async_instances.sh` runs this ignored test in release mode.
//!
//! It seeds a database with one business and 1,000 contacts (through the
//! contacts component's own `createContact`), then reads them with
//! `getContact` from `CONCURRENCY` tasks (32 by default) on a tokio runtime
//! of two workers, as the server's connections would, in two ways taking
//! turns round by round:
//!
//! * `blocking` (today): each read hops from the worker to a reader thread
//!   (four threads on one queue, the next read going to tokio's blocking
//!   pool when sixteen wait or run, as `host/src/readers.rs` does) and back;
//!   the instance is called with `call` there;
//! * `async`: each read runs on the worker itself, through the server's
//!   own async path (`Components::call_async`, `reads.rs`: `instantiate_async`
//!   and `call_async`, WASI's async bindings, the epoch yields), the
//!   store's SQLite calls still
//!   synchronous inside the guest's fiber (a contact read's queries take
//!   microseconds; making them async would put the hop back, per query).
//!
//! Both use the real component, the real imports on a real database, the
//! same read transaction as `pipeline.rs`'s read and the same warm
//! instances (`warm.rs`). It prints reads per second, process CPU per read,
//! context switches per read and p50/p99 of each round (a read's time from
//! its start; the async way's leaves out the wait for a worker, so its
//! latencies are not comparable), and the ratios of async to blocking.
//! CPU per read is the figure that counts on a shared machine: more
//! runnable threads get more of a loaded machine's time, which favours the
//! blocking way's reads per second.

use super::{types, AsyncAnswer, CallError, Components};
use crate::db::{self, Db};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const BIZ: &str = "0190bbbb-0000-7000-8000-000000000001";
const CATEGORY: &str = "0190bbbb-0000-7000-8000-000000000002";
const CONTACTS: usize = 1000;
const DEADLINE: Duration = Duration::from_secs(30);

type Answer = Result<Result<types::Success, types::Failure>, CallError>;

/// Today's reader threads (`host/src/readers.rs`, which the runtime crate
/// cannot use): a few threads on one queue; past `limit` queued or running,
/// tokio's blocking pool.
type Queue = (Mutex<VecDeque<Box<dyn FnOnce() + Send>>>, Condvar);

struct Readers {
    queue: Arc<Queue>,
    taken: Arc<AtomicUsize>,
    limit: usize,
}

impl Readers {
    fn start(threads: usize) -> Readers {
        let queue: Arc<Queue> = Arc::default();
        let taken = Arc::new(AtomicUsize::new(0));
        for _ in 0..threads {
            let (queue, taken) = (queue.clone(), taken.clone());
            std::thread::Builder::new()
                .name("reader".into())
                .spawn(move || loop {
                    let task = {
                        let mut q = queue.0.lock().unwrap();
                        loop {
                            match q.pop_front() {
                                Some(t) => break t,
                                None => q = queue.1.wait(q).unwrap(),
                            }
                        }
                    };
                    task();
                    taken.fetch_sub(1, Ordering::AcqRel);
                })
                .unwrap();
        }
        Readers { queue, taken, limit: threads * 4 }
    }

    async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        if self.taken.fetch_add(1, Ordering::AcqRel) >= self.limit {
            self.taken.fetch_sub(1, Ordering::AcqRel);
            return tokio::task::spawn_blocking(f).await.unwrap();
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.queue.0.lock().unwrap().push_back(Box::new(move || {
            let _ = tx.send(f());
        }));
        self.queue.1.notify_one();
        rx.await.unwrap()
    }
}

fn get(id: &str, n: usize) -> types::Request {
    types::Request {
        operation: "getContact".into(),
        business_id: BIZ.into(),
        path_params: vec![("contactId".into(), id.into())],
        query: vec![],
        body: None,
        caller: None,
        request_id: format!("bench-{n}"),
        stream_cursor: None,
        prepared: None,
    }
}

/// The read transaction around a call, as `pipeline.rs`'s read does it.
fn begin(db: &Db) -> db::Connection {
    let conn = db.read_conn().unwrap().detach();
    db::execute(&conn, "BEGIN READONLY", vec![]).unwrap();
    conn
}

fn end(db: &Db, conn: db::Connection, answer: &Answer) {
    let _ = db::execute(&conn, "ROLLBACK", vec![]);
    db.give_back(conn);
    match answer {
        Ok(Ok(s)) if s.status == 200 => {}
        Ok(Ok(s)) => panic!("status {}", s.status),
        Ok(Err(f)) => panic!("{}: {}", f.code, f.message),
        Err(CallError::Trap(t)) => panic!("trap: {t}"),
        Err(_) => panic!("the call hit a limit"),
    }
}

/// The process's user + system CPU so far (clock ticks of 10 ms).
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    // Fields 14 and 15 of the whole line: the 12th and 13th after the name.
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Context switches of the process's live threads so far (a blocking
/// pool thread that ended takes its count with it: a lower bound).
fn switches() -> u64 {
    let mut n = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        for line in status.lines().filter(|l| l.contains("ctxt_switches:")) {
            n += line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    n
}

struct Round {
    reads: usize,
    secs: f64,
    cpu: Duration,
    switches: u64,
    p50: f64,
    p99: f64,
}

fn seed(c: &Components, db: &Db) -> Vec<String> {
    let w = db.conn().unwrap().detach();
    db::execute(&w, "INSERT INTO businesses (id, name, created_at) VALUES (?1, 'Bench', '')", vec![db::SqlValue::Text(BIZ.into())]).unwrap();
    db::execute(&w, "INSERT INTO categories (id, business_id, name, created_at) VALUES (?1, ?2, 'Bench', '')", vec![db::SqlValue::Text(CATEGORY.into()), db::SqlValue::Text(BIZ.into())]).unwrap();
    db::execute(&w, "BEGIN IMMEDIATE", vec![]).unwrap();
    let mut w = Some(w);
    for i in 0..CONTACTS {
        let body = serde_json::json!({"name": format!("Contact {i}"), "mobile": format!("+1555{i:07}"), "fields": {"city": "Lisbon", "tier": format!("t{}", i % 3)}, "categoryIds": [CATEGORY], "communicationBlocked": false});
        let req = types::Request { operation: "createContact".into(), body: Some(body.to_string()), path_params: vec![], ..get("", i) };
        let (back, answer) = c.call("contacts", w.take().unwrap(), &req, DEADLINE);
        w = Some(back);
        match &answer {
            Ok(Ok(s)) if s.status == 201 => {}
            Ok(Ok(s)) => panic!("seeding contact {i}: status {}: {}", s.status, s.data_json),
            Ok(Err(f)) => panic!("seeding contact {i}: {}: {}", f.code, f.message),
            Err(CallError::Trap(t)) => panic!("seeding contact {i}: trap {t}"),
            Err(_) => panic!("seeding contact {i}: a limit"),
        }
    }
    let w = w.unwrap();
    db::execute(&w, "COMMIT", vec![]).unwrap();
    let ids = w.query_rows("SELECT id FROM contacts ORDER BY id", vec![]).unwrap();
    db.give_back(w);
    ids.into_iter().map(|r| if let db::SqlValue::Text(t) = &r[0] { t.clone() } else { panic!("an id") }).collect()
}

#[test]
#[ignore]
fn async_instances_against_blocking() {
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (seconds, rounds, concurrency) = (env("SWITCHBOARD_ASYNC_SECONDS", 5), env("SWITCHBOARD_ASYNC_ROUNDS", 3), env("SWITCHBOARD_ASYNC_CONCURRENCY", 32));
    let scratch = std::env::temp_dir().join(format!("switchboard-async-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&scratch).unwrap();
    let bed = Bed::start(&scratch);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    println!("getContact from {concurrency} tasks on two tokio workers, {seconds} s a round, process CPU per read:");
    let mut results: Vec<(&str, Round)> = Vec::new();
    // `SWITCHBOARD_ASYNC_WAY=blocking` (or `async`) runs one way only, for
    // a profile of it (`perf record -g` on the test binary).
    let only = std::env::var("SWITCHBOARD_ASYNC_WAY").unwrap_or_default();
    for round in 0..rounds * 2 {
        let asynchronous = round % 2 == 1;
        if !only.is_empty() && only != if asynchronous { "async" } else { "blocking" } {
            continue;
        }
        let r = bed.round(&rt, asynchronous, concurrency, seconds);
        let name = if asynchronous { "async" } else { "blocking" };
        println!(
            "  round {} {name:>8}: {:>7.0} reads/s, {:>5.1} us CPU per read ({:.2} cores busy), {:.2} context switches per read, p50 {:.3} ms, p99 {:.3} ms",
            round / 2 + 1,
            r.reads as f64 / r.secs,
            r.cpu.as_secs_f64() * 1e6 / r.reads as f64,
            r.cpu.as_secs_f64() / r.secs,
            r.switches as f64 / r.reads as f64,
            r.p50,
            r.p99
        );
        results.push((name, r));
    }
    for pair in results.chunks(2).filter(|p| only.is_empty() && p.len() == 2) {
        let (b, a) = (&pair[0].1, &pair[1].1);
        let rate = |r: &Round| r.reads as f64 / r.secs;
        let per = |r: &Round| r.cpu.as_secs_f64() / r.reads as f64;
        println!("  async / blocking: reads/s {:.2}, CPU per read {:.2}", rate(a) / rate(b), per(a) / per(b));
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The components, a seeded database and both ways of calling them.
struct Bed {
    c: Arc<Components>,
    db: Arc<Db>,
    ids: Arc<Vec<String>>,
    readers: Arc<Readers>,
}

impl Bed {
    fn start(scratch: &std::path::Path) -> Bed {
        let plugins = crate::plugins::Registry::start(None, scratch, true).unwrap();
        let cache = super::artifact_dir(None, scratch);
        let setup = crate::engine::Setup::with_plugins(plugins);
        let c = Arc::new(Components::load(&cache, &[], setup).unwrap());
        let db = Arc::new(Db::open(&scratch.join("data")).unwrap());
        let ids = Arc::new(seed(&c, &db));
        Bed { c, db, ids, readers: Arc::new(Readers::start(4)) }
    }

    /// One round: `concurrency` tasks read contacts one way for `seconds`.
    fn round(&self, rt: &tokio::runtime::Runtime, asynchronous: bool, concurrency: usize, seconds: usize) -> Round {
        let stop = Arc::new(AtomicBool::new(false));
        let (cpu_before, switches_before) = (cpu(), switches());
        let started = Instant::now();
        let latencies: Vec<Vec<Duration>> = rt.block_on(async {
            let tasks: Vec<_> = (0..concurrency).map(|t| tokio::spawn(self.reader(t, asynchronous, stop.clone()))).collect();
            tokio::time::sleep(Duration::from_secs(seconds as u64)).await;
            stop.store(true, Ordering::Relaxed);
            let mut all = Vec::new();
            for t in tasks {
                all.push(t.await.unwrap());
            }
            all
        });
        let secs = started.elapsed().as_secs_f64();
        let (cpu, switches) = (cpu() - cpu_before, switches().saturating_sub(switches_before));
        let mut all: Vec<Duration> = latencies.into_iter().flatten().collect();
        all.sort();
        let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)].as_secs_f64() * 1000.0;
        Round { reads: all.len(), secs, cpu, switches, p50: pct(0.5), p99: pct(0.99) }
    }

    /// One task's reads until `stop`, each read's latency.
    fn reader(&self, t: usize, asynchronous: bool, stop: Arc<AtomicBool>) -> impl std::future::Future<Output = Vec<Duration>> + Send + 'static {
        let (c, db, ids, readers) = (self.c.clone(), self.db.clone(), self.ids.clone(), self.readers.clone());
        async move {
            let mut lat = Vec::new();
            let mut n = t * 31;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let req = get(&ids[n % ids.len()], n);
                let t0 = Instant::now();
                // Each read is a task of its own, as a request is polled by
                // its connection's task when the socket wakes it: the read
                // waits for a free worker like a request would, and a worker
                // with reads queued wakes the other.
                let (c, db, readers) = (c.clone(), db.clone(), readers.clone());
                tokio::spawn(async move {
                    if asynchronous {
                        let conn = begin(&db);
                        let (conn, answer) = match c.call_async("contacts", conn, &req, DEADLINE).await {
                            AsyncAnswer::Answered(conn, answer) => (conn, answer),
                            AsyncAnswer::Blocking(_) => panic!("a contact read reached an import that calls out"),
                        };
                        end(&db, conn, &answer);
                    } else {
                        readers
                            .run(move || {
                                let (conn, answer) = c.call("contacts", begin(&db), &req, DEADLINE);
                                end(&db, conn, &answer);
                            })
                            .await;
                    }
                })
                .await
                .unwrap();
                lat.push(t0.elapsed());
            }
            lat
        }
    }
}
