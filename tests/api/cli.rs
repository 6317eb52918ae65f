//! The command line: clap's help, version and refusals (exit status 2),
//! settings checked at start with a message naming them, `admin` never
//! creating a data dir silently, and the shutdown limit as a setting.

use crate::harness::*;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("SWITCHBOARD_DATA_DIR").output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_and_version_on_every_command() {
    let v = run(&["--version"]);
    assert!(v.status.success());
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("switchboard "), "{v:?}");
    for cmd in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["admin", "--help"],
        vec!["admin", "business", "--help"],
        vec!["admin", "business", "list", "--help"],
        vec!["admin", "key", "create", "--help"],
        vec!["admin", "channel", "connect", "--help"],
        vec!["admin", "sandbox", "inbound", "--help"],
    ] {
        let o = run(&cmd);
        assert!(o.status.success(), "{cmd:?}: {}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("Usage:"), "{cmd:?}");
    }
    // Every serve flag names its environment variable.
    let help = String::from_utf8_lossy(&run(&["serve", "--help"]).stdout).into_owned();
    for env in [
        "SWITCHBOARD_LISTEN",
        "SWITCHBOARD_DATA_DIR",
        "SWITCHBOARD_REQUEST_TIMEOUT_MS",
        "SWITCHBOARD_SHUTDOWN_TIMEOUT_MS",
        "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE",
        "SWITCHBOARD_WEBHOOK_LOG_RETENTION_DAYS",
        "SWITCHBOARD_JOB_CONCURRENCY",
        "SWITCHBOARD_DURABILITY",
    ] {
        assert!(help.contains(env), "serve --help names {env}");
    }
}

#[test]
fn stray_arguments_unknown_flags_and_bad_settings_are_refused_before_start() {
    let dir = DataDir::new();
    let d = dir.0.to_str().unwrap();
    let refused = |args: &[&str], names: &str| {
        let mut all = args.to_vec();
        all.extend(["--data-dir", d]);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?} must be refused with 2: {}", stderr(&o));
        assert!(stderr(&o).contains(names), "{args:?}: the message names {names}: {}", stderr(&o));
    };
    // Today's trap: a positional address no longer binds the default one.
    refused(&["serve", "0.0.0.0:9000"], "0.0.0.0:9000");
    refused(&["serve", "--lisen", "127.0.0.1:1"], "--lisen");
    refused(&["serve", "--listen", "nope"], "--listen");
    refused(&["serve", "--request-timeout-ms", "0"], "--request-timeout-ms");
    refused(&["serve", "--request-timeout-ms", "-5"], "-5");
    refused(&["serve", "--shutdown-timeout-ms", "0"], "--shutdown-timeout-ms");
    refused(&["serve", "--webhook-timeout-ms", "soon"], "--webhook-timeout-ms");
    refused(&["serve", "--webhook-retry-delays-ms", ""], "--webhook-retry-delays-ms");
    refused(&["serve", "--webhook-retry-delays-ms", "10,x"], "--webhook-retry-delays-ms");
    refused(&["serve", "--job-concurrency", "0"], "--job-concurrency");
    refused(&["serve", "--webhook-log-retention-days", "0"], "--webhook-log-retention-days");
    // The former opt-in is the default now: still taken alone, never with
    // its opposite.
    refused(&["serve", "--webhook-public-only", "--webhook-allow-private"], "--webhook-public-only");
    refused(&["serve", "--durability", "maybe"], "--durability");
    refused(&["serve", "--ai-endpoint", "http://127.0.0.1:1/v1"], "--ai-model");
    refused(&["serve", "--ai-endpoint", "not a url", "--ai-model", "m"], "--ai-endpoint");
    refused(&["admin", "business", "create"], "--name");
    refused(&["admin", "key", "make"], "make");
    refused(&["admin", "channel", "connect", "--business", "b", "--channel", "chatapp"], "--phone-number-id");
    // A setting from the environment is checked the same way.
    let o = Command::new(BIN).args(["serve", "--data-dir", d]).env("SWITCHBOARD_REQUEST_TIMEOUT_MS", "0").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--request-timeout-ms"), "{}", stderr(&o));
    // Nothing was started: the data dir holds no database.
    assert!(!dir.0.join("switchboard.db").exists());
}

