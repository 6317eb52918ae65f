//! Outbound HTTP through `reqwest`: webhook deliveries and the public-target
//! policy, in force unless `serve --webhook-allow-private` (local
//! development) turns it off.
//!
//! Under the policy a target must be public by the IANA special-purpose
//! registries (`is_public`). It is judged twice: where it is set (the
//! subscription's create and PATCH, `check_target`, before the write: the
//! name `localhost` or one under `.localhost` at once, any other name by
//! what it resolves to) and where it is used: the client's resolver judges
//! every address a name resolves to and hands exactly those to the
//! connector, so a delivery connects to an address that was checked. A
//! rebinding name gets no second resolution to slip 127.0.0.1 in. IP
//! literals are judged before sending (a client does not resolve them).
//!
//! One async client on one small runtime of its own (`Outbound`) serves
//! every delivery of the process: a step hands it all its POSTs at once
//! (`post_many`), they go out concurrently on kept-alive connections, and
//! the step's thread is woken once, when the last has answered (the
//! blocking client handed each request to its runtime thread and back).
//!
//! Of a response only the status counts; up to 64 KiB of its body are read
//! and dropped so the connection can be reused. Nothing about the request
//! (it carries a signature) is logged.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// How webhook deliveries go out (`serve` flags).
#[derive(Debug)]
pub struct OutboundPolicy {
    pub timeout: Duration,
    pub retry_delays_ms: Vec<u64>,
    /// Refuse loopback, private, link-local and other non-public targets
    /// (the default; `serve --webhook-allow-private` turns it off).
    pub public_only: bool,
    /// The HTTP client and its runtime, built on first use (after the flags
    /// set `timeout`) and shared, so deliveries to one receiver reuse
    /// kept-alive connections instead of opening one per POST.
    pub client: std::sync::OnceLock<Outbound>,
}

impl Clone for OutboundPolicy {
    /// The settings; the copy builds a client of its own.
    fn clone(&self) -> Self {
        OutboundPolicy { timeout: self.timeout, retry_delays_ms: self.retry_delays_ms.clone(), public_only: self.public_only, client: std::sync::OnceLock::new() }
    }
}

impl Default for OutboundPolicy {
    fn default() -> Self {
        // 10 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h, 24 h:
        // eleven retries over about 2 days 4 hours.
        let minutes = [0.17, 0.5, 2.0, 10.0, 30.0, 60.0, 120.0, 240.0, 480.0, 720.0, 1440.0];
        OutboundPolicy { timeout: Duration::from_secs(10), retry_delays_ms: minutes.iter().map(|m| (m * 60_000.0) as u64).collect(), public_only: true, client: std::sync::OnceLock::new() }
    }
}

/// The process's outbound HTTP: one async client and the runtime its
/// connections and requests run on (one worker thread, `outbound`).
#[derive(Debug)]
pub struct Outbound {
    /// Always set; taken only by `drop`.
    runtime: Option<tokio::runtime::Runtime>,
    client: reqwest::Client,
    public_only: bool,
}

impl Drop for Outbound {
    /// Without waiting for its tasks, so it may be dropped anywhere (in an
    /// async context too, where dropping a runtime would panic).
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Idle kept-alive connections per receiver host (one per delivery that
/// is sending to it at once).
const IDLE_PER_HOST: usize = 64;
/// A response body up to this size is read (and dropped) so its connection
/// goes back to the pool; a larger one closes it.
const DRAIN_RESPONSE_BYTES: usize = 64 << 10;
/// How long the check where a target is set may wait for DNS.
const RESOLVE_WAIT: Duration = Duration::from_secs(3);

const NOT_PUBLIC: &str = "callback target is not a public address (serve --webhook-allow-private accepts it, for local development)";

fn outbound(policy: &OutboundPolicy) -> &Outbound {
    policy.client.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).thread_name("outbound").enable_all().build().expect("the outbound runtime starts");
        let mut builder = reqwest::Client::builder().timeout(policy.timeout).redirect(reqwest::redirect::Policy::none()).pool_max_idle_per_host(IDLE_PER_HOST);
        if policy.public_only {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        Outbound { runtime: Some(runtime), client: builder.build().expect("the outbound HTTP client builds"), public_only: policy.public_only }
    })
}

/// One request of `post_many`: the URL, the headers, the body.
pub type Post = (String, Vec<(String, String)>, String);

/// One POST (a step that sends one delivery).
pub fn post(policy: &OutboundPolicy, url: &str, headers: &[(String, String)], body: &str) -> Result<u16, String> {
    let (result, _) = post_many(policy, vec![(url.to_string(), headers.to_vec(), body.to_string())]).pop().expect("one answer per request");
    result
}

