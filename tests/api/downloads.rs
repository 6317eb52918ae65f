//! Streamed answers: the testbed (components/testbed) stands in for
//! `contacts` and answers `listContacts?search=2<N>` with N bytes of
//! a known pattern in 256 KiB pieces. A large download arrives whole,
//! byte-exact and chunked while the server's peak memory stays flat; a trap
//! mid-stream aborts the body; a client that leaves stops the pulls.

use crate::harness::*;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::time::{Duration, Instant};

/// The testbed's byte at `offset` (components/testbed `pattern`).
fn pattern(offset: u64) -> u8 {
    ((offset % 251) as u8) ^ ((offset >> 16) as u8)
}

fn expected_sha256(len: u64) -> String {
    let mut h = Sha256::new();
    let mut buf = Vec::with_capacity(1 << 16);
    let mut at = 0;
    while at < len {
        let end = (at + (1 << 16)).min(len);
        buf.clear();
        buf.extend((at..end).map(pattern));
        h.update(&buf);
        at = end;
    }
    hex(&h.finalize())
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A `VmHWM` / `VmRSS` figure of `/proc/<pid>/status`, in KiB.
fn proc_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"));
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().unwrap()
}

struct Bed {
    _dir: DataDir,
    s: Server,
    t: Tenant,
    log: std::path::PathBuf,
    client: reqwest::blocking::Client,
}

impl Bed {
    fn start() -> Bed {
        let dir = DataDir::new();
        let log = dir.0.join("server.log");
        let testbed = env!("SWITCHBOARD_TESTBED_WASM");
        let s = Server::start_logged(&dir.0, &["--component-override", &format!("contacts={testbed}")], &log);
        let t = tenant(&dir.0, "all");
        let client = reqwest::blocking::Client::builder().timeout(Duration::from_secs(300)).build().unwrap();
        Bed { _dir: dir, s, t, log, client }
    }

    fn get(&self, search: &str) -> reqwest::blocking::Response {
        self.client.get(format!("{}/api/v1/contacts?businessId={}&search={search}", self.s.base, self.t.business)).header("authorization", format!("Bearer {}", self.t.key)).send().unwrap()
    }

