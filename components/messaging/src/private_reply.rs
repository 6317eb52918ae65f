//! sendPhotoappPrivateReply (ours, operation 75): the business answers a
//! public comment on one of its posts privately, with a direct message to
//! the commenter. The photoapp platform's rule (Instagram's): one private
//! reply per comment, within 7 days of the comment.
//!
//! The account must be the connected photoapp account (`404
//! photoapp_account_not_connected`) and the comment one of its comments,
//! named by the provider's id as `photoapp.comment.received` gives it
//! (`comment.commentId`) or by ours as the timeline does (`404
//! comment_not_found`). A comment answered privately before is `409
//! private_reply_already_sent`; one written more than 7 days ago (its
//! provider time, else its arrival) is `409 private_reply_window_closed`; a
//! commenter linked to a blocked contact is `409 contact_blocked`.
//!
//! The reply is a text message of the commenter's conversation, queued like
//! any photoapp send (`conversation::queue_private_reply`: delivery, its
//! `photoapp.message.*` events, the linked contact's timeline), whose
//! delivery names the comment (`reply-to-comment`): the provider addresses
//! the commenter by it. The comment keeps the message's id, in the same
//! transaction, so a second try finds it. The answer is `202` like a send.
//! The agent's automatic answer to a comment stays public
//! (`jobs/comment_reply.rs`).

use serde::Deserialize;
use serde_json::json;
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::{clock, contact, fail, now, params, req, success, time, HResult, Request, Success};

use crate::conversation;

/// How long after a comment its private reply may be sent.
pub const WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    photoapp_account_id: String,
    comment_id: String,
    text: String,
}

pub fn send(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let b: Body = req::body(r)?;
    if !switchboard_channel_connections::is_connected(&db::Store, biz, "photoapp", &b.photoapp_account_id)? {
        return Err(fail::not_found("photoapp_account_not_connected", "`photoappAccountId` is not the connected photoapp account of this business"));
    }
    let text = Some(b.text.clone()).filter(|t| !t.trim().is_empty()).ok_or_else(|| fail::validation("text_required", "`text` must not be blank"))?;
    type Comment = (String, String, String, Option<String>, String, String, Option<String>);
    let (comment_id, provider_comment_id, commented_at, private_reply, conversation_id, commenter, contact_id) = db::query_one_as::<Comment>(
        "SELECT c.id, c.provider_comment_id, IFNULL(c.commented_at, c.created_at), c.private_reply_message_id, v.id, v.participant_id, v.contact_id \
         FROM photoapp_comments c JOIN conversations v ON v.business_id = c.business_id AND v.id = c.conversation_id \
         WHERE c.business_id = ?1 AND c.account_id = ?2 AND (c.provider_comment_id = ?3 OR c.id = ?3)",
        &params![biz, &b.photoapp_account_id, &b.comment_id],
    )?
    .ok_or_else(|| fail::not_found("comment_not_found", "`commentId` names no comment on this account's posts"))?;
    if private_reply.is_some() {
        return Err(fail::conflict("private_reply_already_sent", "this comment was answered privately already; a comment takes one private reply"));
    }
    // Stored times share one form (UTC, milliseconds), so they compare as text.
    let opened_after = time::rfc3339_ms(clock::now_ms() - WINDOW_MS);
    if commented_at <= opened_after {
        return Err(fail::conflict("private_reply_window_closed", format!("a comment may be answered privately within 7 days of it; this one was written at {commented_at}")));
    }
    if let Some(id) = &contact_id {
        if contact::blocked(biz, id)? {
            return Err(fail::conflict("contact_blocked", "communication with this contact is blocked"));
        }
    }
    let now = now();
    let (message_id, task_ref, correlation_id) = conversation::queue_private_reply(
        &conversation::Outbound {
            business: biz,
            channel: Channel::Photoapp,
            conversation_id: &conversation_id,
            contact_id: contact_id.as_deref(),
            phone_number_id: &b.photoapp_account_id,
            recipient: &commenter,
            kind: "text",
            text: Some(text),
            media_id: None,
            now: &now,
        },
        &conversation::PrivateReplyTo { comment_id: &comment_id, provider_comment_id: &provider_comment_id },
    )?;
    conversation::record_sender(biz, &message_id, &conversation::Sender::of(r.caller.as_deref()))?;
    db::execute("UPDATE photoapp_comments SET private_reply_message_id = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), comment_id.as_str().into(), message_id.as_str().into()])?;
    success(202, &json!({"messageId": message_id, "taskRef": task_ref, "providerMessageRef": null, "queued": true, "correlationId": correlation_id}))
}
