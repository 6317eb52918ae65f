//! The photoapp half of the contract, in the style of the Instagram
//! messaging API (same host, token and app secret as the chat half):
//! * send: `POST {base-url}/{account-id}/messages` with `{"recipient":
//!   {"id": <user id>}, "message": {"text"}}`; a private reply to a public
//!   comment names the comment instead, `{"recipient": {"comment_id"}}`
//!   (the API allows one per comment, within 7 days of it); the answer's
//!   `message_id` is the provider's id;
//! * public reply: `POST {base-url}/{comment-id}/replies` with
//!   `{"message"}`; the answer's `id`;
//! * webhooks with `"object": "instagram"`: `entry[].messaging[]` carries
//!   direct messages (`message.mid`, `message.text`; echoes of our own are
//!   skipped), reactions (`reaction.mid`, `action` `react` | `unreact`,
//!   `emoji`) and referrals (`referral.source`, `ad_id`, or inside a
//!   message), `entry[].changes[]` of field `comments` public comments
//!   (`value.id`, `text`, `from.id`, `from.username`, `media.id`). The
//!   entry's `id` is the account; times are ms (`timestamp`) or seconds
//!   (`entry.time`).

use crate::bindings::exports::switchboard::provider::messenger::OutboundMessage;
use crate::bindings::exports::switchboard::provider::messenger_webhooks::{InboundComment, InboundMessage, InboundReaction, InboundReferral, Pushed};
use crate::Channel;
use serde_json::{json, Value};

/// The send request's body for a photoapp message: text only.
pub fn message_body(m: &OutboundMessage) -> Option<Value> {
    let text = m.text.as_deref().filter(|_| m.kind == "text")?;
    let recipient = match &m.reply_to_comment {
        Some(comment) => json!({"comment_id": comment}),
        None => json!({"id": m.recipient}),
    };
    Some(json!({"recipient": recipient, "message": {"text": text}}))
}

/// A provider time in ms: `timestamp` is in ms, an entry's `time` may be
/// in seconds.
fn ms(v: &Value) -> Option<i64> {
    let t = v.as_i64()?;
    Some(if t < 100_000_000_000 { t * 1000 } else { t })
}

/// `ADS` → `ad`, anything else lower-cased to letters and `_` (our sources).
fn source(s: &str) -> String {
    match s {
        "ADS" => "ad".into(),
        _ => s.chars().map(|c| if c.is_ascii_alphabetic() { c.to_ascii_lowercase() } else { '_' }).take(32).collect(),
    }
}

fn referral(account: &str, sender: &str, r: &Value) -> Option<InboundReferral> {
    let s = source(r["source"].as_str()?);
    (!s.is_empty()).then(|| InboundReferral {
        recipient_id: account.into(),
        sender: sender.into(),
        source: s,
        ad_id: r["ad_id"].as_str().map(String::from),
        post_id: r["post_id"].as_str().map(String::from),
    })
}

