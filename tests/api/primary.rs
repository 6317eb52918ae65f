//! A real libSQL server (sqld) for the tests of several nodes and of the
//! edge build: installed by tests/sqld/ensure.py, one per test on a free
//! loopback port, stopped by pid on drop.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

/// The sqld binary: `SWITCHBOARD_SQLD`, else what tests/sqld/ensure.py
/// installs (once per test run).
fn sqld_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        if let Ok(p) = std::env::var("SWITCHBOARD_SQLD") {
            return PathBuf::from(p);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sqld/ensure.py");
        let out = Command::new("python3").arg(script).stderr(Stdio::inherit()).output().expect("python3");
        assert!(out.status.success(), "tests/sqld/ensure.py could not provide sqld");
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

/// A real libSQL server (sqld) on a free loopback port, stopped by pid on drop.
pub struct Sqld {
    child: Child,
    port: u16,
    pub url: String,
    dir: DataDir,
    http: reqwest::blocking::Client,
    /// With namespaces on (`with_namespaces`): the admin API's port.
    admin_port: Option<u16>,
    /// The namespace `sql` and `count` run in (`x-namespace-bin`).
    namespace: String,
    /// `--max-log-size` in MB (`compacting_every`), else sqld's 200.
    max_log_mb: Option<u32>,
}

impl Sqld {
    pub fn start() -> Sqld {
        Self::start_on(None, None)
    }

    /// A sqld with `--enable-namespaces` and its admin API, serving the
    /// `default` namespace as a plain one does.
    pub fn with_namespaces() -> Sqld {
        Self::start_on(Some(free_port()), None)
    }

    /// A sqld that compacts its replication log every `mb` megabytes
    /// (`--max-log-size`), which it does past 200 by default.
    pub fn compacting_every(mb: u32) -> Sqld {
        Self::start_on(None, Some(mb))
    }

    fn start_on(admin_port: Option<u16>, max_log_mb: Option<u32>) -> Sqld {
        let dir = DataDir::new();
        let port = free_port();
        let child = Self::spawn(&dir.0, port, admin_port, max_log_mb);
        let s = Sqld { child, port, url: format!("http://127.0.0.1:{port}"), dir, http: reqwest::blocking::Client::new(), admin_port, namespace: "default".into(), max_log_mb };
        s.wait_healthy();
        if admin_port.is_some() {
            s.create_namespace("default");
        }
        s
    }

    fn spawn(dir: &Path, port: u16, admin_port: Option<u16>, max_log_mb: Option<u32>) -> Child {
        let mut command = Command::new(sqld_binary());
        command.args(["--no-welcome", "--http-listen-addr", &format!("127.0.0.1:{port}"), "--db-path"]).arg(dir.join("primary"));
        if let Some(mb) = max_log_mb {
            command.args(["--max-log-size", &mb.to_string()]);
        }
        if let Some(admin) = admin_port {
            command.args(["--enable-namespaces", "--admin-listen-addr", &format!("127.0.0.1:{admin}")]);
        }
        command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start sqld")
    }

    /// Creates a namespace through the admin API (an existing one is kept).
    pub fn create_namespace(&self, name: &str) {
        let admin = self.admin_port.expect("a sqld started with_namespaces");
        let r = self.http.post(format!("http://127.0.0.1:{admin}/v1/namespaces/{name}/create")).json(&json!({})).send().expect("admin API");
        assert!(r.status().is_success() || r.text().unwrap_or_default().contains("already exists"), "creating namespace {name}");
    }

    /// The same server, its `sql` and `count` run in the namespace `name`.
    pub fn in_namespace(&self, name: &str) -> NamespaceOf<'_> {
        NamespaceOf(self, name.to_string())
    }

    /// Snapshots of a compacted replication log sqld has written.
    pub fn snapshots(&self) -> usize {
        fn count(dir: &Path) -> usize {
            std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| if e.path().is_dir() { count(&e.path()) } else { usize::from(e.path().extension().is_some_and(|x| x == "snap")) }).sum()
        }
        count(&self.dir.0.join("primary"))
    }

    fn wait_healthy(&self) {
        poll("sqld /health", || self.http.get(format!("{}/health", self.url)).send().ok().filter(|r| r.status() == 200));
    }

    /// Stops the primary (SIGTERM, by pid) and keeps it down until `up`.
    pub fn stop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }

    /// Starts it again on the same port and database.
    pub fn up(&mut self) {
        self.child = Self::spawn(&self.dir.0, self.port, self.admin_port, self.max_log_mb);
        self.wait_healthy();
    }

    /// Runs one statement at the primary (its own HTTP protocol, a Hrana
    /// pipeline) and returns the rows, each value as text.
    pub fn sql(&self, stmt: &str) -> Vec<Vec<String>> {
        self.sql_in(&self.namespace, stmt)
    }

    fn sql_in(&self, namespace: &str, stmt: &str) -> Vec<Vec<String>> {
        let body = json!({"requests": [{"type": "execute", "stmt": {"sql": stmt}}, {"type": "close"}]});
        // The namespace in base64 without padding (sqld with namespaces on
        // reads it; one without ignores it).
        let ns = crate::harness::b64(namespace.as_bytes()).trim_end_matches('=').to_string();
        let r: Value = self.http.post(format!("{}/v2/pipeline", self.url)).header("x-namespace-bin", ns).json(&body).send().expect("pipeline").json().expect("json");
        let result = &r["results"][0];
        assert_eq!(result["type"], "ok", "{stmt}: {r}");
        result["response"]["result"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| match &v["value"] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    })
                    .collect()
            })
            .collect()
    }

    pub fn count(&self, stmt: &str) -> i64 {
        self.sql(stmt)[0][0].parse().unwrap()
    }
}

/// A namespace of a [`Sqld`].
pub struct NamespaceOf<'a>(&'a Sqld, String);

impl NamespaceOf<'_> {
    pub fn count(&self, stmt: &str) -> i64 {
        self.0.sql_in(&self.1, stmt)[0][0].parse().unwrap()
    }
}

impl Drop for Sqld {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `;`-separated statements at the primary at `url`; the rows as
/// `sql()` prints them for a local data dir (`|` between values).
pub fn sql_at(url: &str, query: &str) -> String {
    let http = reqwest::blocking::Client::new();
    let mut out = String::new();
    for stmt in query.split(';').map(str::trim).filter(|q| !q.is_empty()) {
        let body = json!({"requests": [{"type": "execute", "stmt": {"sql": stmt}}, {"type": "close"}]});
        let r: Value = http.post(format!("{url}/v2/pipeline")).json(&body).send().expect("pipeline").json().expect("json");
        let result = &r["results"][0];
        assert_eq!(result["type"], "ok", "{stmt}: {r}");
        for row in result["response"]["result"]["rows"].as_array().unwrap() {
            let cells: Vec<String> = row
                .as_array()
                .unwrap()
                .iter()
                .map(|v| match v["type"].as_str() {
                    Some("null") => "None".to_string(),
                    Some("float") => v["value"].to_string(),
                    _ => v["value"].as_str().unwrap_or_default().to_string(),
                })
                .collect();
            out.push_str(&cells.join("|"));
            out.push('\n');
        }
    }
    out
}
