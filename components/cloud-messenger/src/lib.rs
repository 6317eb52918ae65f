//! `cloud-messenger`: a messenger plugin for a cloud chat API in the style
//! of the WhatsApp Cloud API, written against the provider package
//! (`kit/wit`, world `messenger-provider`) and nothing else of Switchboard.
//! It is the proof that a third party can write an adapter: the tests load
//! it from a plugin folder and run it against a local fake of the contract.
//!
//! The contract it speaks (settings `base-url`, `access-token`,
//! `app-secret`; our chatapp phone number id is the API's phone number id):
//! * send: `POST {base-url}/{phone-number-id}/messages` with a bearer token
//!   and `{"messaging_product": "whatsapp", "to", "type": "text" | "image",
//!   "text": {"body"} | "image": {"id"}, "biz_opaque_callback_data": <our
//!   message id>}`; the answer's `messages[0].id` is the provider's id;
//! * media: `POST {base-url}/{phone-number-id}/media`, multipart form data
//!   (`messaging_product`, `type`, `file`); the answer's `id`;
//! * errors: `{"error": {"message", "code", "fbtrace_id"}}`; 429 and 5xx
//!   are transient (retried by the host), other refusals are final;
//! * delivery statuses and customers' messages are pushed: a webhook body
//!   `{"entry": [{"changes": [{"value": {"metadata": {"phone_number_id"},
//!   "statuses": [{"id", "status", "errors": [{"code", "title"}]}],
//!   "contacts": [{"wa_id", "profile": {"name"}}], "messages": [{"id",
//!   "from", "type": "text", "text": {"body"}}]}}]}]}` signed with
//!   `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body with the app
//!   secret>`. So `track` has nothing to poll;
//! * the webhook address is verified by a GET with `hub.mode=subscribe`,
//!   `hub.verify_token` (the optional setting `verify-token`) and
//!   `hub.challenge`, answered with the challenge;
//! * photoapp (an Instagram-style API: sends, private and public replies to
//!   comments, and comments, reactions and referrals by webhook):
//!   `photoapp.rs`.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    wit_bindgen::generate!({ world: "messenger-provider", path: "../../kit/wit" });
}
mod photoapp;

use bindings::exports::switchboard::provider::messenger::{CommentReply, Guest, Media, OutboundMessage, Progress, ProviderError, StatusReport, StoredMedia};
use bindings::exports::switchboard::provider::messenger_webhooks::{self, InboundMessage, Pushed, PushedStatus};
use bindings::switchboard::provider::{clock, http, ids, settings};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};

/// How long the API keeps uploaded media.
pub const MEDIA_LIFETIME_MS: i64 = 30 * 24 * 3600 * 1000;

/// The two channels this plugin carries, by the names the provider package
/// gives them (a plugin's own enum: it depends on that package only). A
/// message's `channel` is parsed once, where it comes in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Channel {
    Chatapp,
    Photoapp,
}

impl Channel {
    /// Its name in the provider package.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Chatapp => "chatapp",
            Channel::Photoapp => "photoapp",
        }
    }

    /// The channel of a name, if it is one of the two.
    pub fn parse(name: &str) -> Option<Channel> {
        [Channel::Chatapp, Channel::Photoapp].into_iter().find(|c| c.name() == name)
    }
}

fn error(code: &str, message: impl Into<String>, retryable: bool) -> ProviderError {
    ProviderError { code: code.into(), message: message.into(), retryable, reference: None }
}

fn setting(name: &str) -> Result<String, ProviderError> {
    settings::get(name).filter(|v| !v.is_empty()).ok_or_else(|| error("plugin_not_configured", format!("the setting `{name}` is not set for this business"), false))
}

