//! linkParticipantContact (operation 34): links a channel participant's
//! earlier history to a mobile-first contact, without OTP verification.
//!
//! The participant (path `participantId`) is a conversation id of this
//! business: one chatapp/photoapp conversation is one participant on one
//! business number or account. An id that is malformed, unknown, of another
//! business, or of a conversation on another `channel` is
//! `404 participant_not_found`.
//!
//! The contact with `mobile` is resolved, or created (named `name`, else the
//! mobile) in the business's "Inbound" category (the same category inbound
//! messages use, created when missing). Then, in the request's transaction,
//! the conversation, its messages and their timeline entries move to that
//! contact (a photoapp participant never linked before has no entries: they
//! are written now, one per message). When the contact already has a conversation on the same number,
//! the participant's messages join that conversation and the participant's
//! conversation is removed (its id then no longer resolves). The previous
//! contact is kept, even if it is left without history. `linkedEntries`
//! counts the timeline entries that moved (0 when the participant was already
//! linked to this contact).

use serde::Deserialize;
use serde_json::json;
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::{contact, e164, fail, now, ok, params, req, timeline, Failure, HResult, Request, Success};

use crate::fields;
use crate::model::violation;

/// The category a contact created by a link gets (shared with inbound messages).
pub const CATEGORY: &str = "Inbound";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LinkBody {
    channel: String,
    mobile: String,
    #[serde(default)]
    name: Option<String>,
}

fn participant_not_found() -> Failure {
    fail::not_found("participant_not_found", "participant not found")
}

pub fn link(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let conversation = req::path_uuid(req, "participantId", "participant_not_found", "participant")?;
    let body: LinkBody = req::body(req)?;
    let mobile = e164::normalize(&body.mobile).ok_or_else(|| fail::validation("invalid_mobile", "`mobile` must be an E.164 number: +, a digit 1-9, then 7 to 14 digits"))?;
    let name = match body.name.as_deref() {
        Some(n) => fields::contact_name(n).map_err(violation)?,
        None => mobile.clone(),
    };
    // A name that is no channel has no conversation.
    let channel = Channel::parse(&body.channel).ok_or_else(participant_not_found)?;
    let (old_contact, number) = db::query_one_as::<(Option<String>, Option<String>)>(
        "SELECT contact_id, phone_number_id FROM conversations WHERE business_id = ?1 AND id = ?2 AND channel = ?3",
        &params![biz, conversation, channel],
    )?
    .ok_or_else(participant_not_found)?;
    let now = now();

    // The mobile-first contact, resolved or created.
    let contact = contact::resolve(biz, &mobile, &name, CATEGORY, &now)?.id;
    if old_contact.as_deref() == Some(contact.as_str()) {
        return ok(&json!({"contactId": contact, "linkedEntries": 0}));
    }

    // Timeline entries of the conversation's messages (before the messages
    // move): moved from the previous contact, or written now for a photoapp
    // participant that had none.
    let linked = match &old_contact {
        Some(old) => db::execute(
            "UPDATE timeline_entries SET contact_id = ?3 WHERE business_id = ?1 AND contact_id = ?4 AND kind = 'message' \
             AND (json_extract(summary_json, '$.messageId') IN (SELECT id FROM messages WHERE business_id = ?1 AND conversation_id = ?2) \
                  OR json_extract(summary_json, '$.commentId') IN (SELECT id FROM photoapp_comments WHERE business_id = ?1 AND conversation_id = ?2))",
            &params![biz, conversation, &contact, old],
        )?,
        None => first_timeline_entries(biz, conversation, &contact)?,
    };
    // A chatapp contact's existing conversation on the same number, if any
    // (a photoapp conversation is one user's, never merged).
    let existing = if channel == Channel::Chatapp {
        db::query_one_as::<String>("SELECT id FROM conversations WHERE business_id = ?1 AND channel = ?2 AND phone_number_id IS ?3 AND contact_id = ?4", &params![biz, channel, number, &contact])?
    } else {
        None
    };
    match existing {
        Some(target) => {
            db::execute("UPDATE messages SET contact_id = ?3, conversation_id = ?4 WHERE business_id = ?1 AND conversation_id = ?2", &params![biz, conversation, &contact, target])?;
            db::execute("DELETE FROM conversations WHERE business_id = ?1 AND id = ?2", &params![biz, conversation])?;
        }
        None => {
            db::execute("UPDATE messages SET contact_id = ?3 WHERE business_id = ?1 AND conversation_id = ?2", &params![biz, conversation, &contact])?;
            db::execute("UPDATE conversations SET contact_id = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, conversation, &contact])?;
        }
    }
    ok(&json!({"contactId": contact, "linkedEntries": linked}))
}

/// Timeline entries for every message, comment and public reply of a
/// conversation that had no contact; returns how many.
fn first_timeline_entries(biz: &str, conversation: &str, contact: &str) -> HResult<u64> {
    type Message = (String, Channel, String, String, Option<String>, String, Option<String>);
    let messages: Vec<Message> = db::query_as(
        "SELECT m.id, m.channel, m.direction, m.type, m.text, m.created_at, c.id FROM messages m \
         LEFT JOIN photoapp_comments c ON c.business_id = m.business_id AND c.private_reply_message_id = m.id \
         WHERE m.business_id = ?1 AND m.conversation_id = ?2 ORDER BY m.created_at, m.id",
        &params![biz, conversation],
    )?;
    let message_count = messages.len();
    for (id, channel, direction, kind, text, created_at, comment) in messages {
        let mut summary = json!({"messageId": id, "type": kind, "text": text});
        // A photoapp private reply names its comment (the messaging area writes the same).
        if let Some(comment) = comment {
            summary["privateReplyTo"] = comment.into();
        }
        timeline::append_message(biz, contact, channel.name(), &direction, &created_at, &summary)?;
    }
    // A photoapp participant's public comments (the messaging area writes
    // the same summary for a linked commenter).
    type Comment = (String, String, Option<String>, String, String, Option<String>, Option<String>);
    let comments: Vec<Comment> = db::query_as(
        "SELECT id, provider_comment_id, post_id, text, created_at, reply_text, replied_at FROM photoapp_comments WHERE business_id = ?1 AND conversation_id = ?2 ORDER BY created_at, id",
        &params![biz, conversation],
    )?;
    let comment_count = comments.len();
    let mut replies = 0;
    for (id, provider_comment_id, post_id, text, created_at, reply_text, replied_at) in comments {
        let summary = json!({"type": "comment", "commentId": id, "providerCommentId": provider_comment_id, "postId": post_id, "text": text});
        timeline::append_message(biz, contact, Channel::Photoapp.name(), "inbound", &created_at, &summary)?;
        // Its public reply, once sent.
        if let (Some(reply), Some(at)) = (reply_text, replied_at) {
            let summary = json!({"type": "comment_reply", "commentId": id, "providerCommentId": provider_comment_id, "postId": post_id, "text": reply});
            timeline::append_message(biz, contact, Channel::Photoapp.name(), "outbound", &at, &summary)?;
            replies += 1;
        }
    }
    Ok((message_count + comment_count + replies) as u64)
}