/// POSTs every request at once on the shared client; each one's outcome
/// (its status, or a short secret-free error) and its time from sending
/// to that outcome, in milliseconds, in the order given. Blocks the calling
/// thread (a job step's) until the last has answered; must not be called
/// from within an async task.
pub fn post_many(policy: &OutboundPolicy, posts: Vec<Post>) -> Vec<(Result<u16, String>, u64)> {
    if posts.is_empty() {
        return Vec::new();
    }
    let out = outbound(policy);
    let n = posts.len();
    let (client, public_only) = (out.client.clone(), out.public_only);
    // The requests are polled where their connections' tasks run: the
    // step's thread is woken once, by the task's end.
    let runtime = out.runtime.as_ref().expect("set until dropped");
    let task = runtime.spawn(async move { futures_util::future::join_all(posts.into_iter().map(|(url, headers, body)| send(&client, public_only, url, headers, body))).await });
    runtime.block_on(task).unwrap_or_else(|_| (0..n).map(|_| (Err("network error".to_string()), 0)).collect())
}

/// One request on the async client, with its metrics.
async fn send(client: &reqwest::Client, public_only: bool, url: String, headers: Vec<(String, String)>, body: String) -> (Result<u16, String>, u64) {
    let started = std::time::Instant::now();
    let Ok(parsed) = url::Url::parse(&url) else { return (Err("invalid callback URL".to_string()), 0) };
    if public_only {
        if let Some(ip) = literal_ip(&parsed) {
            if !is_public(ip) {
                crate::metrics::webhook_attempt("refused", started);
                return (Err(NOT_PUBLIC.into()), 0);
            }
        }
    }
    let mut req = client.post(parsed);
    for (k, v) in &headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let result = match req.body(body).send().await {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let mut drained = 0;
            while let Ok(Some(chunk)) = resp.chunk().await {
                drained += chunk.len();
                if drained > DRAIN_RESPONSE_BYTES {
                    break;
                }
            }
            Ok(status)
        }
        Err(e) => Err(describe(&e)),
    };
    let outcome = match &result {
        Ok(200..=299) => "2xx",
        Ok(300..=399) => "3xx",
        Ok(400..=499) => "4xx",
        Ok(_) => "5xx",
        Err(e) if e == NOT_PUBLIC => "refused",
        Err(e) if e == "timed out" => "timeout",
        Err(e) if e == "connection failed" => "connection",
        Err(_) => "other",
    };
    crate::metrics::webhook_attempt(outcome, started);
    (result, started.elapsed().as_millis() as u64)
}

/// A short, secret-free description of a failed attempt (no URL: it may
/// carry a token in its query).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.is::<NotPublicError>() {
            return NOT_PUBLIC.into();
        }
        source = err.source();
    }
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "connection failed".into()
    } else {
        "network error".into()
    }
}

#[derive(Debug)]
struct NotPublicError;

impl std::fmt::Display for NotPublicError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(NOT_PUBLIC)
    }
}

impl std::error::Error for NotPublicError {}

/// The resolver of a public-only client: a name resolves to its addresses
/// only when every one of them is public; the connector then uses exactly
/// those.
pub(crate) struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() || addrs.iter().any(|a| !is_public(a.ip())) {
                return Err(Box::new(NotPublicError) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

fn literal_ip(url: &url::Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        url::Host::Domain(_) => None,
    }
}

/// Why a target was refused where it is set.
#[derive(Debug, PartialEq)]
pub enum TargetRefusal {
    /// It is, or resolves to, an address that is not public.
    NotPublic,
    /// Its name does not resolve (within `RESOLVE_WAIT`).
    Unresolvable,
}

/// The check where a target is set (public-only policy): an IP literal is
/// judged as is, `localhost` and names under it (RFC 6761: loopback
/// wherever they resolve) are refused, another name is judged by every
/// address it resolves to now.
pub async fn check_target(url: &str) -> Result<(), TargetRefusal> {
    // The operation's schema already requires an absolute https/http URL.
    let Ok(parsed) = url::Url::parse(url) else { return Err(TargetRefusal::Unresolvable) };
    if let Some(ip) = literal_ip(&parsed) {
        return if is_public(ip) { Ok(()) } else { Err(TargetRefusal::NotPublic) };
    }
    let Some(host) = parsed.host_str() else { return Err(TargetRefusal::Unresolvable) };
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Err(TargetRefusal::NotPublic);
    }
    let addrs: Vec<IpAddr> = match tokio::time::timeout(RESOLVE_WAIT, tokio::net::lookup_host((host, 0))).await {
        Ok(Ok(addrs)) => addrs.map(|a| a.ip()).collect(),
        _ => return Err(TargetRefusal::Unresolvable),
    };
    if addrs.is_empty() {
        return Err(TargetRefusal::Unresolvable);
    }
    if addrs.into_iter().any(|ip| !is_public(ip)) {
        return Err(TargetRefusal::NotPublic);
    }
    Ok(())
}

