//! Call recordings behind signed, expiring links (spec: `recordingUrl` and
//! `recordingDownloadUrl` in the call report, sensitive, five minutes).
//!
//! * The voice area asks for links through the `recording-links` import
//!   (`switchboard_runtime::recording_links`, which signs them): `GET /recordings/{callId}/{fileName}?b=BUSINESS&e=EXPIRY&d=inline|attachment&s=SIG`,
//!   where `SIG` is the hex HMAC-SHA256 of `v1|callId|business|expiry|d`
//!   under a secret the server creates once and keeps in the database
//!   (`server_secrets`; every node of one database signs alike). Expiry is
//!   the link's issue time plus `--recording-link-ttl-ms` (5 minutes).
//! * [`respond`] checks the link on every use (a tampered or expired link,
//!   or one for a call of another business, gets 403 and never a byte of
//!   audio), then streams the recording from the carrier in pieces, with
//!   `Range` answered as players expect (206 and `Content-Range`, 416 when
//!   unsatisfiable) and `Content-Length` always set. The carrier's memo and
//!   any storage key stay inside: the link names only our call id.

use crate::download::{channel_body, Msg};
use crate::engine::providers::carrier::{Placement, VoiceProfile};
use crate::shared::{full, to_response, BoxError, ResBody, Shared};
use http_body_util::BodyExt;
use hyper::{Request, Response};
use std::sync::Arc;
use switchboard_gateway::Failure;
use switchboard_runtime::recording_links::RecordingLinks;
pub use switchboard_runtime::recording_links::PREFIX;

/// Bytes asked of the carrier per piece.
const PIECE: u32 = 256 << 10;

/// What a valid link names.
#[derive(Debug)]
struct Link {
    call_id: String,
    file_name: String,
    business: String,
    attachment: bool,
}

/// Checks a link's signature (by `links`, this server's) and expiry.
fn verify(links: Option<&RecordingLinks>, path: &str, query: &str, now_ms: i64) -> Result<Link, Failure> {
    let refused = |code: &str, message: &str| Failure::new(403, "authorization", code, message.to_string());
    let invalid = || refused("recording_link_invalid", "the recording link is not valid");
    let rest = path.strip_prefix(PREFIX).ok_or_else(invalid)?;
    let (call_id, file_name) = rest.split_once('/').ok_or_else(invalid)?;
    let pairs = switchboard_gateway::operations::parse_query(query).ok_or_else(invalid)?;
    let param = |name: &str| pairs.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str());
    let (business, expiry, disposition, sig) = (param("b"), param("e"), param("d"), param("s"));
    let expiry: i64 = expiry.parse().map_err(|_| invalid())?;
    let sig = hex::decode(sig).map_err(|_| invalid())?;
    if !links.is_some_and(|l| l.signed_here(call_id, business, expiry, disposition, &sig)) {
        return Err(invalid());
    }
    if now_ms / 1000 > expiry {
        return Err(refused("recording_link_expired", "the recording link has expired; read the call report again for a fresh one"));
    }
    Ok(Link { call_id: call_id.to_string(), file_name: file_name.to_string(), business: business.to_string(), attachment: disposition == "attachment" })
}

/// A `Range` header's one range over `total` bytes: (start, end exclusive).
/// `Ok(None)` without a usable header (the whole file); `Err` when
/// unsatisfiable.
pub fn range(header: Option<&str>, total: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else { return Ok(None) };
    // Several ranges: answered whole, which HTTP allows.
    if spec.contains(',') {
        return Ok(None);
    }
    let (a, b) = spec.split_once('-').ok_or(())?;
    let (a, b) = (a.trim(), b.trim());
    let (start, end) = if a.is_empty() {
        let n: u64 = b.parse().map_err(|_| ())?;
        if n == 0 {
            return Err(());
        }
        (total.saturating_sub(n), total)
    } else {
        let start: u64 = a.parse().map_err(|_| ())?;
        let end = if b.is_empty() { total } else { b.parse::<u64>().map_err(|_| ())?.saturating_add(1).min(total) };
        (start, end)
    };
    if start >= total || start >= end {
        return Err(());
    }
    Ok(Some((start, end)))
}

/// The call's placement (as stored when the carrier got it) and memo, and
/// the carrier (with its settings) that answers for the call's business.
type Source = (Placement, String, std::sync::Arc<crate::engine::providers::carrier::Carrier>, crate::engine::providers::Settings);

