//! A messenger plugin that misbehaves on request, so tests can prove the
//! host contains a plugin (tests/api/plugins.rs loads it from a plugin
//! folder; it is built beside the embedded components and never embedded).
//! What `submit` does is picked by the last four digits of the recipient:
//!
//! * `9001`: loops forever (the time limit or the fuel stops it);
//! * `9002`: allocates without end (the memory limit stops it);
//! * `9003`: traps (a panic);
//! * `9004`: answers garbage (an empty provider message id);
//! * `9005`: sends an HTTP request to a host its manifest does not name and
//!   reports the host's refusal as `host_refused`;
//! * `9006`: takes `slow-ms` (setting, default 1500) of busy time, then
//!   answers like any other recipient (a call in flight during a reload);
//! * anything else: accepted, then `accepted → sent → delivered → read`,
//!   one status per `track`. Provider ids are `<id-prefix>.<message id>`
//!   (setting `id-prefix`, default `tb`), so tests see whose settings a call
//!   ran with.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    wit_bindgen::generate!({ world: "messenger-provider", path: "../../kit/wit" });
}

use bindings::exports::switchboard::provider::messenger::{CommentReply, Guest, Media, OutboundMessage, Progress, ProviderError, StatusReport, StoredMedia};
use bindings::exports::switchboard::provider::messenger_webhooks::{self, Pushed};
use bindings::switchboard::provider::{clock, http as provider_http, settings};

fn error(code: &str, message: String, retryable: bool) -> ProviderError {
    ProviderError { code: code.into(), message, retryable, reference: None }
}

/// The status after `last`.
pub fn next(last: &str) -> Option<&'static str> {
    match last {
        "submitted" => Some("accepted"),
        "accepted" => Some("sent"),
        "sent" => Some("delivered"),
        "delivered" => Some("read"),
        _ => None,
    }
}

struct Testbed;

impl Guest for Testbed {
    fn upload_media(m: Media) -> Result<StoredMedia, ProviderError> {
        Ok(StoredMedia { provider_media_id: format!("tbm.{}", &m.sha256_hex[..m.sha256_hex.len().min(16)]), provider_status: "uploaded".into(), expires_at_ms: clock::now_ms() + 86_400_000 })
    }

    fn submit(m: OutboundMessage) -> Result<String, ProviderError> {
        let suffix = &m.recipient[m.recipient.len().saturating_sub(4)..];
        match suffix {
            "9001" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "9002" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "9003" => panic!("the testbed plugin traps on purpose"),
            "9004" => return Ok(String::new()),
            "9005" => {
                let req = provider_http::Request { method: "GET".into(), url: "http://not-in-the-manifest.example.com/".into(), headers: vec![], body: vec![] };
                return match provider_http::send(&req) {
                    Ok(r) => Err(error("unexpected_answer", format!("the host let a request out (status {})", r.status), false)),
                    Err(why) => Err(error("host_refused", why, false)),
                };
            }
            "9006" => {
                let ms: i64 = settings::get("slow-ms").and_then(|s| s.parse().ok()).unwrap_or(1500);
                let until = clock::now_ms() + ms;
                while clock::now_ms() < until {
                    std::hint::black_box(0);
                }
            }
            _ => {}
        }
        let prefix = settings::get("id-prefix").unwrap_or_else(|| "tb".into());
        Ok(format!("{prefix}.{}", m.message_id))
    }

    fn reply_to_comment(r: CommentReply) -> Result<String, ProviderError> {
        Ok(format!("tb-r.{}", r.reply_id))
    }

    fn track(_id: String, _recipient: String, last_status: String) -> Result<Progress, ProviderError> {
        let Some(status) = next(&last_status) else { return Ok(Progress { report: None, check_after_ms: None }) };
        Ok(Progress { report: Some(StatusReport { status: status.into(), provider_status: status.into(), failure: None }), check_after_ms: next(status).map(|_| 0) })
    }
}

impl messenger_webhooks::Guest for Testbed {
    fn receive(_headers: Vec<(String, String)>, _body: Vec<u8>) -> Result<Pushed, ProviderError> {
        Err(error("not_supported", "the testbed plugin pushes nothing".into(), false))
    }

    fn verify(_query: Vec<(String, String)>) -> Result<String, ProviderError> {
        Err(error("not_supported", "the testbed plugin has no webhook address to verify".into(), false))
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(Testbed with_types_in bindings);
