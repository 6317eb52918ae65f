//! sendMessage (operation 8) and getMessage (operation 9).
//!
//! Send, chatapp shape: the phone number is a connected chatapp number (`400
//! phone_number_not_connected`); `to` is E.164 (`400 invalid_recipient`);
//! `text` needs `text` (`400 text_required`), `image` needs `mediaId`
//! (`400 media_id_required`) naming an upload of this business for the same
//! number (`404 media_not_found`) that has not expired (`409
//! media_expired`); the host already required `chatapp:media` for images. A
//! contact with `communication_blocked` is refused (`409 contact_blocked`).
//! The contact is resolved by mobile or created (category "Outbound", see
//! `switchboard_guest::contact`), the conversation found or created
//! (`conversation.rs`), the message stored
//! (`outbound`, `queued`), a timeline entry appended and one
//! `messaging.deliver` job enqueued, all in the request's transaction; the
//! answer is `202` with the job id as `taskRef`.
//!
//! Send, photoapp shape: the account must be the connected photoapp account
//! (`404 photoapp_account_not_connected`), and the recipient must have
//! started a conversation with that account (an inbound photoapp message made
//! one), else `409 photoapp_conversation_required`; a participant linked to a
//! blocked contact is `409 contact_blocked`. The message is queued like a
//! chatapp text (recipient = the photoapp user id) and joins the linked
//! contact's timeline, if any.
//!
//! Read: the delivery state of an outbound message of this business; any
//! other id is `404 message_not_found`. `taskStatus` is the delivery job's
//! state (`pending`, `leased`, `done`, `dead`). A photoapp message has the
//! same shape with `phoneNumberId` null and the photoapp user id as
//! `recipient`.

use crate::status::MessageStatus;
use serde::Deserialize;
use serde_json::{json, Value as J};
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::row_struct;
use switchboard_guest::{e164, fail, is_uuid, now, ok, params, req, success, HResult, Request, Success};

use crate::conversation;
use crate::media::{chatapp_connected, not_connected};
use switchboard_guest::contact;

pub const CATEGORY: &str = "Outbound";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendBody {
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    phone_number_id: Option<String>,
    #[serde(default)]
    photoapp_account_id: Option<String>,
    to: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    media_id: Option<String>,
    #[serde(default)]
    caption: Option<String>,
}

pub fn send(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let b: SendBody = req::body(r)?;
    if b.channel.as_deref().and_then(Channel::parse) == Some(Channel::Photoapp) {
        let account = b.photoapp_account_id.clone().unwrap_or_default();
        if !switchboard_channel_connections::is_connected(&db::Store, biz, "photoapp", &account)? {
            return Err(fail::not_found("photoapp_account_not_connected", "`photoappAccountId` is not the connected photoapp account of this business"));
        }
        let Some(p) = conversation::photoapp_participant(biz, &account, &b.to)? else {
            return Err(fail::conflict(
                "photoapp_conversation_required",
                "the recipient has not started a photoapp conversation with this account; photoapp messages can only answer a user who wrote first",
            ));
        };
        if let Some(id) = &p.contact_id {
            if contact::blocked(biz, id)? {
                return Err(blocked());
            }
        }
        let text = b.text.clone().filter(|t| !t.trim().is_empty()).ok_or_else(|| fail::validation("text_required", "type `text` needs `text`"))?;
        let now = now();
        let (message_id, task_ref, correlation_id) = conversation::queue_outbound(&conversation::Outbound {
            business: biz,
            channel: Channel::Photoapp,
            conversation_id: &p.conversation_id,
            contact_id: p.contact_id.as_deref(),
            phone_number_id: &account,
            recipient: &b.to,
            kind: "text",
            text: Some(text),
            media_id: None,
            now: &now,
        })?;
        conversation::record_sender(biz, &message_id, &conversation::Sender::of(r.caller.as_deref()))?;
        return queued(&message_id, &task_ref, &correlation_id);
    }
    let pnid = b.phone_number_id.clone().unwrap_or_default();
    if !chatapp_connected(biz, &pnid)? {
        return Err(not_connected(&pnid));
    }
    let mobile = e164::normalize(&b.to).ok_or_else(|| fail::validation("invalid_recipient", "`to` must be an E.164 mobile number"))?;
    let now = now();
    let (text, media_id) = match b.kind.as_str() {
        "text" => {
            let t = b.text.clone().filter(|t| !t.trim().is_empty()).ok_or_else(|| fail::validation("text_required", "type `text` needs `text`"))?;
            (Some(t), None)
        }
        "image" => {
            let id = b.media_id.clone().ok_or_else(|| fail::validation("media_id_required", "type `image` needs `mediaId` (from POST /media)"))?;
            let missing = || fail::not_found("media_not_found", "`mediaId` does not name media uploaded by this business for this phone number");
            if !is_uuid(&id) {
                return Err(missing());
            }
            let expires_at = db::query_one_as::<String>("SELECT expires_at FROM media WHERE business_id = ?1 AND id = ?2 AND phone_number_id = ?3", &params![biz, &id, &pnid])?.ok_or_else(missing)?;
            if expires_at <= now {
                return Err(fail::conflict("media_expired", "the media has expired at the provider; upload it again"));
            }
            (b.caption.clone().or(b.text.clone()), Some(id))
        }
        other => return Err(fail::validation("invalid_type", format!("unsupported message type `{other}`"))),
    };
    if contact::find(biz, &mobile)?.is_some_and(|c| c.blocked) {
        return Err(blocked());
    }
    let c = contact::resolve(biz, &mobile, &mobile, CATEGORY, &now)?;
    let conversation_id = conversation::conversation(biz, &pnid, &c.id, &now)?;
    let (message_id, task_ref, correlation_id) = conversation::queue_outbound(&conversation::Outbound {
        business: biz,
        channel: Channel::Chatapp,
        conversation_id: &conversation_id,
        contact_id: Some(&c.id),
        phone_number_id: &pnid,
        recipient: &mobile,
        kind: &b.kind,
        text,
        media_id,
        now: &now,
    })?;
    conversation::record_sender(biz, &message_id, &conversation::Sender::of(r.caller.as_deref()))?;
    queued(&message_id, &task_ref, &correlation_id)
}

