//! Outbound HTTP for webhook deliveries: the target policy and the POST.
//! Of a response only the status counts; up to 64 KiB of its body are read
//! and dropped so the connection can be reused. Nothing about the request
//! (it carries a signature) is logged.

use crate::engine::OutboundPolicy;
use std::io::Read;
use std::net::{IpAddr, ToSocketAddrs};

/// Idle kept-alive connections per receiver host (one per delivery lane
/// that is sending to it at once).
const IDLE_PER_HOST: usize = 16;
/// A response body up to this size is read (and dropped) so its connection
/// goes back to the pool; a larger one closes it.
const DRAIN_RESPONSE_BYTES: u64 = 64 << 10;

fn agent(policy: &OutboundPolicy) -> &ureq::Agent {
    policy.agent.get_or_init(|| {
        ureq::AgentBuilder::new().timeout(policy.timeout).redirects(0).max_idle_connections_per_host(IDLE_PER_HOST).build()
    })
}

pub fn post(policy: &OutboundPolicy, url: &str, headers: &[(String, String)], body: &str) -> Result<u16, String> {
    if policy.public_only {
        check_public(url)?;
    }
    let mut req = agent(policy).post(url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let resp = match req.send_string(body) {
        Ok(resp) => resp,
        Err(ureq::Error::Status(_, resp)) => resp,
        Err(ureq::Error::Transport(t)) => return Err(format!("{}", t.kind())),
    };
    let status = resp.status();
    let _ = std::io::copy(&mut resp.into_reader().take(DRAIN_RESPONSE_BYTES), &mut std::io::sink());
    Ok(status)
}

/// Refuses targets that resolve to loopback, private, link-local,
/// unspecified, multicast or documentation addresses.
fn check_public(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|_| "invalid callback URL".to_string())?;
    let host = parsed.host_str().ok_or("callback URL has no host")?;
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<IpAddr> = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .map_err(|_| "callback host does not resolve".to_string())?
        .map(|a| a.ip())
        .collect();
    if addrs.is_empty() || addrs.iter().any(|ip| !is_public(ip)) {
        return Err("callback target is not a public address (serve --webhook-public-only)".into());
    }
    Ok(())
}

fn is_public(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || o[0] == 100 && (64..128).contains(&o[1]) // shared address space
                || o[0] == 0)
        }
        IpAddr::V6(v6) => {
            let seg = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00 // unique local
                || (seg[0] & 0xffc0) == 0xfe80 // link local
                || v6.to_ipv4_mapped().is_some_and(|m| !is_public(&IpAddr::V4(m))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A keep-alive receiver: answers every request of a connection with
    /// `200` and a short body, and counts the connections it accepted.
    fn keep_alive_receiver() -> (String, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut writer = stream;
                    loop {
                        let mut length = 0usize;
                        loop {
                            let mut line = String::new();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                                length = v.trim().parse().unwrap();
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let mut body = vec![0u8; length];
                        reader.read_exact(&mut body).unwrap();
                        writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").unwrap();
                    }
                });
            }
        });
        (url, connections)
    }

    #[test]
    fn deliveries_to_one_receiver_reuse_a_connection() {
        let (url, connections) = keep_alive_receiver();
        let policy = OutboundPolicy::default();
        for i in 0..5 {
            assert_eq!(post(&policy, &url, &[("content-type".into(), "application/json".into())], &format!("{{\"n\":{i}}}")), Ok(200));
        }
        assert_eq!(connections.load(Ordering::SeqCst), 1, "five POSTs, one connection");
    }

    #[test]
    fn public_addresses() {
        for private in ["127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.5.4", "169.254.1.1", "100.64.0.1", "::1", "fd00::1", "fe80::1", "::ffff:127.0.0.1"] {
            assert!(!is_public(&private.parse().unwrap()), "{private}");
        }
        for public in ["8.8.8.8", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(&public.parse().unwrap()), "{public}");
        }
    }
}