/// The API's answer to a refused or failed call, as a provider error.
pub fn api_error(status: u16, body: &[u8]) -> ProviderError {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let e = &parsed["error"];
    let code = e["code"].as_i64().unwrap_or(0);
    let message = e["message"].as_str().unwrap_or("the provider refused the request").chars().take(300).collect::<String>();
    let transient = status == 429 || status >= 500;
    let ours = match code {
        _ if transient => "provider_unavailable",
        190 => "provider_auth_failed",
        131026 | 131030 => "recipient_unreachable",
        131047 => "outside_customer_window",
        100 => "invalid_request",
        _ => "provider_rejected",
    };
    ProviderError { code: ours.into(), message, retryable: transient, reference: e["fbtrace_id"].as_str().map(String::from) }
}

/// Sends a request to the API; a transport failure is transient.
fn call(method: &str, url: String, content_type: &str, body: Vec<u8>) -> Result<Value, ProviderError> {
    let token = setting("access-token")?;
    let req = http::Request { method: method.into(), url, headers: vec![("authorization".into(), format!("Bearer {token}")), ("content-type".into(), content_type.into())], body };
    let resp = http::send(&req).map_err(|why| error("provider_unreachable", why, true))?;
    if !(200..300).contains(&resp.status) {
        return Err(api_error(resp.status, &resp.body));
    }
    serde_json::from_slice(&resp.body).map_err(|_| error("provider_bad_answer", "the provider's answer is not JSON", true))
}

fn base() -> Result<String, ProviderError> {
    Ok(setting("base-url")?.trim_end_matches('/').to_string())
}

/// The send request's body for `m`.
pub fn message_body(m: &OutboundMessage) -> Result<Value, ProviderError> {
    let to = m.recipient.trim_start_matches('+');
    let mut body = json!({"messaging_product": "whatsapp", "recipient_type": "individual", "to": to, "biz_opaque_callback_data": m.message_id});
    match (m.kind.as_str(), &m.text, &m.provider_media_id) {
        ("text", Some(text), _) => body["text"] = json!({"body": text}),
        ("image", _, Some(media)) => {
            body["image"] = match &m.text {
                Some(caption) => json!({"id": media, "caption": caption}),
                None => json!({"id": media}),
            }
        }
        _ => return Err(error("unsupported_message", format!("cannot send a `{}` message", m.kind), false)),
    }
    body["type"] = json!(m.kind);
    Ok(body)
}

/// `multipart/form-data` of a media upload: (content type, body).
pub fn multipart(boundary: &str, m: &Media) -> (String, Vec<u8>) {
    let mut b = Vec::new();
    let file_name: String = m.file_name.chars().filter(|c| *c != '"' && *c != '\r' && *c != '\n').collect();
    for (name, value) in [("messaging_product", "whatsapp"), ("type", m.mime_type.as_str())] {
        b.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes());
    }
    b.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\nContent-Type: {}\r\n\r\n", m.mime_type).as_bytes());
    b.extend_from_slice(&m.bytes);
    b.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), b)
}

/// Checks `X-Hub-Signature-256` over `body` with `secret` (constant time).
pub fn signed(secret: &str, headers: &[(String, String)], body: &[u8]) -> bool {
    let Some(given) = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("x-hub-signature-256")).and_then(|(_, v)| v.strip_prefix("sha256=")) else {
        return false;
    };
    let Ok(given) = hex::decode(given) else { return false };
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

/// Answers the provider's check of the webhook address: the challenge when
/// `hub.mode` is `subscribe` and `hub.verify_token` is the business's
/// `verify-token` (compared in constant time).
pub fn verify(token: Option<&str>, query: &[(String, String)]) -> Result<String, ProviderError> {
    use subtle::ConstantTimeEq;
    let get = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return Err(error("not_supported", "no `verify-token` is set for this business", false));
    };
    let given = get("hub.verify_token").unwrap_or("");
    let matches = given.len() == token.len() && bool::from(given.as_bytes().ct_eq(token.as_bytes()));
    match (get("hub.mode"), get("hub.challenge")) {
        (Some("subscribe"), Some(challenge)) if matches => Ok(challenge.to_string()),
        _ => Err(error("verification_refused", "the query is not a subscription check with this business's verify token", false)),
    }
}

