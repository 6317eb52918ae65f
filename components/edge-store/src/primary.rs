//! The libSQL primary as this instance reaches it: its URL and token from
//! the environment (`SWITCHBOARD_PRIMARY_URL`, `SWITCHBOARD_PRIMARY_AUTH_TOKEN`:
//! `wasmtime serve --env`, or spin.toml's `environment`, filled from Spin
//! variables), and one `POST /v2/pipeline` over `wasi:http`. Another
//! database of the deployment (issue 47: a business placed there) is
//! reached the same way, at the URL main's registry gives, with the same
//! token. A URL may name a namespace of a sqld started with
//! `--enable-namespaces` (`?namespace=NAME`, as `admin database add` takes
//! it); every request names its namespace in `x-namespace-bin` (`default`
//! when the URL names none, which a sqld without namespaces ignores), so a
//! sqld with namespaces never guesses it from the host.

use base64::Engine as _;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme};
use wasip2::io::streams::StreamError;

/// Longest answer read from the primary (a page of rows is far smaller).
const MAX_ANSWER_BYTES: usize = 64 << 20;
/// Nanoseconds to connect and to wait for the first byte of an answer.
const CONNECT_TIMEOUT_NS: u64 = 5_000_000_000;
const FIRST_BYTE_TIMEOUT_NS: u64 = 20_000_000_000;

pub struct Primary {
    scheme: Scheme,
    authority: String,
    /// The URL's path, without a trailing slash ("" for the root).
    prefix: String,
    token: Option<String>,
    /// The namespace's name in base64 without padding (`x-namespace-bin`).
    namespace: String,
}

impl Primary {
    /// From the environment; the error names what is missing or wrong.
    pub fn from_env() -> Result<Primary, String> {
        let url = std::env::var("SWITCHBOARD_PRIMARY_URL").map_err(|_| "SWITCHBOARD_PRIMARY_URL is not set".to_string())?;
        let token = std::env::var("SWITCHBOARD_PRIMARY_AUTH_TOKEN").ok().filter(|t| !t.is_empty());
        Primary::parse(&url, token)
    }

    pub(crate) fn parse(url: &str, token: Option<String>) -> Result<Primary, String> {
        Primary::parse_as("SWITCHBOARD_PRIMARY_URL", url, token)
    }

    fn parse_as(what: &str, url: &str, token: Option<String>) -> Result<Primary, String> {
        let (url, namespace) = match url.split_once("?namespace=") {
            Some((url, ns)) if !ns.is_empty() && ns.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') => (url, ns),
            Some(_) => return Err(format!("{what} names a namespace that is not one (?namespace= 1 to 64 of a-z, A-Z, 0-9, - and _)")),
            None => (url, "default"),
        };
        let u = switchboard_gateway::base_url::BaseUrl::parse(what, url)?;
        if u.authority.contains(['?', '#']) {
            return Err(format!("{what} takes no query but ?namespace=NAME"));
        }
        let namespace = base64::engine::general_purpose::STANDARD_NO_PAD.encode(namespace);
        Ok(Primary { scheme: if u.https { Scheme::Https } else { Scheme::Http }, authority: u.authority, prefix: u.prefix, token, namespace })
    }

    /// The registered database `name` at `url` (a sqld server's URL, as
    /// `admin database add` took it), reached with this primary's token.
    pub fn database(&self, name: &str, url: &str) -> Result<Primary, String> {
        Primary::parse_as(&format!("the URL of database {name}"), url, self.token.clone())
    }

