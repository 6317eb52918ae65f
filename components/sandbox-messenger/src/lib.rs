//! The sandbox messenger: the embedded default behind the `messenger`
//! interface (wit/platform.wit). It talks to no network; it answers like a
//! provider would, on rules of the recipient that tests and demos can rely
//! on. A real adapter exports the same interface and replaces this component
//! (`serve --component-override sandbox-messenger=FILE`).
//!
//! Recipient rules (the last four characters of the recipient):
//! * `2222`: the submit is refused, `invalid_recipient` (not retryable);
//! * `3333`: the provider is down for this recipient: every submit fails
//!   with `provider_down` (retryable), so the message waits in `queued`;
//! * `0000`: `failed` right after `accepted`, `recipient_unreachable`;
//! * `1111`: stops at `delivered` (never read);
//! * anything else: `accepted → sent → delivered → read`.
//!
//! Comment replies (the last four characters of the commenter): `2222`
//! refused, `comment_reply_refused` (not retryable: the provider does not
//! let the account answer this user); `3333` the provider is down
//! (`provider_down`, retryable); anything else published, reply id
//! `sbx-r.<our comment id>` (the same for the same comment: idempotent).
//!
//! Each status is reported one `track` call at a time, `step-delay-ms`
//! apart (setting, default [`DEFAULT_STEP_DELAY_MS`]; 0 allowed, at most
//! [`MAX_STEP_DELAY_MS`]). Provider message ids are `sbx.<uuid>` (a refused
//! submit: `sbx.refused.<message id>`); media ids
//! are `sbxm.<first 16 hex of the sha256>`, kept [`MEDIA_EXPIRY_MS`].

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    wit_bindgen::generate!({ world: "messenger-provider", path: "../../kit/wit" });
}

use bindings::exports::switchboard::provider::messenger::{CommentReply, Guest, Media, OutboundMessage, Progress, ProviderError, StatusReport, StoredMedia};
use bindings::switchboard::provider::{clock, ids, settings};

pub const DEFAULT_STEP_DELAY_MS: u64 = 20;
pub const MAX_STEP_DELAY_MS: u64 = 60_000;
pub const MEDIA_EXPIRY_MS: i64 = 30 * 24 * 3600 * 1000;
pub const REFUSED_SUFFIX: &str = "2222";
pub const OUTAGE_SUFFIX: &str = "3333";
pub const UNREACHABLE_SUFFIX: &str = "0000";
pub const NO_READ_SUFFIX: &str = "1111";

/// The status after `last` for `recipient`; `None` when nothing follows.
pub fn next(last: &str, recipient: &str) -> Option<&'static str> {
    match last {
        "submitted" => Some("accepted"),
        "accepted" if recipient.ends_with(UNREACHABLE_SUFFIX) => Some("failed"),
        "accepted" => Some("sent"),
        "sent" => Some("delivered"),
        "delivered" if recipient.ends_with(NO_READ_SUFFIX) => None,
        "delivered" => Some("read"),
        _ => None,
    }
}

/// The provider is not answering (retryable).
fn provider_down() -> ProviderError {
    ProviderError { code: "provider_down".into(), message: "the provider is not answering; try again later".into(), retryable: true, reference: None }
}

/// Why a submit of `message_id` to `recipient` fails, if it does.
pub fn refusal(recipient: &str, message_id: &str) -> Option<ProviderError> {
    if recipient.ends_with(OUTAGE_SUFFIX) {
        return Some(provider_down());
    }
    recipient.ends_with(REFUSED_SUFFIX).then(|| ProviderError {
        code: "invalid_recipient".into(),
        message: "the provider does not accept messages to this recipient".into(),
        retryable: false,
        // Like a real provider's id of the refused request (deterministic).
        reference: Some(format!("sbx.refused.{message_id}")),
    })
}

/// Why a reply to `commenter` fails, if it does.
pub fn comment_refusal(commenter: &str) -> Option<ProviderError> {
    if commenter.ends_with(OUTAGE_SUFFIX) {
        return Some(provider_down());
    }
    commenter.ends_with(REFUSED_SUFFIX).then(|| ProviderError {
        code: "comment_reply_refused".into(),
        message: "the provider does not let the account reply to this user's comment".into(),
        retryable: false,
        reference: None,
    })
}

/// The report for moving to `status`.
pub fn report(status: &str) -> StatusReport {
    let failure =
        (status == "failed").then(|| ProviderError { code: "recipient_unreachable".into(), message: "the recipient's number is not reachable on chatapp".into(), retryable: false, reference: None });
    StatusReport { status: status.into(), provider_status: status.into(), failure }
}