/// What a webhook body carries: the chat half's delivery statuses and
/// customers' text messages (other kinds of message, e.g. a location, are
/// not taken yet), or the photoapp half's (`"object": "instagram"`).
pub fn read(body: &Value) -> Pushed {
    let mut out = Pushed { statuses: Vec::new(), messages: Vec::new(), comments: Vec::new(), reactions: Vec::new(), referrals: Vec::new() };
    if body["object"] == "instagram" {
        photoapp::read(body, &mut out);
        return out;
    }
    for entry in body["entry"].as_array().into_iter().flatten() {
        for change in entry["changes"].as_array().into_iter().flatten() {
            let value = &change["value"];
            for s in value["statuses"].as_array().into_iter().flatten() {
                let (Some(id), Some(status)) = (s["id"].as_str(), s["status"].as_str()) else { continue };
                let ours = match status {
                    "sent" | "delivered" | "read" | "failed" => status,
                    _ => continue,
                };
                let failure = (ours == "failed").then(|| {
                    let e = &s["errors"][0];
                    let mut f = api_error(400, json!({"error": {"code": e["code"], "message": e["title"]}}).to_string().as_bytes());
                    f.retryable = false;
                    f
                });
                out.statuses.push(PushedStatus { provider_message_id: id.into(), report: StatusReport { status: ours.into(), provider_status: status.into(), failure } });
            }
            let Some(recipient) = value["metadata"]["phone_number_id"].as_str() else { continue };
            for m in value["messages"].as_array().into_iter().flatten() {
                let (Some(id), Some(from), Some(text)) = (m["id"].as_str(), m["from"].as_str(), m["text"]["body"].as_str()) else { continue };
                let name = value["contacts"].as_array().into_iter().flatten().find(|c| c["wa_id"].as_str() == Some(from)).and_then(|c| c["profile"]["name"].as_str());
                out.messages.push(InboundMessage {
                    channel: Channel::Chatapp.name().into(),
                    recipient_id: recipient.into(),
                    sender: format!("+{}", from.trim_start_matches('+')),
                    name: name.map(String::from),
                    text: text.into(),
                    provider_message_id: id.into(),
                });
            }
        }
    }
    out
}

struct CloudMessenger;

impl Guest for CloudMessenger {
    fn upload_media(m: Media) -> Result<StoredMedia, ProviderError> {
        let boundary = format!("sb-{}", ids::uuid_v7());
        let (content_type, body) = multipart(&boundary, &m);
        let answer = call("POST", format!("{}/{}/media", base()?, m.sender_id), &content_type, body)?;
        let id = answer["id"].as_str().ok_or_else(|| error("provider_bad_answer", "the upload's answer has no id", true))?;
        Ok(StoredMedia { provider_media_id: id.into(), provider_status: "uploaded".into(), expires_at_ms: clock::now_ms() + MEDIA_LIFETIME_MS })
    }

    fn submit(m: OutboundMessage) -> Result<String, ProviderError> {
        if Channel::parse(&m.channel) == Some(Channel::Photoapp) {
            let body = photoapp::message_body(&m).ok_or_else(|| error("unsupported_message", "a photoapp message is text only", false))?;
            let answer = call("POST", format!("{}/{}/messages", base()?, m.sender_id), "application/json", body.to_string().into_bytes())?;
            return answer["message_id"].as_str().map(String::from).ok_or_else(|| error("provider_bad_answer", "the send's answer has no message id", true));
        }
        let body = message_body(&m)?;
        let answer = call("POST", format!("{}/{}/messages", base()?, m.sender_id), "application/json", body.to_string().into_bytes())?;
        answer["messages"][0]["id"].as_str().map(String::from).ok_or_else(|| error("provider_bad_answer", "the send's answer has no message id", true))
    }

    fn reply_to_comment(r: CommentReply) -> Result<String, ProviderError> {
        let answer = call("POST", format!("{}/{}/replies", base()?, r.comment_id), "application/json", json!({"message": r.text}).to_string().into_bytes())?;
        answer["id"].as_str().map(String::from).ok_or_else(|| error("provider_bad_answer", "the reply's answer has no id", true))
    }