fn placement_of(shared: &Shared, link: &Link) -> Result<Source, Failure> {
    let not_found = || Failure::new(404, "not_found", "recording_not_found", "the call has no recording");
    let db = shared.app.db_for(&link.business)?;
    let conn = db.conn().map_err(|_| Failure::internal("the database is not available"))?;
    let (placement, memo) = switchboard_job_kinds::voice::recording_source(&crate::admin::areas::Tx(&conn), &link.business, &link.call_id)
        .map_err(|_| Failure::internal("reading the call failed"))?
        .ok_or_else(not_found)?;
    let placement = serde_json::from_str(&placement).ok().and_then(|v| stored_placement(&v)).ok_or_else(not_found)?;
    let (carrier, settings) = shared.app.components.providers().carrier_for(&conn, &link.business).map_err(|u| {
        let (code, message, retryable) = u.describe("carrier");
        Failure::new(503, "capacity", &code, message).retryable(retryable)
    })?;
    Ok((placement, memo, carrier, settings))
}

/// A placement as the voice area stored it (`calls.placement_json`: the WIT
/// record's fields by their names; components/voice/src/jobs/call/placement.rs).
fn stored_placement(v: &serde_json::Value) -> Option<Placement> {
    let text = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(String::from);
    let voice = v.get("voice")?;
    Some(Placement {
        call_id: text(v, "call_id")?,
        destination: text(v, "destination")?,
        caller_number: text(v, "caller_number"),
        voice: VoiceProfile {
            live_voice_id: text(voice, "live_voice_id"),
            language: text(voice, "language"),
            agent_gender: text(voice, "agent_gender"),
            background_noise_key: text(voice, "background_noise_key"),
            background_noise_level_percent: voice.get("background_noise_level_percent").and_then(|x| x.as_u64()).and_then(|n| u32::try_from(n).ok()),
        },
        max_duration_seconds: u32::try_from(v.get("max_duration_seconds")?.as_u64()?).ok()?,
        requested_at_ms: v.get("requested_at_ms")?.as_i64()?,
    })
}

/// A refusal in the failure envelope, as every other answer of the server.
fn failure(f: &Failure, request_id: &str) -> Response<ResBody> {
    let mut a = crate::pipeline::Answer::failure(f, request_id);
    let body = full(std::mem::take(&mut a.body));
    to_response(a, body, request_id)
}