/// `step-delay-ms` as configured, clamped; the default when unset or invalid.
pub fn step_delay(setting: Option<&str>) -> u64 {
    setting.and_then(|s| s.trim().parse::<u64>().ok()).map_or(DEFAULT_STEP_DELAY_MS, |d| d.min(MAX_STEP_DELAY_MS))
}

struct Sandbox;

impl Guest for Sandbox {
    fn upload_media(m: Media) -> Result<StoredMedia, ProviderError> {
        let prefix = m.sha256_hex.get(..16).filter(|p| p.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(prefix) = prefix else {
            return Err(ProviderError { code: "invalid_media".into(), message: "the media's sha256 is malformed".into(), retryable: false, reference: None });
        };
        Ok(StoredMedia { provider_media_id: format!("sbxm.{prefix}"), provider_status: "uploaded".into(), expires_at_ms: clock::now_ms() + MEDIA_EXPIRY_MS })
    }

    fn submit(m: OutboundMessage) -> Result<String, ProviderError> {
        match refusal(&m.recipient, &m.message_id) {
            Some(e) => Err(e),
            None => Ok(format!("sbx.{}", ids::uuid_v7())),
        }
    }

    fn reply_to_comment(r: CommentReply) -> Result<String, ProviderError> {
        match comment_refusal(&r.commenter) {
            Some(e) => Err(e),
            None => Ok(format!("sbx-r.{}", r.reply_id)),
        }
    }

    fn track(_provider_message_id: String, recipient: String, last_status: String) -> Result<Progress, ProviderError> {
        let delay = step_delay(settings::get("step-delay-ms").as_deref());
        let Some(status) = next(&last_status, &recipient) else {
            return Ok(Progress { report: None, check_after_ms: None });
        };
        let more = next(status, &recipient).is_some();
        Ok(Progress { report: Some(report(status)), check_after_ms: more.then_some(delay) })
    }
}

impl bindings::exports::switchboard::provider::messenger_webhooks::Guest for Sandbox {
    /// The sandbox reports through `track`; it pushes nothing.
    fn receive(_headers: Vec<(String, String)>, _body: Vec<u8>) -> Result<bindings::exports::switchboard::provider::messenger_webhooks::Pushed, ProviderError> {
        Err(ProviderError { code: "not_supported".into(), message: "the sandbox messenger pushes no webhooks".into(), retryable: false, reference: None })
    }

    fn verify(_query: Vec<(String, String)>) -> Result<String, ProviderError> {
        Err(ProviderError { code: "not_supported".into(), message: "the sandbox messenger has no webhook address to verify".into(), retryable: false, reference: None })
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(Sandbox with_types_in bindings);

#[cfg(test)]
mod tests {
    use super::*;

    fn life(recipient: &str) -> Vec<&'static str> {
        let mut s = "submitted";
        let mut out = vec![];
        while let Some(n) = next(s, recipient) {
            out.push(n);
            s = n;
        }
        out
    }

    #[test]
    fn recipient_rules() {
        assert_eq!(life("+15550001234"), ["accepted", "sent", "delivered", "read"]);
        assert_eq!(life("+15550000000"), ["accepted", "failed"]);
        assert_eq!(life("+15550001111"), ["accepted", "sent", "delivered"]);
        assert!(refusal("+15550002222", "m1").is_some_and(|e| !e.retryable && e.reference.as_deref() == Some("sbx.refused.m1")));
        assert!(refusal("+15550003333", "m1").is_some_and(|e| e.retryable && e.reference.is_none()));
        assert!(refusal("+15550001234", "m1").is_none());
        assert_eq!(report("failed").failure.unwrap().code, "recipient_unreachable");
        assert!(report("sent").failure.is_none());
        assert!(comment_refusal("u-2222").is_some_and(|e| !e.retryable && e.code == "comment_reply_refused"));
        assert!(comment_refusal("u-3333").is_some_and(|e| e.retryable));
        assert!(comment_refusal("u-42").is_none());
    }

    #[test]
    fn step_delay_setting() {
        assert_eq!(step_delay(None), DEFAULT_STEP_DELAY_MS);
        assert_eq!(step_delay(Some("0")), 0);
        assert_eq!(step_delay(Some("nope")), DEFAULT_STEP_DELAY_MS);
        assert_eq!(step_delay(Some("99999999")), MAX_STEP_DELAY_MS);
    }
}
