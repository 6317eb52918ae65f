//! `provider-http`: a plugin's only way out. A request goes only to a host
//! its manifest names (`allowed_hosts`: `name` allows the scheme's default
//! port, `name:port` that port), never to an IP literal, under the
//! outbound address rules of `serve` (unless `--webhook-allow-private`,
//! every address a name resolves to must be public: the same resolver as
//! webhook deliveries, so a rebinding name cannot slip a private address
//! in), with
//! no redirects followed, within what is left of the call's time limit.
//! Request bodies are capped at [`MAX_REQUEST_BYTES`], response bodies cut at
//! [`MAX_RESPONSE_BYTES`]. Nothing of a request (it carries tokens) is
//! logged.

use anyhow::Result;
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

pub const MAX_REQUEST_BYTES: usize = 16 << 20;
pub const MAX_RESPONSE_BYTES: u64 = 1 << 20;
/// The shortest time a request is given (a call nearly out of time fails
/// fast instead of starting a request it cannot finish).
const MIN_TIMEOUT: Duration = Duration::from_millis(50);

pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The hosts one plugin may reach, and its client.
pub struct Grant {
    hosts: Vec<(String, Option<u16>)>,
    client: std::sync::OnceLock<reqwest::blocking::Client>,
    public_only: bool,
}

impl Grant {
    pub fn new(allowed: &[String], public_only: bool) -> Result<Grant> {
        let hosts = allowed
            .iter()
            .map(|h| match h.rsplit_once(':') {
                Some((name, port)) => Ok((name.to_ascii_lowercase(), Some(port.parse::<u16>()?))),
                None => Ok((h.to_ascii_lowercase(), None)),
            })
            .collect::<Result<Vec<_>, std::num::ParseIntError>>()?;
        Ok(Grant { hosts, client: std::sync::OnceLock::new(), public_only })
    }

    /// Whether `url` names an allowed host and port.
    fn allows(&self, url: &url::Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err("only http:// and https:// URLs can be sent".into());
        }
        let Some(url::Host::Domain(name)) = url.host() else {
            return Err("the URL's host is an address, not a name the manifest allows".into());
        };
        let port = url.port_or_known_default();
        let ok = self.hosts.iter().any(|(h, p)| h.eq_ignore_ascii_case(name) && (p.is_none() && url.port().is_none() || *p == port));
        if ok {
            Ok(())
        } else {
            Err(format!("host `{}` is not in the plugin's allowed_hosts", url.host_str().unwrap_or_default()))
        }
    }

    fn client(&self) -> &reqwest::blocking::Client {
        self.client.get_or_init(|| {
            let mut b = reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none()).pool_max_idle_per_host(4);
            if self.public_only {
                b = b.dns_resolver(Arc::new(crate::outbound::PublicOnly));
            }
            b.build().expect("the plugin HTTP client builds")
        })
    }

    /// Sends `req` with at most `left` to answer.
    pub fn send(&self, req: Request, left: Duration) -> Result<Response, String> {
        let url = url::Url::parse(&req.url).map_err(|_| "not an absolute URL".to_string())?;
        self.allows(&url)?;
        let method = match req.method.to_ascii_uppercase().as_str() {
            "GET" => reqwest::Method::GET,
            "POST" => reqwest::Method::POST,
            "PUT" => reqwest::Method::PUT,
            "PATCH" => reqwest::Method::PATCH,
            "DELETE" => reqwest::Method::DELETE,
            _ => return Err("method must be GET, POST, PUT, PATCH or DELETE".into()),
        };
        if req.body.len() > MAX_REQUEST_BYTES {
            return Err(format!("request body over {MAX_REQUEST_BYTES} bytes"));
        }
        if left < MIN_TIMEOUT {
            return Err("the call's time limit is used up".into());
        }
        let mut r = self.client().request(method, url).timeout(left);
        for (k, v) in &req.headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|_| "invalid header name".to_string())?;
            let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| "invalid header value".to_string())?;
            r = r.header(name, value);
        }
        let resp = r.body(req.body).send().map_err(|e| crate::outbound::describe(&e))?;
        let status = resp.status().as_u16();
        let headers = resp.headers().iter().filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string()))).collect();
        let mut body = Vec::new();
        resp.take(MAX_RESPONSE_BYTES).read_to_end(&mut body).map_err(|_| "reading the response failed".to_string())?;
        Ok(Response { status, headers, body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_hosts_and_ports() {
        let g = Grant::new(&["api.example.com".into(), "localhost:8080".into()], false).unwrap();
        let ok = |u: &str| g.allows(&url::Url::parse(u).unwrap()).is_ok();
        assert!(ok("https://api.example.com/v1/x"));
        assert!(ok("http://API.example.com/"));
        assert!(ok("http://localhost:8080/send"));
        assert!(!ok("https://api.example.com:8443/"), "a port the manifest did not name");
        assert!(!ok("http://localhost:9090/"));
        assert!(!ok("http://localhost/"));
        assert!(!ok("https://evil.example.com/"));
        assert!(!ok("http://127.0.0.1:8080/"), "an address literal");
        assert!(!ok("ftp://api.example.com/"));
    }
}
