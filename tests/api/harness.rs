//! Starting and stopping the real binary, admin commands, and an HTTP client.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// A temp data dir removed on drop.
pub struct DataDir(pub PathBuf);

impl DataDir {
    pub fn new() -> DataDir {
        let p = std::env::temp_dir().join(format!("switchboard-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&p).unwrap();
        DataDir(p)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        // A failed test's files stay for a look when asked to.
        if std::thread::panicking() && std::env::var_os("SWITCHBOARD_KEEP_FAILED").is_some() {
            eprintln!("kept {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A port nothing listens on now, and one this test process has not handed
/// out before: between this call and the server's bind the port is free,
/// and two tests running side by side could otherwise be given the same
/// one. The server that lost the bind exits, but the harness would already
/// have found the other test's server answering there and used it (keys of
/// another data dir: "the API key is not valid").
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..1000 {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
    panic!("no port left that this test process has not used");
}

/// Passed to every server the harness starts: the tests' webhook receivers
/// and fake provider APIs listen on 127.0.0.1, which a server refuses as a
/// target by default.
pub const ALLOW_PRIVATE: &str = "--webhook-allow-private";

/// Put among a server's flags to start it without [`ALLOW_PRIVATE`], on
/// the secure default (this marker itself is not passed on).
pub const SECURE_DEFAULT: &str = "(without --webhook-allow-private)";

/// The key of secret plugin settings at rest that every server and admin
/// command the harness starts gets (`SWITCHBOARD_SETTINGS_KEY`; without it
/// a secret setting is refused). Put [`NO_SETTINGS_KEY`] among a server's
/// flags to start it without.
pub const SETTINGS_KEY: &str = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";
pub const NO_SETTINGS_KEY: &str = "(without SWITCHBOARD_SETTINGS_KEY)";

/// A running server; stopped (by pid) on drop.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub data_dir: PathBuf,
    http: reqwest::blocking::Client,
    /// What must live as long as this server and stop after it (the edge
    /// target's primary and dispatcher node).
    pub companions: Vec<Box<dyn std::any::Any + Send + Sync>>,
}

impl Server {
    pub fn start(dir: &Path) -> Server {
        Self::start_with(dir, &[])
    }

    /// A server on `dir` with `extra` flags. With `SWITCHBOARD_TEST_EDGE=1`
    /// (see [`edge_target`]) it is the edge build instead, and `extra` goes
    /// to its dispatcher node.
    pub fn start_with(dir: &Path, extra: &[&str]) -> Server {
        if edge_target() {
            return crate::edge::start(dir, extra);
        }
        Self::spawn(dir, extra, Stdio::null())
    }

    /// Like `start_with`, with the server's log (stderr) written to `log`.
    pub fn start_logged(dir: &Path, extra: &[&str], log: &Path) -> Server {
        Self::spawn(dir, extra, std::fs::File::create(log).expect("create the log file").into())
    }

    fn spawn(dir: &Path, extra: &[&str], stderr: Stdio) -> Server {
        Self::spawn_command(Command::new(BIN), dir, extra, stderr)
    }

    /// Starts the server from `command` (the binary itself, or a shell that
    /// execs it, e.g. to close a descriptor first), its stderr as given.
    /// A `--listen ADDR` in `extra` (the last flag wins) keeps a port: a
    /// node restarted where its clients expect it. The server gets
    /// [`ALLOW_PRIVATE`] unless `extra` holds [`SECURE_DEFAULT`].
    pub fn spawn_command(mut command: Command, dir: &Path, extra: &[&str], stderr: Stdio) -> Server {
        let listen = extra.windows(2).filter(|w| w[0] == "--listen").map(|w| w[1].to_string()).next_back();
        let addr = listen.unwrap_or_else(|| format!("127.0.0.1:{}", free_port()));
        let allow: &[&str] = if extra.contains(&SECURE_DEFAULT) { &[] } else { &[ALLOW_PRIVATE] };
        if !extra.contains(&NO_SETTINGS_KEY) {
            command.env("SWITCHBOARD_SETTINGS_KEY", SETTINGS_KEY);
        }
        let extra = extra.iter().filter(|f| **f != SECURE_DEFAULT && **f != NO_SETTINGS_KEY);
        let child = command.args(["serve", "--listen", &addr, "--data-dir"]).arg(dir).args(allow).args(extra).stdout(Stdio::null()).stderr(stderr).spawn().expect("start switchboard");
        Self::attach(child, format!("http://{addr}"), dir)
    }

    /// A server already started as `child`, once it answers at `base`.
    pub fn attach(child: Child, base: String, dir: &Path) -> Server {
        let mut s = Server { child, base, data_dir: dir.to_path_buf(), http: reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap(), companions: Vec::new() };
        let started = Instant::now();
        loop {
            if s.http.get(format!("{}/api/v1/openapi.json", s.base)).send().is_ok_and(|r| r.status() == 200) {
                return s;
            }
            if let Some(status) = s.child.try_wait().unwrap() {
                panic!("the server exited before it answered: {status}");
            }
            assert!(started.elapsed() < Duration::from_secs(120), "server did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then wait for the process to exit; returns its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let started = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = self.child.kill();
                panic!("server did not stop after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn admin(&self, args: &[&str]) -> Value {
        admin(&self.data_dir, args)
    }

    pub fn req(&self) -> Req<'_> {
        Req { server: self, key: None, idem: None }
    }

    /// A metric's value in the node's `/metrics` text (0 when absent);
    /// `name` includes its labels as the exporter writes them.
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.req().get("/metrics").text;
        text.lines().find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' '))).map_or(0.0, |v| v.trim().parse().unwrap())
    }

    pub fn as_key<'a>(&'a self, key: &'a str) -> Req<'a> {
        Req { server: self, key: Some(key.to_string()), idem: None }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// True when the API tests run against the edge build (`SWITCHBOARD_TEST_EDGE=1`,
/// set by `./dev test` for the foundation's tests; see tests/api/edge.rs).
pub fn edge_target() -> bool {
    std::env::var("SWITCHBOARD_TEST_EDGE").as_deref() == Ok("1")
}

/// The primary a data dir works against, when it does: the edge target
/// writes its sqld's URL into the test's data dir.
pub fn primary_of(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(PRIMARY_MARKER)).ok()
}

/// The file naming a data dir's primary (see [`primary_of`]).
pub const PRIMARY_MARKER: &str = ".test-primary-url";

/// Runs `switchboard admin --data-dir DIR ARGS…` and parses its JSON output
/// (at the dir's primary, when it has one).
pub fn admin(dir: &Path, args: &[&str]) -> Value {
    let mut command = Command::new(BIN);
    command.arg("admin").arg("--data-dir").arg(dir).env("SWITCHBOARD_SETTINGS_KEY", SETTINGS_KEY);
    if let Some(url) = primary_of(dir) {
        command.arg("--primary-url").arg(url);
    }
    let out = command.args(args).output().unwrap();
    assert!(out.status.success(), "admin {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A business and an API key for it.
pub struct Tenant {
    pub business: String,
    pub key: String,
    pub key_id: String,
}

/// A business placed as `business create` places it by default (beside a
/// local main, in a database of its own) and a key for it.
pub fn tenant(dir: &Path, scopes: &str) -> Tenant {
    let business = admin(dir, &["business", "create", "--name", "Test Co"])["businessId"].as_str().unwrap().to_string();
    let k = admin(dir, &["key", "create", "--business", &business, "--scopes", scopes]);
    Tenant { business, key: k["apiKey"].as_str().unwrap().into(), key_id: k["keyId"].as_str().unwrap().into() }
}

pub struct Req<'a> {
    server: &'a Server,
    key: Option<String>,
    idem: Option<String>,
}

/// A response: status, headers of interest, parsed JSON body.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub body: Value,
    pub text: String,
    pub request_id: Option<String>,
    pub replayed: bool,
    pub headers: reqwest::header::HeaderMap,
}

impl From<reqwest::blocking::Response> for Resp {
    /// Reads the status, the headers of interest and the body (JSON when it parses).
    fn from(r: reqwest::blocking::Response) -> Resp {
        let status = r.status().as_u16();
        let request_id = r.headers().get("x-request-id").map(|v| v.to_str().unwrap().to_string());
        let replayed = r.headers().get("idempotent-replayed").is_some();
        let headers = r.headers().clone();
        let text = r.text().unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp { status, body, text, request_id, replayed, headers }
    }
}

impl Resp {
    /// A response header ("" when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    pub fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }
    /// Asserts the failure envelope is complete and consistent.
    pub fn assert_failure(&self, status: u16, category: &str) -> &Self {
        assert_eq!(self.status, status, "{}", self.text);
        let e = &self.body["error"];
        assert_eq!(self.body["ok"], json!(false), "{}", self.text);
        assert_eq!(e["category"], json!(category), "{}", self.text);
        assert!(e["code"].as_str().is_some_and(|c| !c.is_empty()), "{}", self.text);
        assert!(e["message"].as_str().is_some_and(|c| !c.is_empty()), "{}", self.text);
        assert!(e["retryable"].is_boolean(), "{}", self.text);
        let rid = e["requestId"].as_str().unwrap();
        assert_eq!(self.body["meta"]["requestId"].as_str(), Some(rid));
        assert_eq!(self.request_id.as_deref(), Some(rid));
        self
    }
    pub fn assert_ok(&self, status: u16) -> &Value {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.body["ok"], json!(true), "{}", self.text);
        assert!(self.body["meta"]["requestId"].as_str().is_some_and(|r| r.len() == 36));
        &self.body["data"]
    }
}

impl<'a> Req<'a> {
    pub fn idem(mut self, key: &str) -> Self {
        self.idem = Some(key.to_string());
        self
    }
    /// A fresh random Idempotency-Key.
    pub fn fresh(self) -> Self {
        let k = uuid::Uuid::new_v4().to_string();
        self.idem(&k)
    }

    pub fn get(&self, path_and_query: &str) -> Resp {
        self.send("GET", path_and_query, None)
    }
    pub fn post(&self, path: &str, body: &Value) -> Resp {
        self.send("POST", path, Some(body.to_string()))
    }
    pub fn patch(&self, path: &str, body: &Value) -> Resp {
        self.send("PATCH", path, Some(body.to_string()))
    }
    pub fn delete(&self, path: &str, body: &Value) -> Resp {
        self.send("DELETE", path, Some(body.to_string()))
    }

    pub fn send(&self, method: &str, path: &str, body: Option<String>) -> Resp {
        let url = format!("{}{}", self.server.base, path);
        let mut rb = self.server.http.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
        if let Some(k) = &self.key {
            rb = rb.header("authorization", format!("Bearer {k}"));
        }
        if let Some(i) = &self.idem {
            rb = rb.header("idempotency-key", i.as_str());
        }
        if let Some(b) = body {
            rb = rb.header("content-type", "application/json").body(b);
        }
        Resp::from(rb.send().expect("request"))
    }
}

/// A validator over the OpenAPI document's schemas, for checking that
/// success `data` conforms.
pub fn document_schemas() -> switchboard_gateway::validate::Validator {
    let doc = switchboard_gateway::Gateway::new().unwrap().document().clone();
    switchboard_gateway::validate::Validator::new(doc["components"]["schemas"].as_object().unwrap().clone(), &[]).unwrap()
}

/// Python that finds a local data dir's database files
/// (`files(data, statement)`): beside a local main, a business has a
/// database of its own by default (`databases/NAME/switchboard.db`, its
/// placement in main's `businesses.database`). A statement that names the
/// ids of businesses of one database belongs to that database's file; any
/// other (a job's or a message's id, a count over the data dir), or none
/// (`None`), to every file, main's first.
const PLACEMENT_PY: &str = r#"import os, sqlite3, sys
def ro(path):
    return sqlite3.connect('file:' + path + '?mode=ro', uri=True, timeout=30)
def files(data, statement):
    main = os.path.join(data, 'switchboard.db')
    c = ro(main)
    try:
        if not c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'databases'").fetchone():
            return [main]
        names = [r[0] for r in c.execute('SELECT name FROM databases ORDER BY name')]
        path = lambda n: main if n == 'main' else os.path.join(data, 'databases', n, 'switchboard.db')
        if not names:
            return [main]
        if statement is not None:
            s = statement.lower()
            named = {d for (b, d) in c.execute('SELECT id, database FROM businesses') if b in s}
            if len(named) == 1:
                return [path(named.pop())]
        return [main] + [path(n) for n in names]
    finally:
        c.close()
"#;

/// The database files of a local data dir that `statement` belongs to: the
/// file of the business whose id it names, else every file, main's first
/// (see [`PLACEMENT_PY`]). A write by a row's id goes to each of them (only
/// the one holding the row changes).
pub fn database_files(dir: &Path, statement: &str) -> Vec<PathBuf> {
    let script = format!("{PLACEMENT_PY}\nfor f in files(sys.argv[1], sys.argv[2]): print(f)");
    let out = Command::new("python3").arg("-c").arg(script).arg(dir).arg(statement).output().expect("python3");
    assert!(out.status.success(), "placement failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(PathBuf::from).collect()
}

/// Runs read-only SQL against a data dir's database (python3's sqlite3, so
/// no extra tool is needed) and returns the rows as `a|b|c` lines. A local
/// data dir may hold several databases (a business has one of its own by
/// default): a query that names the ids of businesses of one database
/// reads that database's file, where all their rows are; any other reads
/// the data dir as the one file it was before, each table a temporary view
/// over main's and every other database's rows (`businesses` is main's,
/// which lists every business once).
pub fn sql(dir: &Path, query: &str) -> String {
    if let Some(url) = primary_of(dir) {
        return crate::primary::sql_at(&url, query);
    }
    let script = format!(
        "{PLACEMENT_PY}{}",
        r#"
fs = files(sys.argv[1], sys.argv[2])
c = ro(fs[0])
if len(fs) > 1:
    for i, f in enumerate(fs[1:]):
        c.execute('ATTACH DATABASE ? AS ?', ('file:' + f + '?mode=ro', 'd%d' % i))
    tables = c.execute("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'businesses' AND sql NOT LIKE 'CREATE VIRTUAL%'").fetchall()
    for (t,) in tables:
        parts = ['SELECT * FROM main."%s"' % t] + ['SELECT * FROM d%d."%s"' % (i, t) for i in range(len(fs) - 1) if c.execute('SELECT 1 FROM d%d.sqlite_master WHERE name = ?' % i, (t,)).fetchone()]
        c.execute('CREATE TEMP VIEW "%s" AS %s' % (t, ' UNION ALL '.join(parts)))
for q in sys.argv[2].split(';'):
    q = q.strip()
    if q:
        for r in c.execute(q): print('|'.join(str(x) for x in r))
"#
    );
    let out = Command::new("python3").arg("-c").arg(script).arg(dir).arg(query).output().expect("python3");
    assert!(out.status.success(), "sql failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Canonical base64 (RFC 4648, padded), for upload bodies.
pub fn b64(input: &[u8]) -> String {
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            out.push(if i <= chunk.len() { B64[((n >> (18 - 6 * i)) & 63) as usize] as char } else { '=' });
        }
    }
    out
}

// ---- A webhook receiver (shared by the delivery and messaging tests) ----

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Delivery {
    pub fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).unwrap_or("")
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

pub enum Reply {
    Status(u16),
    /// Answer nothing for this long (the service's timeout is shorter).
    Hang(Duration),
}

/// A webhook receiver on a loopback port, answering from a script (200 once
/// the script runs out).
pub struct Receiver {
    pub port: u16,
    got: Arc<Mutex<Vec<Delivery>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        Self::on(TcpListener::bind("127.0.0.1:0").unwrap())
    }
    pub fn on(listener: TcpListener) -> Receiver {
        Self::serve(listener, false)
    }
    /// A receiver that answers every connection on a thread of its own, so a
    /// hanging reply does not hold up the next request.
    pub fn concurrent() -> Receiver {
        Self::serve(TcpListener::bind("127.0.0.1:0").unwrap(), true)
    }
    fn serve(listener: TcpListener, concurrent: bool) -> Receiver {
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let (g, sc) = (got.clone(), script.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (g, sc) = (g.clone(), sc.clone());
                if concurrent {
                    std::thread::spawn(move || answer_one(stream, &g, &sc));
                } else {
                    answer_one(stream, &g, &sc);
                }
            }
        });
        Receiver { port, got, script }
    }
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }
    pub fn script(&self, replies: Vec<Reply>) {
        self.script.lock().unwrap().extend(replies);
    }
    pub fn got(&self) -> Vec<Delivery> {
        self.got.lock().unwrap().clone()
    }
    /// Waits (bounded) until at least `n` requests arrived.
    pub fn wait_for(&self, n: usize) -> Vec<Delivery> {
        let started = Instant::now();
        loop {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "got {} of {n} deliveries", got.len());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// One HTTP/1.1 request read from a test server's connection.
pub struct ServedRequest {
    pub request_line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Reads one request (request line, headers, a `Content-Length` body);
/// `None` when the client sent nothing.
pub fn read_request(stream: &std::net::TcpStream) -> Option<ServedRequest> {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        let h = h.trim_end().to_string();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap();
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let len: usize = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length")).map(|(_, v)| v.parse().unwrap()).unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    Some(ServedRequest { request_line: line.trim().to_string(), headers, body })
}

/// Answers `200` with a JSON body and closes.
pub fn answer_json(mut stream: &std::net::TcpStream, json: &str) {
    write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{json}", json.len()).unwrap();
}

/// Reads one request, records it, answers from the script.
fn answer_one(mut stream: std::net::TcpStream, g: &Mutex<Vec<Delivery>>, sc: &Mutex<VecDeque<Reply>>) {
    let Some(request) = read_request(&stream) else { return };
    g.lock().unwrap().push(Delivery { headers: request.headers, body: String::from_utf8(request.body).unwrap() });
    let reply = sc.lock().unwrap().pop_front().unwrap_or(Reply::Status(200));
    let code = match reply {
        Reply::Status(c) => c,
        Reply::Hang(d) => {
            std::thread::sleep(d);
            200
        }
    };
    let _ = write!(stream, "HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

pub fn hmac_sha256_hex(key: &[u8], msg: &[u8]) -> String {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).chain(msg.iter().copied()).collect();
    let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).chain(Sha256::digest(&inner)).collect();
    hex::encode(Sha256::digest(&outer))
}

/// What a careful receiver checks before accepting an event.
pub fn verify(d: &Delivery, secret: &str) -> bool {
    let ts = d.header("X-Service-Timestamp");
    let fresh = ts.parse::<i64>().is_ok_and(|t| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
        (now - t).abs() <= 300
    });
    let expected = hmac_sha256_hex(secret.as_bytes(), format!("{ts}.{}", d.body).as_bytes());
    fresh && expected == d.header("X-Service-Signature")
}

/// Polls (bounded, 60 s) until `f` returns `Some`.
pub fn poll<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    poll_within(what, Duration::from_secs(60), f)
}

/// Polls until `f` returns `Some`, failing after `bound`.
pub fn poll_within<T>(what: &str, bound: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(started.elapsed() < bound, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (bounded) until a job is done; a dead job fails the test.
pub fn wait_done(dir: &Path, job_id: &str) {
    poll(&format!("job {job_id}"), || {
        let state = sql(dir, &format!("SELECT state FROM jobs WHERE id = '{job_id}'"));
        match state.trim() {
            "done" => Some(()),
            "dead" => panic!("job {job_id} is dead: {}", sql(dir, &format!("SELECT last_error FROM jobs WHERE id = '{job_id}'"))),
            _ => None,
        }
    });
}

/// A server whose plugin folder holds one adapter plugin (`name`, built as
/// `wasm`) with its crate's own manifest, the API host it names (`api_host`,
/// as the manifest quotes it) replaced by a fake's `localhost:PORT`; the
/// server's log shows it loaded. (server, plugin folder, log file).
pub fn serve_adapter_plugin(data: &DataDir, name: &str, wasm: &str, api_host: &str, fake_port: u16) -> (Server, String, PathBuf) {
    let plugins = data.0.join("plugins");
    let folder = plugins.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(wasm, folder.join("plugin.wasm")).unwrap();
    let manifest = std::fs::read_to_string(format!("{}/../components/{name}/plugin.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    std::fs::write(folder.join("plugin.toml"), manifest.replace(&format!("\"{api_host}\""), &format!("\"localhost:{fake_port}\""))).unwrap();
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", plugins.to_str().unwrap()], &log);
    plugins_loaded(&log, 1);
    assert!(logged(&log, "plugin loaded", &[("name", name)]));
    (s, plugins.to_str().unwrap().to_string(), log)
}

/// The server's log once it contains `needle` (the log is written by a
/// background thread, a moment after the request it describes), or as it
/// is after ten seconds.
pub fn log_containing(log: &Path, needle: &str) -> String {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) || started.elapsed() > Duration::from_secs(10) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The events of a JSON log (a line that is not JSON is skipped).
pub fn log_events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The first event of the log whose `message` is `message` and that
/// `matches`, waiting up to 10 s for it to be written.
pub fn log_event(log: &Path, message: &str, matches: impl Fn(&Value) -> bool) -> Option<Value> {
    let started = Instant::now();
    loop {
        if let Some(v) = log_events(log).into_iter().find(|v| v["message"] == message && matches(v)) {
            return Some(v);
        }
        if started.elapsed() > Duration::from_secs(10) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (up to 10 s) for the plugin registry's `plugins loaded` event of
/// `count` plugins; panics without one.
pub fn plugins_loaded(log: &Path, count: u64) {
    let found = log_event(log, "plugins loaded", |v| v["loaded"] == count);
    assert!(found.is_some(), "{count} plugins loaded: {}", std::fs::read_to_string(log).unwrap_or_default());
}

/// Whether the log has (or gets within 10 s) the event `message` whose
/// fields have these text values.
pub fn logged(log: &Path, message: &str, fields: &[(&str, &str)]) -> bool {
    log_event(log, message, |v| fields.iter().all(|(k, want)| v[*k] == *want)).is_some()
}

/// Panics unless a success answer's `data` matches the response schema the
/// OpenAPI document gives the operation at `method` `path` (a query string
/// is ignored).
pub fn assert_documented(schemas: &switchboard_gateway::validate::Validator, method: &str, path: &str, r: &Resp) {
    use switchboard_gateway::operations::{route, Response, RouteMatch};
    let path = path.split('?').next().unwrap();
    let RouteMatch::Found(op, _) = route(method, path) else { panic!("no route {method} {path}") };
    let Response::Json(name) = op.response else { panic!("not JSON") };
    if let Err(v) = schemas.validate(&json!({"$ref": format!("#/components/schemas/{name}")}), r.data()) {
        panic!("{method} {path}: data does not match {name}: {:?}\n{}", v.iter().map(|v| &v.message).collect::<Vec<_>>(), r.text);
    }
}
