//! `switchboard webhooks listen`: a webhook receiver for local development
//! (as `svix listen` and `stripe listen` help their users). It answers every
//! POST on a loopback port and prints each delivery on stdout, two lines:
//! a summary (time, event type, event id, retry number, and each of the two
//! signatures checked against `--secret`: the contract's
//! `X-Service-Signature` and the Standard Webhooks `webhook-signature`,
//! verified by the `standardwebhooks` crate), then the body as received.
//! It answers 200 when every signature checks (or no secret was given,
//! when none is checked) and 401 otherwise, so the service retries it as
//! it would at a real receiver. The secret is never printed (only its last
//! four characters, as the API lists them).

use anyhow::{Context, Result};
use bytes::Bytes;
use clap::Args;
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use sha2::Sha256;
use std::io::Write as _;
use std::net::SocketAddr;

/// How far a delivery's timestamp may be from now before it counts as
/// stale or replayed (what docs/webhooks.md asks of a receiver, and the
/// Standard Webhooks libraries' tolerance).
const TOLERANCE_SECS: i64 = 300;

/// A delivery's body is at most this (an event is a few kilobytes).
const MAX_BODY: usize = 1 << 20;

#[derive(clap::Subcommand)]
pub(crate) enum WebhooksCommand {
    /// Receive webhook deliveries on a local port and print each, with its signatures checked.
    Listen(ListenArgs),
}

#[derive(Args)]
pub(crate) struct ListenArgs {
    /// The port on 127.0.0.1 to receive on; the subscription's callbackUrl is http://127.0.0.1:PORT/ with any path.
    #[arg(long, value_name = "N", default_value_t = 8090)]
    pub(crate) port: u16,
    /// The subscription's signingSecret (whsec_…), to check each delivery's signatures with; without it they are printed unchecked.
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_SECRET", value_name = "S", hide_env_values = true)]
    pub(crate) secret: Option<String>,
}

/// The secret, read both ways: the contract's key (its bytes) and the
/// Standard Webhooks one.
struct Secret {
    raw: String,
    standard: standardwebhooks::Webhook,
}

/// Serves until the process is stopped (Ctrl-C).
pub(crate) fn listen(args: ListenArgs) -> Result<()> {
    let secret = match args.secret {
        None => None,
        Some(raw) => {
            // A usage error, but not through clap's value parser: its
            // message would repeat the value, a secret.
            let standard = raw.strip_prefix("whsec_").and_then(|_| standardwebhooks::Webhook::new(&raw).ok());
            let Some(standard) = standard else {
                let _ = writeln!(std::io::stderr(), "error: --secret (or SWITCHBOARD_WEBHOOK_SECRET) takes a subscription's signingSecret: whsec_ followed by base64");
                std::process::exit(2);
            };
            Some(Secret { raw, standard })
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(serve(SocketAddr::from(([127, 0, 0, 1], args.port)), secret))
}

async fn serve(addr: SocketAddr, secret: Option<Secret>) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr()?;
    let checked = match &secret {
        Some(s) => format!("signatures checked with the secret ending {}", &s.raw[s.raw.len().saturating_sub(4)..]),
        None => "signatures not checked (no --secret)".to_string(),
    };
    let _ = writeln!(std::io::stderr(), "webhooks listen: receiving on http://{addr}/ (any path); {checked}; Ctrl-C stops");
    let secret = std::sync::Arc::new(secret);
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let secret = secret.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| answer(secret.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

async fn answer(secret: std::sync::Arc<Option<Secret>>, req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let reply = |status: StatusCode, text: &str| {
        let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))));
        *r.status_mut() = status;
        Ok(r)
    };
    if req.method() != hyper::Method::POST {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "webhooks listen receives POST deliveries");
    }
    let (parts, body) = req.into_parts();
    let Ok(body) = Limited::new(body, MAX_BODY).collect().await.map(|b| b.to_bytes()) else {
        return reply(StatusCode::PAYLOAD_TOO_LARGE, "a delivery's body is at most 1 MiB");
    };
    let checks = match secret.as_ref() {
        Some(s) => vec![("X-Service-Signature", contract_check(&s.raw, &parts.headers, &body)), ("webhook-signature", standard_check(&s.standard, &parts.headers, &body))],
        None => Vec::new(),
    };
    let event: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let field = |name: &str| event.get(name).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_else(|| "-".into());
    let verdict = if checks.is_empty() { "signatures not checked (no --secret)".to_string() } else { checks.iter().map(|(name, c)| format!("{name} {c}")).collect::<Vec<_>>().join(", ") };
    let good = checks.iter().all(|(_, c)| *c == "ok");
    let status = if good { StatusCode::OK } else { StatusCode::UNAUTHORIZED };
    let line = format!(
        "{} {} {} retry {} {}: {verdict} -> {}\n{}\n",
        switchboard_ops::clock::now_rfc3339(),
        field("eventType"),
        field("eventId"),
        field("retryNumber"),
        parts.uri.path(),
        status.as_u16(),
        String::from_utf8_lossy(&body).trim_end(),
    );
    // One write of both lines, so deliveries received at once never interleave.
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
    reply(status, if good { "received" } else { "signature check failed" })
}

/// The contract's signature: hex HMAC-SHA256 of `timestamp.body` keyed with
/// the secret's bytes, and a fresh timestamp.
fn contract_check(secret: &str, headers: &hyper::HeaderMap, body: &[u8]) -> &'static str {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(ts), Some(signature)) = (header("x-service-timestamp"), header("x-service-signature")) else { return "missing" };
    let Ok(expected) = hex::decode(signature) else { return "BAD" };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(ts.as_bytes());
    mac.update(b".");
    mac.update(body);
    if mac.verify_slice(&expected).is_err() {
        return "BAD";
    }
    match ts.parse::<i64>() {
        Ok(t) if (switchboard_ops::clock::now_ms() / 1000 - t).abs() <= TOLERANCE_SECS => "ok",
        _ => "stale",
    }
}

/// The Standard Webhooks signature, by its reference crate.
fn standard_check(webhook: &standardwebhooks::Webhook, headers: &hyper::HeaderMap, body: &[u8]) -> &'static str {
    use standardwebhooks::WebhookError as E;
    match webhook.verify(body, headers) {
        Ok(()) => "ok",
        Err(E::MissingHeader(_)) => "missing",
        Err(E::TimestampTooOldError | E::FutureTimestampError) => "stale",
        Err(_) => "BAD",
    }
}