    /// The host (and port) it is reached at.
    #[cfg(test)]
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Sends one pipeline; the answer's body, or why there is none. No
    /// wait goes past `deadline` (a monotonic-clock instant).
    pub fn pipeline(&self, body: &[u8], deadline: Option<u64>) -> Result<Vec<u8>, String> {
        let left = match deadline {
            Some(at) => at.saturating_sub(wasip2::clocks::monotonic_clock::now()),
            None => u64::MAX,
        };
        if left == 0 {
            return Err("the request's deadline passed before the primary was asked".into());
        }
        let headers = Fields::new();
        let set = |name: &str, value: &[u8]| headers.append(name, value).map_err(|e| format!("header {name}: {e:?}"));
        set("content-type", b"application/json")?;
        set("x-namespace-bin", self.namespace.as_bytes())?;
        if let Some(token) = &self.token {
            set("authorization", format!("Bearer {token}").as_bytes())?;
        }
        let request = OutgoingRequest::new(headers);
        let path = format!("{}/v2/pipeline", self.prefix);
        request.set_method(&Method::Post).map_err(|_| "method")?;
        request.set_scheme(Some(&self.scheme)).map_err(|_| "scheme")?;
        request.set_authority(Some(&self.authority)).map_err(|_| "the primary's host is not a valid authority")?;
        request.set_path_with_query(Some(&path)).map_err(|_| "the primary's path is not valid")?;
        let outgoing = request.body().map_err(|_| "request body")?;
        let options = RequestOptions::new();
        let _ = options.set_connect_timeout(Some(CONNECT_TIMEOUT_NS.min(left)));
        let _ = options.set_first_byte_timeout(Some(FIRST_BYTE_TIMEOUT_NS.min(left)));
        let _ = options.set_between_bytes_timeout(Some(FIRST_BYTE_TIMEOUT_NS.min(left)));
        let pending = outgoing_handler::handle(request, Some(options)).map_err(|e| format!("the primary cannot be reached: {e:?}"))?;
        {
            let stream = outgoing.write().map_err(|_| "request stream")?;
            for chunk in body.chunks(4096) {
                stream.blocking_write_and_flush(chunk).map_err(|e| format!("sending to the primary: {e:?}"))?;
            }
        }
        OutgoingBody::finish(outgoing, None).map_err(|e| format!("sending to the primary: {e:?}"))?;
        pending.subscribe().block();
        let response = match pending.get() {
            Some(Ok(Ok(r))) => r,
            Some(Ok(Err(e))) => return Err(format!("the primary cannot be reached: {e:?}")),
            _ => return Err("the primary's answer was lost".into()),
        };
        let status = response.status();
        let incoming = response.consume().map_err(|_| "answer body")?;
        let mut answer = Vec::new();
        {
            let stream = incoming.stream().map_err(|_| "answer stream")?;
            loop {
                match stream.blocking_read(64 * 1024) {
                    Ok(chunk) => {
                        answer.extend_from_slice(&chunk);
                        if answer.len() > MAX_ANSWER_BYTES {
                            return Err("the primary's answer is too large".into());
                        }
                    }
                    Err(StreamError::Closed) => break,
                    Err(e) => return Err(format!("reading the primary's answer: {e:?}")),
                }
            }
        }
        let _ = IncomingBody::finish(incoming);
        if !(200..300).contains(&status) {
            // The stream is gone (the spec: any HTTP error ends it).
            let text = String::from_utf8_lossy(&answer[..answer.len().min(200)]).to_string();
            return Err(format!("the primary answered HTTP {status}: {text}"));
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_primary_url_needs_a_scheme_and_a_host() {
        let p = Primary::parse("http://127.0.0.1:8080/", None).unwrap();
        assert_eq!((p.authority.as_str(), p.prefix.as_str()), ("127.0.0.1:8080", ""));
        assert_eq!(Primary::parse("https://db.example/base/", None).unwrap().prefix, "/base");
        for bad in ["127.0.0.1:8080", "ftp://x", "http://", "http://user:pw@x"] {
            assert!(Primary::parse(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn another_database_is_reached_with_the_primarys_token() {
        let main = Primary::parse("http://127.0.0.1:8080", Some("t0k".into())).unwrap();
        let second = main.database("second", "http://127.0.0.1:8081").unwrap();
        assert_eq!((second.authority.as_str(), second.token.as_deref()), ("127.0.0.1:8081", Some("t0k")));
        let refused = main.database("second", "local").err().unwrap();
        assert!(refused.contains("database second"), "{refused}");
    }

    #[test]
    fn every_request_names_its_namespace() {
        let main = Primary::parse("http://127.0.0.1:8080", None).unwrap();
        assert_eq!(main.namespace, "ZGVmYXVsdA");
        let eu = main.database("eu", "http://127.0.0.1:8080?namespace=ns1").unwrap();
        assert_eq!((eu.authority.as_str(), eu.prefix.as_str(), eu.namespace.as_str()), ("127.0.0.1:8080", "", "bnMx"));
        for bad in ["http://h:1?namespace=", "http://h:1?namespace=a b", "http://h:1?x=1"] {
            assert!(main.database("eu", bad).is_err(), "{bad}");
        }
    }
}
