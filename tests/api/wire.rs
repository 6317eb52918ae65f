//! The answers hyper gives by itself, before any service runs, to a request
//! it cannot parse (host/src/wire.rs puts the failure envelope into them):
//! one request over raw TCP for each parse failure hyper answers, with the
//! status hyper picks for it, and the answers of ours that must pass
//! through untouched.

use crate::harness::*;
use serde_json::Value;
use std::io::{Read, Write};

/// An answer read off the socket until the server closes it.
struct Raw {
    status: u16,
    reason: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Every answer in `bytes` (a connection may carry several), split by
/// each one's `content-length`.
fn answers(bytes: &[u8]) -> Vec<Raw> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    let mut rest = text.as_str();
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (head, after) = rest.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head end in {rest:?}"));
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status = status_line[9..12].parse().unwrap();
        let reason = status_line[13..].to_string();
        let headers: Vec<(String, String)> = lines.map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).unwrap()).collect();
        let len: usize = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length")).map_or(0, |(_, v)| v.parse().unwrap());
        out.push(Raw { status, reason, headers, body: after[..len].to_string() });
        rest = &after[len..];
    }
    out
}

/// Writes `request` on a new connection and reads until the server closes it.
fn exchange(addr: &str, request: &[u8]) -> Vec<Raw> {
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.write_all(request).unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer);
    answers(&answer)
}

/// Asserts `a` is the envelope answer for `status` and `code`.
fn assert_envelope(a: &Raw, status: u16, reason: &str, code: &str, message: &str) {
    assert_eq!((a.status, a.reason.as_str()), (status, reason), "{}", a.body);
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.header("connection"), Some("close"));
    let body: Value = serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("{e}: {:?}", a.body));
    assert_eq!(body["ok"], false);
    assert_eq!(body["error"]["category"], "validation");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["message"], message);
    assert_eq!(body["meta"]["requestId"], body["error"]["requestId"]);
    assert_eq!(a.header("x-request-id"), body["meta"]["requestId"].as_str());
}

/// What hyper answers a failure with: status, reason, our code and message.
type Answer<'a> = (u16, &'a str, &'a str, &'a str);

const MALFORMED: &str = "the request could not be parsed as HTTP/1.1 (its request line, a header or its framing is malformed)";
const URI_TOO_LONG: &str = "the request's URI is longer than 65534 bytes";
const HEAD_TOO_LARGE: &str = "the request's head (request line and headers) is too large: at most 100 headers and about 400 KiB";

#[test]
fn every_answer_hyper_gives_by_itself_is_an_envelope() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let addr = s.base.trim_start_matches("http://").to_string();
    let get = |headers: &str| format!("GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n{headers}\r\n").into_bytes();
    // (what hyper fails on, the request, the status, reason and code it gets)
    let bad = (400, "Bad Request", "malformed_request", MALFORMED);
    let long = (414, "URI Too Long", "uri_too_long", URI_TOO_LONG);
    let large = (431, "Request Header Fields Too Large", "headers_too_large", HEAD_TOO_LARGE);
    let cases: Vec<(&str, Vec<u8>, Answer)> = vec![
        ("no request line", b"GARBAGE\r\n\r\n".to_vec(), bad),
        ("a method that is not a token", b"G@T / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), bad),
        ("a control character in the target", b"GET /a\x01b HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), bad),
        ("a target that is no URI", b"GET http://[::1/ HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), bad),
        ("an HTTP version other than 1.0 and 1.1", b"GET / HTTP/3.0\r\nHost: x\r\n\r\n".to_vec(), bad),
        ("a header name with a space", get("Bad Name: v\r\n"), bad),
        ("a NUL in a header value", get("X-A: a\0b\r\n"), bad),
        ("a line without a colon", get("NoColon\r\n"), bad),
        ("a content-length that is not a number", get("Content-Length: abc\r\n"), bad),
        ("two differing content-lengths", get("Content-Length: 1\r\nContent-Length: 2\r\n"), bad),
        ("a transfer-encoding that does not end in chunked", get("Transfer-Encoding: gzip\r\n"), bad),
        ("a transfer-encoding in HTTP/1.0", b"POST /api/v1/contacts HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec(), bad),
        ("a URI over 65534 bytes", format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000)).into_bytes(), long),
        ("a head over the read buffer", get(&format!("X-Big: {}\r\n", "a".repeat(600 << 10))), large),
        ("more than 100 headers", get(&(0..120).map(|i| format!("X-H{i}: v\r\n")).collect::<String>()), large),
        ("a header name of 64 KiB", get(&format!("{}: v\r\n", "n".repeat(1 << 16))), large),
        // hyper files a length beyond what it can count as "too large" too.
        ("a content-length beyond hyper's range", get("Content-Length: 18446744073709551614\r\n"), large),
    ];
    for (what, request, (status, reason, code, message)) in cases {
        let got = exchange(&addr, &request);
        assert_eq!(got.len(), 1, "{what}: one answer, then the connection closes");
        assert_envelope(&got[0], status, reason, code, message);
    }
    // Each answer has its own request id.
    let ids: std::collections::HashSet<String> = (0..3).map(|_| exchange(&addr, b"GARBAGE\r\n\r\n")[0].header("x-request-id").unwrap().to_string()).collect();
    assert_eq!(ids.len(), 3);
    // And the server goes on serving.
    assert_eq!(s.req().get("/healthz").status, 200);
}

#[test]
fn answers_of_ours_pass_through_and_a_bad_request_after_good_ones_is_answered_last() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let addr = s.base.trim_start_matches("http://").to_string();
    // Our own 400 (a body that is not JSON) and 404 on a kept-alive
    // connection, then a request hyper cannot parse: the first two are the
    // service's answers byte for byte, the last is the envelope.
    let bad_json = "{not json";
    let pipelined = format!(
        "POST /api/v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk_nobody\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{bad_json}\
         GET /api/v1/nowhere HTTP/1.1\r\nHost: x\r\n\r\n\
         G@T / HTTP/1.1\r\nHost: x\r\n\r\n",
        bad_json.len()
    );
    let got = exchange(&addr, pipelined.as_bytes());
    assert_eq!(got.len(), 3, "{:?}", got.iter().map(|a| a.status).collect::<Vec<_>>());
    for (a, status) in got.iter().zip([401, 404]) {
        assert_eq!(a.status, status, "{}", a.body);
        let body: Value = serde_json::from_str(&a.body).unwrap();
        assert_eq!(body["ok"], false);
        assert_ne!(body["error"]["code"], "malformed_request", "{body}");
        assert_eq!(a.header("x-request-id"), body["meta"]["requestId"].as_str(), "the service's own id is kept");
    }
    assert_envelope(&got[2], 400, "Bad Request", "malformed_request", MALFORMED);
    // A well-formed request gets its answer on the same kind of connection.
    let ok = exchange(&addr, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(ok[0].status, 200);
}