/// Adds what an `instagram` webhook body carries to `out`.
pub fn read(body: &Value, out: &mut Pushed) {
    for entry in body["entry"].as_array().into_iter().flatten() {
        let Some(account) = entry["id"].as_str() else { continue };
        for e in entry["messaging"].as_array().into_iter().flatten() {
            let Some(sender) = e["sender"]["id"].as_str().filter(|s| *s != account) else { continue };
            let at = ms(&e["timestamp"]);
            if let Some(r) = e.get("reaction") {
                let (Some(action), Some(emoji)) = (r["action"].as_str(), r["emoji"].as_str().or(r["reaction"].as_str())) else { continue };
                out.reactions.push(InboundReaction {
                    recipient_id: account.into(),
                    sender: sender.into(),
                    reaction: emoji.into(),
                    message_id: r["mid"].as_str().map(String::from),
                    removed: action == "unreact",
                    occurred_at_ms: at,
                });
            }
            if let Some(r) = e.get("referral").or(e["message"].get("referral")) {
                out.referrals.extend(referral(account, sender, r));
            }
            let m = &e["message"];
            if m["is_echo"].as_bool() == Some(true) {
                continue;
            }
            if let (Some(mid), Some(text)) = (m["mid"].as_str(), m["text"].as_str()) {
                out.messages.push(InboundMessage {
                    channel: Channel::Photoapp.name().into(),
                    recipient_id: account.into(),
                    sender: sender.into(),
                    name: None,
                    text: text.into(),
                    provider_message_id: mid.into(),
                });
            }
        }
        for change in entry["changes"].as_array().into_iter().flatten().filter(|c| c["field"] == "comments") {
            let v = &change["value"];
            // The account's own comments (its public replies) come back too.
            let (Some(id), Some(text), Some(from)) = (v["id"].as_str(), v["text"].as_str(), v["from"]["id"].as_str().filter(|f| *f != account)) else { continue };
            out.comments.push(InboundComment {
                recipient_id: account.into(),
                sender: from.into(),
                name: v["from"]["username"].as_str().map(String::from),
                text: text.into(),
                post_id: v["media"]["id"].as_str().map(String::from),
                comment_id: id.into(),
                occurred_at_ms: ms(&entry["time"]),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_comments_reactions_referrals_and_messages() {
        let body = json!({"object": "instagram", "entry": [
            {"id": "ig-1", "time": 1732500000, "changes": [
                {"field": "comments", "value": {"id": "c-1", "text": "Oslo?", "from": {"id": "u-9", "username": "ola"}, "media": {"id": "p-1"}}},
                {"field": "comments", "value": {"id": "c-2", "text": "Yes", "from": {"id": "ig-1"}}},
                {"field": "mentions", "value": {"id": "x"}}]},
            {"id": "ig-1", "messaging": [
                {"sender": {"id": "u-7"}, "recipient": {"id": "ig-1"}, "timestamp": 1732500000123_i64, "reaction": {"mid": "m-1", "action": "unreact", "emoji": "❤️"}},
                {"sender": {"id": "u-7"}, "recipient": {"id": "ig-1"}, "timestamp": 1, "referral": {"source": "ADS", "ad_id": "ad-1", "type": "OPEN_THREAD"}},
                {"sender": {"id": "u-7"}, "recipient": {"id": "ig-1"}, "timestamp": 2, "message": {"mid": "m-2", "text": "hi"}},
                {"sender": {"id": "ig-1"}, "recipient": {"id": "u-7"}, "timestamp": 3, "message": {"mid": "m-3", "text": "echo", "is_echo": true}}]}]});
        let mut p = Pushed { statuses: vec![], messages: vec![], comments: vec![], reactions: vec![], referrals: vec![] };
        read(&body, &mut p);
        assert_eq!(p.comments.len(), 1, "the account's own comment is skipped");
        let c = &p.comments[0];
        assert_eq!((c.recipient_id.as_str(), c.sender.as_str(), c.name.as_deref(), c.post_id.as_deref(), c.occurred_at_ms), ("ig-1", "u-9", Some("ola"), Some("p-1"), Some(1_732_500_000_000)));
        let r = &p.reactions[0];
        assert_eq!((r.reaction.as_str(), r.message_id.as_deref(), r.removed, r.occurred_at_ms), ("❤️", Some("m-1"), true, Some(1_732_500_000_123)));
        assert_eq!((p.referrals[0].source.as_str(), p.referrals[0].ad_id.as_deref()), ("ad", Some("ad-1")));
        assert_eq!(p.messages.len(), 1, "the echo is skipped");
        assert_eq!((p.messages[0].channel.as_str(), p.messages[0].provider_message_id.as_str()), ("photoapp", "m-2"));
    }

    #[test]
    fn a_private_reply_names_the_comment() {
        let m = |comment: Option<&str>| OutboundMessage {
            message_id: "m".into(),
            channel: "photoapp".into(),
            sender_id: "ig-1".into(),
            recipient: "u-9".into(),
            kind: "text".into(),
            text: Some("Sent you the details".into()),
            provider_media_id: None,
            reply_to_comment: comment.map(String::from),
        };
        assert_eq!(message_body(&m(Some("c-1"))).unwrap()["recipient"], json!({"comment_id": "c-1"}));
        assert_eq!(message_body(&m(None)).unwrap()["recipient"], json!({"id": "u-9"}));
    }
}
