//! A Switchboard messenger plugin to start from. It accepts every message,
//! reports it `accepted → sent → delivered → read` one status per `track`,
//! and, when the business set `endpoint`, also POSTs each send there as
//! JSON (the host lets it reach only the hosts in plugin.toml's
//! `allowed_hosts`). Replace the bodies with calls to your provider.
//!
//! Rules of the road (kit/README.md says more): every call runs in a fresh
//! instance, so keep no state between calls; answer within the manifest's
//! `timeout_ms`; a `retryable` error makes the host try again later, any
//! other error is final; never log secrets or recipients.

mod bindings {
    wit_bindgen::generate!({ world: "messenger-provider", path: "../wit" });
}

use bindings::exports::switchboard::provider::messenger::{CommentReply, Guest, Media, OutboundMessage, Progress, ProviderError, StatusReport, StoredMedia};
use bindings::exports::switchboard::provider::messenger_webhooks::{self, Pushed};
use bindings::switchboard::provider::{clock, http, log, settings};

fn error(code: &str, message: impl Into<String>, retryable: bool) -> ProviderError {
    ProviderError { code: code.into(), message: message.into(), retryable, reference: None }
}

/// The status after `last`, one step at a time.
fn next(last: &str) -> Option<&'static str> {
    match last {
        "submitted" => Some("accepted"),
        "accepted" => Some("sent"),
        "sent" => Some("delivered"),
        "delivered" => Some("read"),
        _ => None,
    }
}

struct Plugin;

impl Guest for Plugin {
    fn upload_media(m: Media) -> Result<StoredMedia, ProviderError> {
        Ok(StoredMedia { provider_media_id: format!("my-media.{}", &m.sha256_hex[..m.sha256_hex.len().min(16)]), provider_status: "uploaded".into(), expires_at_ms: clock::now_ms() + 86_400_000 })
    }

    fn submit(m: OutboundMessage) -> Result<String, ProviderError> {
        if let Some(endpoint) = settings::get("endpoint") {
            let body = serde_json::json!({"id": m.message_id, "to": m.recipient, "type": m.kind, "text": m.text}).to_string();
            let mut headers = vec![("content-type".to_string(), "application/json".to_string())];
            if let Some(token) = settings::get("api-token") {
                headers.push(("authorization".into(), format!("Bearer {token}")));
            }
            let answer = http::send(&http::Request { method: "POST".into(), url: endpoint, headers, body: body.into_bytes() })
                .map_err(|why| error("provider_unreachable", why, true))?;
            if answer.status >= 500 || answer.status == 429 {
                return Err(error("provider_unavailable", format!("the provider answered {}", answer.status), true));
            }
            if answer.status >= 400 {
                return Err(error("provider_rejected", format!("the provider answered {}", answer.status), false));
            }
        }
        log::log(log::Level::Info, "message handed over");
        // Our message id is the send's idempotency reference.
        Ok(format!("my.{}", m.message_id))
    }

    fn reply_to_comment(_r: CommentReply) -> Result<String, ProviderError> {
        Err(error("not_supported", "this plugin does not reply to comments", false))
    }

    fn track(_id: String, _recipient: String, last_status: String) -> Result<Progress, ProviderError> {
        let Some(status) = next(&last_status) else { return Ok(Progress { report: None, check_after_ms: None }) };
        Ok(Progress {
            report: Some(StatusReport { status: status.into(), provider_status: status.into(), failure: None }),
            check_after_ms: next(status).map(|_| 100),
        })
    }
}

impl messenger_webhooks::Guest for Plugin {
    /// A provider that pushes statuses or customers' messages has them
    /// checked (its signature) and read here.
    fn receive(_headers: Vec<(String, String)>, _body: Vec<u8>) -> Result<Pushed, ProviderError> {
        Err(error("not_supported", "this plugin takes no webhooks", false))
    }

    /// A provider that checks the webhook address first (a GET with a
    /// challenge) is answered here, from the business's settings.
    fn verify(_query: Vec<(String, String)>) -> Result<String, ProviderError> {
        Err(error("not_supported", "this plugin verifies no webhook address", false))
    }
}

bindings::export!(Plugin with_types_in bindings);
