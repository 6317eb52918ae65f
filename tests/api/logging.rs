//! The log never stops the service: with stderr on a pipe nobody reads, on
//! a pipe whose reader is gone, or closed outright, the server keeps
//! answering and stops cleanly on SIGTERM.

use crate::harness::*;
use std::process::{Command, Stdio};

/// Enough requests that their access lines (about 250 bytes each) overflow
/// a pipe's 64 KiB many times over.
const REQUESTS: usize = 1500;

fn keeps_answering(server: &mut Server) {
    for i in 0..REQUESTS {
        // Unauthenticated: answered by the gateway, and logged like any other.
        let r = server.req().get(&format!("/api/v1/contacts?n={i}"));
        assert_eq!(r.status, 401, "request {i} was answered");
    }
    // A real read still works after the flood.
    let biz = server.admin(&["business", "create", "--name", "Logs"])["businessId"].as_str().unwrap().to_string();
    let key = server.admin(&["key", "create", "--business", &biz, "--scopes", "all"])["apiKey"].as_str().unwrap().to_string();
    let r = server.as_key(&key).get(&format!("/api/v1/contacts?businessId={biz}"));
    assert_eq!(r.status, 200, "{}", r.text);
    let status = server.terminate();
    assert!(status.success(), "stopped cleanly on SIGTERM: {status:?}");
}

#[test]
fn a_pipe_nobody_reads_never_stalls_requests() {
    let dir = DataDir::new();
    let mut server = Server::spawn_command(Command::new(BIN), &dir.0, &[], Stdio::piped());
    // Held open and never read: the pipe fills after 64 KiB.
    let _unread = server.child.stderr.take();
    keeps_answering(&mut server);
}

#[test]
fn a_pipe_whose_reader_is_gone_never_stops_the_service() {
    let dir = DataDir::new();
    let mut server = Server::spawn_command(Command::new(BIN), &dir.0, &[], Stdio::piped());
    // Every later write to stderr fails with EPIPE.
    drop(server.child.stderr.take());
    keeps_answering(&mut server);
}

#[test]
fn a_closed_stderr_never_stops_the_service() {
    let dir = DataDir::new();
    // The shell closes descriptor 2 and execs the server in its place, so
    // the pid is the server's.
    let mut shell = Command::new("sh");
    shell.args(["-c", "exec 2>&-; exec \"$0\" \"$@\"", BIN]);
    let mut server = Server::spawn_command(shell, &dir.0, &[], Stdio::null());
    keeps_answering(&mut server);
}

#[test]
fn the_access_log_records_path_templates_never_raw_paths() {
    let dir = DataDir::new();
    let log = dir.0.join("server.log");
    let s = Server::start_logged(&dir.0, &[], &log);
    let t = tenant(&dir.0, "all");
    // A mobile number where an id belongs, with and without a valid key, and
    // a path that is no route at all.
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts/+15557654321?businessId={}", t.business));
    assert_eq!(r.status, 400);
    let id = r.request_id.clone().expect("a request id");
    assert_eq!(s.req().get("/api/v1/contacts/+15557654321").status, 401);
    assert_eq!(s.req().get("/api/v1/nothing/+15557654321").status, 404);
    let text = log_containing(&log, &id);
    assert!(!text.contains("15557654321"), "no raw path in the log: {text}");
    let line: serde_json::Value = text.lines().filter_map(|l| serde_json::from_str(l).ok()).find(|v: &serde_json::Value| v["requestId"] == id.as_str()).expect("the access line");
    assert_eq!(line["path"], "/api/v1/contacts/{contactId}");
    assert_eq!(line["status"], 400);
}

/// One span per request and per job step: the access line carries the
/// request's span (request id, operation, business) and the job step line
/// its span (job, kind, attempt, business) with its outcome.
#[test]
fn requests_and_job_steps_log_inside_their_spans() {
    let dir = DataDir::new();
    let log = dir.0.join("server.log");
    let s = Server::start_logged(&dir.0, &[], &log);
    let t = tenant(&dir.0, "all");
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business));
    let id = r.request_id.clone().expect("a request id");
    s.admin(&["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-spans"]);
    s.admin(&["sandbox", "inbound", "--phone-number-id", "pn-spans", "--from", "+15550003333", "--text", "hi"]);
    let lines = |text: &str| -> Vec<serde_json::Value> { text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect() };
    let access = lines(&log_containing(&log, &id)).into_iter().find(|v| v["requestId"] == id.as_str() && v["status"] == 200).expect("the access line");
    assert_eq!(access["span"]["name"], "request");
    assert_eq!(access["span"]["requestId"], id.as_str());
    assert_eq!(access["span"]["operation"], "listContacts");
    assert_eq!(access["span"]["businessId"], t.business.as_str());
    let step = lines(&log_containing(&log, "messaging.inbound")).into_iter().find(|v| v["message"] == "job step").expect("a job step line");
    assert_eq!(step["span"]["name"], "job_step");
    assert_eq!(step["span"]["kind"], "messaging.inbound");
    assert_eq!(step["span"]["attempt"], 1);
    assert_eq!(step["span"]["businessId"], t.business.as_str());
    assert_eq!(step["outcome"], "done");
    assert!(step["durationMs"].as_i64().is_some());
    // Still no number in the log.
    assert!(!std::fs::read_to_string(&log).unwrap().contains("15550003333"), "no mobile number in the log");
}

/// An event carries its values as fields of its JSON line, beside a message
/// that names what happened without them: each migration a fresh server
/// applies is one `applied migration` event with the migration's name.
#[test]
fn events_carry_their_values_as_fields() {
    let dir = DataDir::new();
    let log = dir.0.join("server.log");
    let _s = Server::start_logged(&dir.0, &[], &log);
    let first = log_event(&log, "applied migration", |v| v["migration"].as_str().is_some_and(|m| m.starts_with("0001_"))).expect("the first migration's event");
    assert_eq!(first["level"], "INFO", "{first}");
    let applied: Vec<serde_json::Value> = log_events(&log).into_iter().filter(|v| v["message"] == "applied migration").collect();
    assert!(applied.len() > 1 && applied.iter().all(|v| v["migration"].as_str().is_some_and(|m| m.len() > 5 && m[..4].bytes().all(|b| b.is_ascii_digit()))), "{applied:?}");
}