/// Public: globally reachable unicast by the IANA IPv4 and IPv6
/// Special-Purpose Address Registries. Forms that embed an IPv4 address
/// (mapped, compatible, NAT64, 6to4) are judged by that address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// IPv4 blocks that are not globally reachable (and multicast, reserved,
/// broadcast), as (network, prefix length).
const V4_NOT_PUBLIC: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGN)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link local
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast (deprecated)
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and 255.255.255.255 broadcast
];

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let bits = u32::from(ip);
    !V4_NOT_PUBLIC.iter().any(|(net, len)| {
        let mask = if *len == 0 { 0 } else { u32::MAX << (32 - len) };
        bits & mask == u32::from_be_bytes(*net) & mask
    })
}

fn in_v6(bits: u128, net: u128, len: u32) -> bool {
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
    bits & mask == net & mask
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let bits = u128::from(ip);
    let low_v4 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if bits <= 1 {
        return false; // unspecified, loopback
    }
    // Forms that carry an IPv4 address: judged by it.
    if in_v6(bits, 0xffff_0000_0000, 96) // ::ffff:a.b.c.d (mapped)
        || in_v6(bits, 0, 96) // ::a.b.c.d (compatible, deprecated)
        || in_v6(bits, 0x0064_ff9b << 96, 96)
    // 64:ff9b::a.b.c.d (NAT64)
    {
        return is_public_v4(low_v4);
    }
    if in_v6(bits, 0x2002 << 112, 16) {
        // 6to4: 2002:AABB:CCDD::/48 embeds AA.BB.CC.DD.
        return is_public_v4(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    // Global unicast is 2000::/3; everything else (ULA fc00::/7, link local
    // fe80::/10, site local fec0::/10, multicast ff00::/8, discard 100::/64,
    // local-use NAT64 64:ff9b:1::/48, SRv6 5f00::/16 …) is not public.
    if !in_v6(bits, 0x2000 << 112, 3) {
        return false;
    }
    let not_public: &[(u128, u32)] = &[
        (0x2001 << 112, 23),     // IETF protocol assignments (Teredo, benchmarking, ORCHID)
        (0x2001_0db8 << 96, 32), // documentation
        (0x3fff << 112, 20),     // documentation
    ];
    !not_public.iter().any(|(net, len)| in_v6(bits, *net, *len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
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
        let policy = OutboundPolicy { public_only: false, ..Default::default() };
        for i in 0..5 {
            assert_eq!(post(&policy, &url, &[("content-type".into(), "application/json".into())], &format!("{{\"n\":{i}}}")), Ok(200));
        }
        assert_eq!(connections.load(Ordering::SeqCst), 1, "five POSTs, one connection");
    }

    #[test]
    fn special_purpose_ranges_are_not_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.4",
            "169.254.1.1",
            "100.64.0.1",
            "0.1.2.3",
            "255.255.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.19.255.254",
            "198.51.100.7",
            "203.0.113.9",
            "240.0.0.1",
            "224.0.0.1",
            "192.88.99.1",
            "::",
            "::1",
            "fd00::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2002:c0a8:101::",
            "2001:db8::1",
            "2001::1",
            "2001:2::1",
            "3fff::1",
            "5f00::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private} is not public");
        }
        for public in ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2a00:1450::1"] {
            assert!(is_public(public.parse().unwrap()), "{public} is public");
        }
    }

    #[test]
    fn the_default_policy_is_public_only() {
        assert!(OutboundPolicy::default().public_only);
    }

    /// The resolver a delivery connects through: a name that resolves to
    /// loopback (here from /etc/hosts, as a rebinding name would from DNS)
    /// gives the connector no address at all.
    #[test]
    fn the_resolver_refuses_a_name_that_resolves_to_a_private_address() {
        use reqwest::dns::Resolve;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let refused = rt.block_on(PublicOnly.resolve("localhost".parse().unwrap())).err().expect("localhost gave no address");
        assert!(refused.is::<NotPublicError>(), "{refused}");
    }

    #[test]
    fn a_public_only_client_never_connects_to_a_name_that_resolves_to_loopback() {
        let (url, connections) = keep_alive_receiver();
        let port = url::Url::parse(&url).unwrap().port().unwrap();
        let policy = OutboundPolicy::default();
        for target in [format!("http://localhost:{port}/hook"), url.clone(), format!("http://[::ffff:127.0.0.1]:{port}/hook")] {
            assert_eq!(post(&policy, &target, &[], "{}"), Err(NOT_PUBLIC.to_string()), "{target}");
        }
        assert_eq!(connections.load(Ordering::SeqCst), 0, "nothing reached the receiver");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        for name in ["localhost", "LocalHost.", "api.localhost", "no-such-name.localhost"] {
            assert_eq!(rt.block_on(check_target(&format!("http://{name}:{port}/x"))), Err(TargetRefusal::NotPublic), "{name}");
        }
        assert_eq!(rt.block_on(check_target("https://[64:ff9b::7f00:1]/x")), Err(TargetRefusal::NotPublic));
        assert_eq!(rt.block_on(check_target("https://93.184.215.14/x")), Ok(()));
        assert_eq!(rt.block_on(check_target("https://no-such-host.invalid/x")), Err(TargetRefusal::Unresolvable));
    }
}