#[test]
fn admin_refuses_a_missing_data_dir_unless_asked_to_create_it() {
    let parent = DataDir::new();
    let typo = parent.0.join("dta");
    let t = typo.to_str().unwrap();
    let o = run(&["admin", "--data-dir", t, "business", "create", "--name", "Acme"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist") && stderr(&o).contains("--create"), "{}", stderr(&o));
    assert!(!typo.exists(), "a mistyped data dir is not created");

    let o = run(&["admin", "--data-dir", t, "--create", "business", "create", "--name", "Acme"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("data dir") && stderr(&o).contains("dta"), "admin says which data dir it used: {}", stderr(&o));
    let acme: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let second = admin(&typo, &["business", "create", "--name", "Bolt"]);

    // The environment variable names the dir too.
    let o = Command::new(BIN).args(["admin", "business", "list"]).env("SWITCHBOARD_DATA_DIR", &typo).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let list: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let list = list["businesses"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["businessId"], acme["businessId"]);
    assert_eq!(list[0]["name"], "Acme");
    assert_eq!(list[1]["businessId"], second["businessId"]);
    assert!(list[1]["createdAt"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn a_stop_waits_for_requests_in_flight_only_as_long_as_the_shutdown_limit() {
    let dir = DataDir::new();
    let testbed = env!("SWITCHBOARD_TESTBED_WASM");
    let mut s = Server::start_with(&dir.0, &["--component-override", &format!("contacts={testbed}"), "--request-timeout-ms", "60000", "--shutdown-timeout-ms", "500"]);
    let t = tenant(&dir.0, "all");
    // A request that loops until its 60 s deadline.
    let url = format!("{}/api/v1/contacts?businessId={}&search=1000", s.base, t.business);
    let key = t.key.clone();
    std::thread::spawn(move || {
        let _ = reqwest::blocking::Client::new().get(url).bearer_auth(key).timeout(Duration::from_secs(90)).send();
    });
    std::thread::sleep(Duration::from_millis(500));
    let stopping = Instant::now();
    let status = s.terminate();
    assert!(status.success(), "{status:?}");
    assert!(stopping.elapsed() < Duration::from_secs(20), "stopped after {:?}, not after the 60 s request", stopping.elapsed());
}

/// A stop ends every background loop of the node and joins it before
/// `stopped`: each loop's end is logged by its name, none ended early or
/// panicked, and the count of loops joined is every loop started.
#[test]
fn a_stop_ends_and_joins_every_background_loop() {
    let dir = DataDir::new();
    let log = dir.0.join("stop.log");
    let metrics = free_port();
    let mut s = Server::start_logged(&dir.0, &["--metrics-listen", &format!("127.0.0.1:{metrics}")], &log);
    let t = tenant(&dir.0, "all");
    assert_eq!(s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}", t.business)).status, 200);
    assert!(s.terminate().success());
    let events = log_events(&log);
    let ended: Vec<&str> = events.iter().filter(|e| e["message"] == "background loop ended").filter_map(|e| e["loop"].as_str()).collect();
    for name in ["maintenance", "databases", "usage", "metrics", "plugin-reloads", "checkpoints:main", "jobs:main"] {
        assert!(ended.contains(&name), "the loop {name} ended at the stop: {ended:?}");
    }
    let early: Vec<&serde_json::Value> = events.iter().filter(|e| e["message"].as_str().is_some_and(|m| m.starts_with("background loop ") && m != "background loop ended")).collect();
    assert!(early.is_empty(), "no loop ended early or panicked: {early:?}");
    let joined = events.iter().position(|e| e["message"] == "background loops ended").expect("the loops were joined");
    assert_eq!(events[joined]["loops"].as_u64(), Some(ended.len() as u64), "every loop started was joined");
    let stopped = events.iter().position(|e| e["message"] == "stopped").expect("stopped");
    assert!(joined < stopped, "joined before the stop completed");
}

#[test]
fn a_pid_file_names_the_server_until_it_stops() {
    let dir = DataDir::new();
    let pid_file = dir.0.join("switchboard.pid");
    let mut s = Server::start_with(&dir.0, &["--pid-file", pid_file.to_str().unwrap()]);
    let written = std::fs::read_to_string(&pid_file).expect("the pid file exists while the server runs");
    assert_eq!(written.trim(), s.child.id().to_string());
    assert!(s.terminate().success());
    assert!(!pid_file.exists(), "a graceful stop removes it");
}

/// One `warn` line at start names every unsafe setting in force, and a
/// server on safe settings (https public URL, the secure defaults) logs none.
#[test]
fn serve_names_the_unsafe_settings_in_force_in_one_line_at_start() {
    let dir = DataDir::new();
    let log = dir.0.join("unsafe.log");
    let mut s = Server::start_logged(&dir.0, &["--rate-limit-key", "0", "--max-in-flight", "0", "--sandbox-routes"], &log);
    let text = log_containing(&log, "unsafe settings in force");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("unsafe settings in force")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(line["level"], "WARN", "{line}");
    assert_eq!(line["message"], "unsafe settings in force", "{line}");
    let settings = line["settings"].as_str().unwrap();
    for named in ["--webhook-allow-private", "--rate-limit-key 0", "--max-in-flight 0", "--sandbox-routes", "without Secure"] {
        assert!(settings.contains(named), "names {named}: {settings}");
    }
    for safe in ["--rate-limit-business", "--component-override"] {
        assert!(!settings.contains(safe), "{safe} is not in force: {settings}");
    }
    s.terminate();

    let log = dir.0.join("safe.log");
    // (With the former opt-in to the secure default, which changes nothing.)
    let mut s = Server::start_logged(&dir.0, &[SECURE_DEFAULT, "--public-url", "https://api.example.com", "--webhook-public-only"], &log);
    s.terminate();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("listening on"), "{text}");
    assert!(!text.contains("unsafe settings"), "{text}");
}