    /// Statuses come by webhook; there is nothing to poll.
    fn track(_id: String, _recipient: String, _last: String) -> Result<Progress, ProviderError> {
        Ok(Progress { report: None, check_after_ms: None })
    }
}

impl messenger_webhooks::Guest for CloudMessenger {
    fn receive(headers: Vec<(String, String)>, body: Vec<u8>) -> Result<Pushed, ProviderError> {
        if !signed(&setting("app-secret")?, &headers, &body) {
            return Err(error("signature_invalid", "the webhook's X-Hub-Signature-256 does not match its body", false));
        }
        let parsed: Value = serde_json::from_slice(&body).map_err(|_| error("invalid_webhook", "the webhook body is not JSON", false))?;
        Ok(read(&parsed))
    }

    fn verify(query: Vec<(String, String)>) -> Result<String, ProviderError> {
        verify(settings::get("verify-token").as_deref(), &query)
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(CloudMessenger with_types_in bindings);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_ours() {
        let e = api_error(400, br#"{"error":{"message":"bad number","code":131026,"fbtrace_id":"Ab1"}}"#);
        assert_eq!((e.code.as_str(), e.retryable, e.reference.as_deref()), ("recipient_unreachable", false, Some("Ab1")));
        assert!(api_error(503, b"<html>").retryable);
        assert_eq!(api_error(401, br#"{"error":{"code":190}}"#).code, "provider_auth_failed");
    }

    #[test]
    fn signatures_and_statuses() {
        let body = br#"{"entry":[{"changes":[{"value":{"statuses":[{"id":"wamid.1","status":"delivered"},{"id":"wamid.2","status":"failed","errors":[{"code":131026,"title":"Undeliverable"}]},{"id":"wamid.3","status":"warning"}]}}]}]}"#;
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"s3cret").unwrap();
        mac.update(body);
        let sig = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
        assert!(signed("s3cret", &[("X-Hub-Signature-256".into(), sig.clone())], body));
        assert!(!signed("other", &[("x-hub-signature-256".into(), sig)], body));
        assert!(!signed("s3cret", &[], body));
        let s = read(&serde_json::from_slice(body).unwrap()).statuses;
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].provider_message_id.as_str(), s[0].report.status.as_str()), ("wamid.1", "delivered"));
        assert_eq!(s[1].report.failure.as_ref().unwrap().code, "recipient_unreachable");
        let inbound = json!({"entry": [{"changes": [{"value": {"metadata": {"phone_number_id": "pn-1"},
            "contacts": [{"wa_id": "15550001234", "profile": {"name": "Ada"}}],
            "messages": [{"id": "wamid.in1", "from": "15550001234", "type": "text", "text": {"body": "hello"}}, {"id": "wamid.in2", "from": "15550001234", "type": "location"}]}}]}]});
        let m = read(&inbound).messages;
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].recipient_id.as_str(), m[0].sender.as_str(), m[0].name.as_deref(), m[0].text.as_str()), ("pn-1", "+15550001234", Some("Ada"), "hello"));
    }

    #[test]
    fn the_address_check_needs_the_verify_token() {
        let q =
            |mode: &str, token: &str| vec![("hub.mode".to_string(), mode.to_string()), ("hub.verify_token".to_string(), token.to_string()), ("hub.challenge".to_string(), "1158201444".to_string())];
        assert_eq!(verify(Some("vt-1"), &q("subscribe", "vt-1")).unwrap(), "1158201444");
        assert_eq!(verify(Some("vt-1"), &q("subscribe", "vt-2")).unwrap_err().code, "verification_refused");
        assert_eq!(verify(Some("vt-1"), &q("unsubscribe", "vt-1")).unwrap_err().code, "verification_refused");
        assert_eq!(verify(None, &q("subscribe", "")).unwrap_err().code, "not_supported");
    }
}