    /// Reads the whole body into a hash (never held whole): (length, sha256).
    fn drain(r: &mut reqwest::blocking::Response) -> std::io::Result<(u64, String)> {
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut len = 0u64;
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Ok((len, hex(&h.finalize())));
            }
            h.update(&buf[..n]);
            len += n as u64;
        }
    }

    /// The access line of the streamed answer `request_id`, once written.
    fn stream_line(&self, request_id: &str, within: Duration) -> Option<Value> {
        let started = Instant::now();
        loop {
            if let Some(v) = log_events(&self.log).into_iter().find(|v| v["requestId"] == request_id && v.get("streamEnd").is_some()) {
                return Some(v);
            }
            if started.elapsed() > within {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn header<'a>(r: &'a reqwest::blocking::Response, name: &str) -> Option<&'a str> {
    r.headers().get(name).map(|v| v.to_str().unwrap())
}

#[test]
fn a_64_mib_download_arrives_whole_and_chunked_while_memory_stays_flat() {
    let bed = Bed::start();
    let pid = bed.s.child.id();

    // One piece: a plain response with a length.
    let mut r = bed.get("21000");
    assert_eq!(r.status(), 200);
    assert_eq!(r.content_length(), Some(1000));
    assert_eq!(header(&r, "content-type"), Some("application/octet-stream"));
    assert_eq!(header(&r, "content-disposition"), Some("attachment; filename=\"testbed.bin\""));
    assert_eq!(header(&r, "cache-control"), Some("no-store"));
    assert!(header(&r, "x-request-id").is_some_and(|v| v.len() == 36));
    assert_eq!(Bed::drain(&mut r).unwrap(), (1000, expected_sha256(1000)));
    // A few pieces, which also warms the instance slots the big one reuses.
    let mut r = bed.get("23000000");
    assert_eq!(r.status(), 200);
    assert_eq!(Bed::drain(&mut r).unwrap(), (3_000_000, expected_sha256(3_000_000)));

    let hwm_before = proc_kib(pid, "VmHWM:");
    let size: u64 = (64 << 20) + 12_345;
    let started = Instant::now();
    let mut r = bed.get(&format!("2{size}"));
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type"), Some("application/octet-stream"));
    assert_eq!(header(&r, "content-disposition"), Some("attachment; filename=\"testbed.bin\""));
    assert_eq!(header(&r, "transfer-encoding"), Some("chunked"));
    assert_eq!(r.content_length(), None);
    let request_id = header(&r, "x-request-id").unwrap().to_string();
    let (len, sha) = Bed::drain(&mut r).unwrap();
    let elapsed = started.elapsed();
    let hwm_after = proc_kib(pid, "VmHWM:");
    assert_eq!(len, size);
    assert_eq!(sha, expected_sha256(size));
    let growth_kib = hwm_after.saturating_sub(hwm_before);
    eprintln!("64 MiB download: {:.2} s; server VmHWM {hwm_before} KiB before, {hwm_after} KiB after (+{growth_kib} KiB), VmRSS now {} KiB", elapsed.as_secs_f64(), proc_kib(pid, "VmRSS:"));
    assert!(growth_kib < 24 << 10, "peak memory grew by {growth_kib} KiB during a 64 MiB download");

    let line = bed.stream_line(&request_id, Duration::from_secs(5)).expect("the stream's access line");
    assert_eq!(line["streamEnd"], "complete");
    assert_eq!(line["bytes"], size);
    assert_eq!(line["status"], 200);
    assert_eq!(line["operation"], "listContacts");
}

#[test]
fn a_trap_mid_stream_aborts_the_body_and_the_server_keeps_serving() {
    let bed = Bed::start();
    let size = 4_000_000u64;
    let mut r = bed.get(&format!("3{size}"));
    // The status went out with the first piece; the trap (at 1 MiB) can
    // only cut the body short, and the client must notice.
    assert_eq!(r.status(), 200);
    let request_id = header(&r, "x-request-id").unwrap().to_string();
    let mut got = Vec::new();
    let read = r.read_to_end(&mut got);
    assert!(read.is_err(), "an aborted stream must not read as a complete body ({} bytes)", got.len());
    assert!(got.len() <= 1 << 20, "nothing after the trap: {} bytes", got.len());
    assert!(got.iter().enumerate().all(|(i, b)| *b == pattern(i as u64)), "what arrived is the start of the file");
    let line = bed.stream_line(&request_id, Duration::from_secs(5)).expect("the stream's access line");
    assert_eq!(line["streamEnd"], "aborted");
    assert_eq!(line["bytes"], 1 << 20);
    let aborted = log_event(&bed.log, "streamed answer aborted", |v| v["requestId"] == request_id.as_str()).expect("the trap is logged");
    assert!(aborted["bytes"] == 1 << 20 && aborted["reason"].as_str().is_some_and(|r| r.starts_with("a continuation trapped")), "{aborted}");

    // The server keeps serving: JSON answers and whole downloads.
    let list = bed.s.as_key(&bed.t.key).get(&format!("/api/v1/contacts?businessId={}&search=1003", bed.t.business));
    list.assert_ok(200);
    let mut r = bed.get("22000000");
    assert_eq!(Bed::drain(&mut r).unwrap(), (2_000_000, expected_sha256(2_000_000)));
}

#[test]
fn a_client_that_leaves_mid_stream_stops_the_pulls() {
    let bed = Bed::start();
    let size = 1u64 << 30;
    let mut r = bed.get(&format!("2{size}"));
    assert_eq!(r.status(), 200);
    let request_id = header(&r, "x-request-id").unwrap().to_string();
    let mut buf = vec![0u8; 1 << 20];
    r.read_exact(&mut buf).unwrap();
    drop(r);
    let line = bed.stream_line(&request_id, Duration::from_secs(10)).expect("the stream ends soon after the client leaves");
    assert_eq!(line["streamEnd"], "client_gone", "{line}");
    assert!(line["bytes"].as_u64().unwrap() < 64 << 20, "{line}");
    // The read snapshot was released: the server still serves.
    let mut r = bed.get("2500000");
    assert_eq!(Bed::drain(&mut r).unwrap(), (500_000, expected_sha256(500_000)));
}

#[test]
fn a_mutation_may_not_answer_with_a_download() {
    let bed = Bed::start();
    let r = bed
        .s
        .as_key(&bed.t.key)
        .fresh()
        .post("/api/v1/contacts", &serde_json::json!({"businessId": bed.t.business, "name": "x", "mobile": "+447700900123", "categoryIds": [uuid::Uuid::new_v4().to_string()]}));
    r.assert_failure(500, "internal");
    assert!(!r.text.contains("not from a mutation"));
    let log = log_containing(&bed.log, "createContact (a mutation) answered with a raw body piece");
    assert!(log.contains("createContact (a mutation) answered with a raw body piece"), "the refusal is logged: {log}");
}
