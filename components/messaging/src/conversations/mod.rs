//! The inbox (ours, operations 61-65): conversations across chatapp and
//! photoapp (direct messages and comments), newest activity first, with
//! unread counts, search and filters (`list.rs`); one conversation and its
//! thread of messages and comments with their delivery states
//! (`thread.rs`); marking it read (`read.rs`); and the per-conversation
//! handoff, which stops the agent's auto-replies in it (`handoff.rs`).
//!
//! What a list needs is kept on the conversation row by the triggers of
//! migration 0030 (newest activity, newest message and comment, unread
//! count), so every writer of a message or a comment keeps it true.
//! Replying as a person is `sendMessage` (operation 8).

pub mod handoff;
mod list;
mod read;
mod thread;

use serde_json::{json, Value as J};
use switchboard_guest::db::{self, Row, RowExt};
use switchboard_guest::{fail, Failure, HResult, Request, Success};

pub use list::list;
pub use read::mark_read;
pub use thread::{get, thread};

/// Who answers a conversation now (the list's `status`): a person when it
/// or its number's assignment is handed off, an external automation when
/// an active or paused subscription of the sender owns the replies, the
/// agent when the assignment names an active agent of the channel with
/// auto-reply on (the rule autoreply.rs `assigned_agent` applies to each
/// message), else nobody. Over `c` (conversations), `ca` (its
/// assignment) and `a` (the assigned agent).
const STATUS: &str = "CASE \
      WHEN c.handoff_active = 1 OR IFNULL(ca.human_handoff_active, 0) = 1 THEN 'human' \
      WHEN EXISTS (SELECT 1 FROM webhook_subscriptions ws WHERE ws.business_id = c.business_id AND ws.channel = c.channel \
                   AND IFNULL(ws.phone_number_id, ws.provider_account_id) = IFNULL(c.phone_number_id, c.provider_account_id) \
                   AND ws.status IN ('active', 'paused') AND ws.external_automation = 1) THEN 'automation' \
      WHEN ca.auto_reply_enabled = 1 AND a.status = 'active' AND a.channel = c.channel THEN 'agent' \
      ELSE 'unassigned' END";

/// The columns [`conversation_json`] reads, then `FROM` and the joins; the
/// caller adds `WHERE c.business_id = ?1 …`.
fn select() -> String {
    format!(
        "SELECT c.id, c.channel, c.phone_number_id, c.provider_account_id, \
                IFNULL(CASE c.channel WHEN 'chatapp' THEN k.mobile ELSE c.participant_id END, ''), \
                c.contact_id, k.name, c.participant_name, a.id, a.name, {STATUS}, c.handoff_active, c.unread_count, \
                IFNULL(c.last_activity_at, c.created_at), c.created_at, \
                lm.id, lm.direction, lm.type, IFNULL(lm.text, ''), lm.status, lm.created_at, \
                lc.id, lc.text, lc.status, lc.created_at, lm.text IS NULL \
         FROM conversations c \
         LEFT JOIN contacts k ON k.business_id = c.business_id AND k.id = c.contact_id \
         LEFT JOIN channel_assignments ca ON ca.business_id = c.business_id AND ca.channel = c.channel \
              AND ca.provider_id = IFNULL(c.phone_number_id, c.provider_account_id) \
         LEFT JOIN agents a ON a.business_id = ca.business_id AND a.id = ca.ai_agent_id \
         LEFT JOIN messages lm ON lm.business_id = c.business_id AND lm.id = c.last_message_id \
         LEFT JOIN photoapp_comments lc ON lc.business_id = c.business_id AND lc.id = c.last_comment_id"
    )
}

/// A row of [`select`] as a `Conversation` of the document.
fn conversation_json(r: &Row) -> J {
    let contact = r.opt_text(5).map(|id| json!({"id": id, "name": r.opt_text(6).unwrap_or_default()}));
    let agent = r.opt_text(8).map(|id| json!({"id": id, "name": r.opt_text(9).unwrap_or_default()}));
    // The newest of the last message and the last comment.
    let message = r.opt_text(15).map(|id| {
        let text = if r.boolean(25) { J::Null } else { J::String(r.text(18)) };
        (r.text(20), json!({"id": id, "kind": "message", "direction": r.text(16), "type": r.text(17), "text": text, "status": r.text(19), "createdAt": r.text(20)}))
    });
    let comment =
        r.opt_text(21).map(|id| (r.text(24), json!({"id": id, "kind": "comment", "direction": "inbound", "type": "text", "text": r.text(22), "status": r.text(23), "createdAt": r.text(24)})));
    let last = match (message, comment) {
        (Some(m), Some(c)) => Some(if c.0 > m.0 { c.1 } else { m.1 }),
        (m, c) => m.or(c).map(|(_, v)| v),
    };
    json!({
        "id": r.text(0),
        "channel": r.text(1),
        "phoneNumberId": r.opt_text(2),
        "providerAccountId": r.opt_text(3),
        "recipient": r.text(4),
        "contact": contact,
        "participantName": r.opt_text(7),
        "agent": agent,
        "status": r.text(10),
        "humanHandoffActive": r.boolean(11),
        "unreadCount": r.int(12),
        "lastActivityAt": r.text(13),
        "lastEntry": last,
        "createdAt": r.text(14),
    })
}

/// The conversation of this business named by the path, as JSON
/// (`404 conversation_not_found` otherwise).
fn load(biz: &str, id: &str) -> Result<J, Failure> {
    let row = db::query_one(&format!("{} WHERE c.business_id = ?1 AND c.id = ?2", select()), &[biz.into(), id.into()])?.ok_or_else(not_found)?;
    Ok(conversation_json(&row))
}

/// The path's `conversationId`, checked to name one of this business's.
fn path_id(r: &Request) -> Result<String, Failure> {
    let id = switchboard_guest::req::path_uuid(r, "conversationId", "conversation_not_found", "conversation")?.to_ascii_lowercase();
    if db::query_one("SELECT 1 FROM conversations WHERE business_id = ?1 AND id = ?2", &[r.business_id.as_str().into(), id.as_str().into()])?.is_none() {
        return Err(not_found());
    }
    Ok(id)
}

fn not_found() -> Failure {
    fail::not_found("conversation_not_found", "conversation not found")
}

/// The answer of the mutations and of getConversation.
fn result(biz: &str, id: &str) -> HResult<Success> {
    switchboard_guest::ok(&json!({"conversation": load(biz, id)?}))
}
