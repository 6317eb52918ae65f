//! Reads on the tokio worker (issue 52, `crates/runtime/src/engine/reads.rs`,
//! on with `SWITCHBOARD_ASYNC_READS=1`):
//! a guest in a loop still ends at its deadline with the same answer as on
//! the reader threads, and a long read yields its worker, so another read
//! is served meanwhile even on a server with one worker thread.

use crate::harness::*;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

// The testbed's behaviours (components/testbed), picked by `search`.
const LOOP: &str = "1000";
const FINE: &str = "1003";

fn testbed_server(dir: &std::path::Path, env: &[(&str, &str)], timeout_ms: &str) -> Server {
    let mut command = Command::new(BIN);
    command.envs(env.iter().copied());
    let testbed = format!("contacts={}", env!("SWITCHBOARD_TESTBED_WASM"));
    Server::spawn_command(command, dir, &["--component-override", &testbed, "--request-timeout-ms", timeout_ms], Stdio::null())
}

#[test]
fn a_runaway_read_on_the_worker_answers_its_deadline_as_on_a_reader_thread() {
    let mut answers = Vec::new();
    for switch in ["1", "0"] {
        let dir = DataDir::new();
        let s = testbed_server(&dir.0, &[("SWITCHBOARD_ASYNC_READS", switch)], "1500");
        let t = tenant(&dir.0, "all");
        let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search={LOOP}", t.business));
        r.assert_failure(503, "capacity");
        assert_eq!(r.code(), "handler_deadline_exceeded");
        // The worker was handed back: the server answers the next read.
        s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search={FINE}", t.business)).assert_ok(200);
        let mut error = r.body["error"].clone();
        error.as_object_mut().unwrap().remove("requestId");
        answers.push((r.status, error));
    }
    assert_eq!(answers[0], answers[1], "the worker's deadline answer is the reader thread's");
}

#[test]
fn a_long_read_on_the_only_worker_does_not_hold_back_another_read() {
    let dir = DataDir::new();
    let s = testbed_server(&dir.0, &[("TOKIO_WORKER_THREADS", "1"), ("SWITCHBOARD_ASYNC_READS", "1")], "4000");
    let t = tenant(&dir.0, "all");
    // The business's database opens on its first request (in
    // `block_in_place`, which hands the worker's queue to a new thread):
    // opened first, the long read below runs on the one worker.
    s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search={FINE}", t.business)).assert_ok(200);
    let long_done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let long = scope.spawn(|| {
            let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search={LOOP}", t.business));
            long_done.store(true, Ordering::SeqCst);
            r
        });
        // Give the long read time to start (no assertion on time: had it
        // not started yet, the reads below would pass without it).
        std::thread::sleep(std::time::Duration::from_millis(500));
        for _ in 0..5 {
            s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search={FINE}", t.business)).assert_ok(200);
        }
        assert!(!long_done.load(Ordering::SeqCst), "the short reads were answered while the long one ran");
        let r = long.join().unwrap();
        assert_eq!(r.code(), "handler_deadline_exceeded", "{}", r.text);
    });
}
