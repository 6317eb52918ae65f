//! Outbound HTTP for webhook deliveries: the target policy and the POST.
//! Response bodies are never read beyond the status, and nothing about the
//! request (it carries a signature) is logged.

use crate::engine::OutboundPolicy;
use std::net::{IpAddr, ToSocketAddrs};

pub fn post(policy: &OutboundPolicy, url: &str, headers: &[(String, String)], body: &str) -> Result<u16, String> {
    if policy.public_only {
        check_public(url)?;
    }
    let agent = ureq::AgentBuilder::new().timeout(policy.timeout).redirects(0).build();
    let mut req = agent.post(url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    match req.send_string(body) {
        Ok(resp) => Ok(resp.status()),
        Err(ureq::Error::Status(code, _)) => Ok(code),
        Err(ureq::Error::Transport(t)) => Err(format!("{}", t.kind())),
    }
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