/// Answers `GET /recordings/…`.
pub async fn respond<B>(shared: Arc<Shared>, req: Request<B>, request_id: &str) -> Response<ResBody> {
    if req.method() != hyper::Method::GET && req.method() != hyper::Method::HEAD {
        return failure(&Failure::new(405, "validation", "method_not_allowed", "use GET").with_header("Allow", "GET, HEAD".into()), request_id);
    }
    let link = match verify(shared.app.components.recording_links(), req.uri().path(), req.uri().query().unwrap_or(""), crate::clock::now_ms()) {
        Ok(l) => l,
        Err(f) => return failure(&f, request_id),
    };
    let range_header = req.headers().get("range").and_then(|v| v.to_str().ok()).map(String::from);
    let head = req.method() == hyper::Method::HEAD;
    let s = shared.clone();
    // The carrier's first answer: the file's type and size.
    let probe = tokio::task::spawn_blocking(move || -> Result<_, Failure> {
        let (placement, memo, carrier, settings) = placement_of(&s, &link)?;
        let first = carrier.recording(&settings, &placement, &memo, 0, 0).map_err(|e| {
            if e.retryable {
                Failure::new(503, "capacity", "carrier_unavailable", "the carrier did not answer; try again").retryable(true)
            } else {
                Failure::new(404, "not_found", "recording_not_found", "the call has no recording")
            }
        })?;
        Ok((placement, memo, carrier, settings, first, link))
    })
    .await;
    let (placement, memo, carrier, settings, first, link) = match probe {
        Ok(Ok(p)) => p,
        Ok(Err(f)) => return failure(&f, request_id),
        Err(_) => return failure(&Failure::internal("reading the recording failed"), request_id),
    };
    let total = first.total_bytes;
    let (status, start, end) = match range(range_header.as_deref(), total) {
        Ok(None) => (200, 0, total),
        Ok(Some((a, b))) => (206, a, b),
        Err(()) => {
            let mut r = failure(&Failure::new(416, "validation", "range_not_satisfiable", format!("the recording has {total} bytes")), request_id);
            r.headers_mut().insert("content-range", format!("bytes */{total}").parse().expect("ascii"));
            return r;
        }
    };
    let disposition = if link.attachment { "attachment" } else { "inline" };
    let mut b = Response::builder()
        .status(status)
        .header("content-type", first.mime_type.as_str())
        .header("content-length", (end - start).to_string())
        .header("accept-ranges", "bytes")
        .header("content-disposition", format!("{disposition}; filename=\"{}\"", link.file_name))
        .header("cache-control", "private, no-store")
        .header("x-request-id", request_id);
    if status == 206 {
        b = b.header("content-range", format!("bytes {start}-{}/{total}", end - 1));
    }
    if head {
        return b.body(full(Vec::new())).expect("valid response parts");
    }
    let (tx, body) = channel_body();
    tokio::task::spawn_blocking(move || {
        let mut at = start;
        while at < end {
            let want = (end - at).min(u64::from(PIECE)) as u32;
            match carrier.recording(&settings, &placement, &memo, at, want) {
                Ok(piece) if !piece.bytes.is_empty() => {
                    at += piece.bytes.len() as u64;
                    if tx.blocking_send(Msg::Data(piece.bytes.into())).is_err() {
                        return; // the client went away
                    }
                }
                // A short or failed read: the body is cut off, never padded.
                _ => return,
            }
        }
        let _ = tx.blocking_send(Msg::End);
    });
    b.body(BodyExt::map_err(body, |e: BoxError| e).boxed()).expect("valid response parts")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_placement_reads_back() {
        let v = serde_json::json!({"call_id": "c1", "destination": "+15550001234", "caller_number": null,
            "voice": {"live_voice_id": "v", "language": null, "agent_gender": null, "background_noise_key": null, "background_noise_level_percent": 300},
            "max_duration_seconds": 600, "requested_at_ms": 5});
        let p = stored_placement(&v).unwrap();
        assert_eq!((p.call_id.as_str(), p.destination.as_str(), p.caller_number, p.max_duration_seconds, p.requested_at_ms), ("c1", "+15550001234", None, 600, 5));
        assert_eq!((p.voice.live_voice_id.as_deref(), p.voice.background_noise_level_percent), (Some("v"), Some(300)));
        assert!(stored_placement(&serde_json::json!({"call_id": "c1"})).is_none());
    }

    #[test]
    fn ranges_as_players_send_them() {
        assert_eq!(range(None, 100), Ok(None));
        assert_eq!(range(Some("bytes=0-"), 100), Ok(Some((0, 100))));
        assert_eq!(range(Some("bytes=10-19"), 100), Ok(Some((10, 20))));
        assert_eq!(range(Some("bytes=90-500"), 100), Ok(Some((90, 100))));
        assert_eq!(range(Some("bytes=-10"), 100), Ok(Some((90, 100))));
        assert_eq!(range(Some("bytes=0-1,5-6"), 100), Ok(None));
        assert_eq!(range(Some("bytes=100-"), 100), Err(()));
        assert_eq!(range(Some("bytes=-0"), 100), Err(()));
        assert_eq!(range(Some("bytes=x-"), 100), Err(()));
        assert_eq!(range(Some("items=0-1"), 100), Ok(None));
    }

    #[test]
    fn links_verify_until_they_expire_and_not_when_changed() {
        let links = RecordingLinks::new(b"secret".to_vec(), "http://127.0.0.1:1/", 300_000);
        let verify = |path: &str, query: &str, now| verify(Some(&links), path, query, now);
        let now = 1_700_000_000_000;
        let url = links.sign("biz", "call", "call.wav", "inline", now);
        let path_and_query = url.strip_prefix("http://127.0.0.1:1").unwrap();
        let (path, query) = path_and_query.split_once('?').unwrap();
        let link = verify(path, query, now).unwrap();
        assert_eq!((link.call_id.as_str(), link.business.as_str(), link.attachment), ("call", "biz", false));
        assert_eq!(verify(path, query, now + 301_000).unwrap_err().code, "recording_link_expired");
        assert_eq!(verify(path, &query.replace("b=biz", "b=other"), now).unwrap_err().code, "recording_link_invalid");
        assert_eq!(verify(path, &query.replace("d=inline", "d=attachment"), now).unwrap_err().code, "recording_link_invalid");
        assert_eq!(verify(&path.replace("/call/", "/other/"), query, now).unwrap_err().code, "recording_link_invalid");
    }
}