fn queued(message_id: &str, task_ref: &str, correlation_id: &str) -> HResult<Success> {
    success(202, &json!({"messageId": message_id, "taskRef": task_ref, "providerMessageRef": J::Null, "queued": true, "correlationId": correlation_id}))
}

fn blocked() -> switchboard_guest::Failure {
    fail::conflict("contact_blocked", "communication with this contact is blocked")
}

pub fn get(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = req::path_uuid(r, "messageId", "message_not_found", "message")?;
    let m = db::query_one_as::<Message>(
        "SELECT m.id, m.business_id, m.conversation_id, m.phone_number_id, m.recipient, m.type, m.status, IFNULL(j.state, 'unknown'), \
         m.provider_message_id, m.provider_status, m.queued_at, m.sent_at, m.delivered_at, m.read_at, m.failed_at, m.failure_code, m.failure_message, m.channel \
         FROM messages m LEFT JOIN jobs j ON j.id = m.task_ref \
         WHERE m.business_id = ?1 AND m.id = ?2 AND m.direction = 'outbound'",
        &params![biz, id],
    )?
    .ok_or_else(|| fail::not_found("message_not_found", "message not found"))?;
    let failure = if m.failure_code.is_some() || m.failure_message.is_some() || MessageStatus::parse(&m.status) == Some(MessageStatus::Failed) {
        json!({"code": m.failure_code, "message": m.failure_message})
    } else {
        J::Null
    };
    ok(&json!({
        "messageId": m.id,
        "businessId": m.business_id,
        "conversationId": m.conversation_id,
        // A photoapp message has an account, not a number.
        "phoneNumberId": if m.channel == Channel::Chatapp { m.phone_number_id } else { None },
        "recipient": m.recipient,
        "type": m.kind,
        "status": m.status,
        "taskStatus": m.task_status,
        "providerMessageId": m.provider_message_id,
        "providerStatus": m.provider_status,
        "queuedAt": m.queued_at,
        "sentAt": m.sent_at,
        "deliveredAt": m.delivered_at,
        "readAt": m.read_at,
        "failedAt": m.failed_at,
        "failure": failure,
    }))
}

row_struct! {
    /// An outbound message as getMessage reads it (with its delivery job's state).
    struct Message {
        id: String,
        business_id: String,
        conversation_id: Option<String>,
        phone_number_id: Option<String>,
        recipient: String,
        kind: String,
        status: String,
        task_status: String,
        provider_message_id: Option<String>,
        provider_status: Option<String>,
        queued_at: String,
        sent_at: Option<String>,
        delivered_at: Option<String>,
        read_at: Option<String>,
        failed_at: Option<String>,
        failure_code: Option<String>,
        failure_message: Option<String>,
        channel: Channel,
    }
}
