//! The inbox (ours, operations 61-65): conversations across chatapp and
//! photoapp (direct messages and comments), newest activity first, with
//! unread counts, search and filters (`list.rs`); one conversation and its
//! thread of messages and comments with their delivery states
//! (`thread.rs`); marking it read (`read.rs`); and the conversation's
//! update (`handoff.rs`): the per-conversation handoff, which stops the
//! agent's auto-replies in it, its person (assignee) and its state (open or
//! resolved). The team inbox of issue 50 (ours, operations 76-81): the
//! team's people (`team.rs`), internal notes (`notes.rs`) and saved replies
//! (`saved_replies.rs`).
//!
//! What a list needs is kept on the conversation row by the triggers of
//! migration 0030 (newest activity, newest message and comment, unread
//! count) and 0038 (a new inbound entry opens a resolved conversation
//! again), so every writer of a message or a comment keeps it true.
//! Replying as a person is `sendMessage` (operation 8), which records who
//! sent it (`messages.sender_kind`).
//!
//! Unread is per person for a console session (`conversation_reads`: each
//! user's marker; without one, what was read before markers were per
//! person), and the business's one marker for an API key.

pub mod handoff;
mod list;
pub mod notes;
mod read;
pub mod saved_replies;
pub mod team;
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

/// The reader: a console user (their unread count) or an API key (the
/// business's). A session's user id comes from the host, checked here to be
/// a uuid before it is written into a statement.
#[derive(Clone, Copy)]
pub(crate) enum Reader<'a> {
    Person(&'a str),
    Key,
}

impl<'a> Reader<'a> {
    pub(crate) fn of(r: &'a Request) -> Reader<'a> {
        match r.caller.as_deref() {
            Some(u) if switchboard_guest::is_uuid(u) => Reader::Person(u),
            _ => Reader::Key,
        }
    }
}

/// What a person has not read of `c` begins after this (their marker, else
/// the conversation's baseline): the condition on an entry `x`.
/// A row value over the thread index's (created at, id), so it is one seek;
/// without a marker, strictly after the baseline (`~` sorts after every id).
const AFTER_MARKER: &str = "(x.created_at, x.id) > (IFNULL(r.seen_at, IFNULL(c.read_baseline_at, '')), IFNULL(r.seen_id, '~'))";

/// True when `c` has anything the reader has not read (the list's
/// `unread` filter): for a person an index seek past their marker per
/// conversation, not a count, so walking the list for unread ones stays
/// cheap.
fn has_unread(reader: Reader) -> String {
    match reader {
        Reader::Key => "(c.unread_count > 0)".into(),
        Reader::Person(_) => format!(
            "(EXISTS (SELECT 1 FROM messages x WHERE x.business_id = c.business_id AND x.conversation_id = c.id AND x.direction = 'inbound' AND {AFTER_MARKER}) \
              OR EXISTS (SELECT 1 FROM photoapp_comments x WHERE x.business_id = c.business_id AND x.conversation_id = c.id AND {AFTER_MARKER}))"
        ),
    }
}

/// The reader's unread count of `c` (after the join of [`select`]'s `r`).
fn unread(reader: Reader) -> String {
    match reader {
        Reader::Key => "c.unread_count".into(),
        Reader::Person(_) => {
            let after = AFTER_MARKER;
            format!(
                "((SELECT count(*) FROM messages x WHERE x.business_id = c.business_id AND x.conversation_id = c.id AND x.direction = 'inbound' AND {after}) + \
                  (SELECT count(*) FROM photoapp_comments x WHERE x.business_id = c.business_id AND x.conversation_id = c.id AND {after}))"
            )
        }
    }
}

/// Who sent an outbound message `m` (its `sender_kind`, `sender_id`), as
/// columns: kind, id, name (the agent's or campaign's name, the person's
/// address).
pub(crate) fn sender_columns(m: &str) -> String {
    format!(
        "{m}.sender_kind, {m}.sender_id, CASE {m}.sender_kind \
           WHEN 'agent' THEN (SELECT sa.name FROM agents sa WHERE sa.business_id = {m}.business_id AND sa.id = {m}.sender_id) \
           WHEN 'person' THEN (SELECT st.email FROM team_members st WHERE st.business_id = {m}.business_id AND st.user_id = {m}.sender_id) \
           WHEN 'campaign' THEN (SELECT sc.name FROM campaigns sc WHERE sc.business_id = {m}.business_id AND sc.id = {m}.sender_id) END"
    )
}

/// The `sentBy` of an outbound message from [`sender_columns`] at `at`
/// (null for inbound ones and for messages sent before it was kept).
pub(crate) fn sent_by(r: &Row, at: usize) -> J {
    match r.opt_text(at) {
        None => J::Null,
        Some(kind) => json!({"kind": kind, "id": r.opt_text(at + 1), "name": r.opt_text(at + 2)}),
    }
}

/// The columns [`conversation_json`] reads, then `FROM` and the joins; the
/// caller adds `WHERE c.business_id = ?1 …`.
fn select(reader: Reader) -> String {
    let mine = match reader {
        Reader::Person(u) => format!("'{u}'"),
        Reader::Key => "NULL".into(),
    };
    let unread = unread(reader);
    let sender = sender_columns("lm");
    format!(
        "SELECT c.id, c.channel, c.phone_number_id, c.provider_account_id, \
                IFNULL(CASE c.channel WHEN 'chatapp' THEN k.mobile ELSE c.participant_id END, ''), \
                c.contact_id, k.name, c.participant_name, a.id, a.name, {STATUS}, c.handoff_active, c.unread_count, \
                IFNULL(c.last_activity_at, c.created_at), c.created_at, \
                lm.id, lm.direction, lm.type, IFNULL(lm.text, ''), lm.status, lm.created_at, \
                lc.id, lc.text, lc.status, lc.created_at, lm.text IS NULL, \
                c.assigned_user_id, tm.email, c.state, c.resolved_at, {unread} AS unread, {sender} \
         FROM conversations c \
         LEFT JOIN contacts k ON k.business_id = c.business_id AND k.id = c.contact_id \
         LEFT JOIN channel_assignments ca ON ca.business_id = c.business_id AND ca.channel = c.channel \
              AND ca.provider_id = IFNULL(c.phone_number_id, c.provider_account_id) \
         LEFT JOIN agents a ON a.business_id = ca.business_id AND a.id = ca.ai_agent_id \
         LEFT JOIN messages lm ON lm.business_id = c.business_id AND lm.id = c.last_message_id \
         LEFT JOIN photoapp_comments lc ON lc.business_id = c.business_id AND lc.id = c.last_comment_id \
         LEFT JOIN team_members tm ON tm.business_id = c.business_id AND tm.user_id = c.assigned_user_id \
         LEFT JOIN conversation_reads r ON r.business_id = c.business_id AND r.conversation_id = c.id AND r.user_id = {mine}"
    )
}

/// A row of [`select`] as a `Conversation` of the document.
fn conversation_json(r: &Row) -> J {
    let contact = r.opt_text(5).map(|id| json!({"id": id, "name": r.opt_text(6).unwrap_or_default()}));
    let agent = r.opt_text(8).map(|id| json!({"id": id, "name": r.opt_text(9).unwrap_or_default()}));
    // The newest of the last message and the last comment.
    let message = r.opt_text(15).map(|id| {
        let text = if r.boolean(25) { J::Null } else { J::String(r.text(18)) };
        (r.text(20), json!({"id": id, "kind": "message", "direction": r.text(16), "type": r.text(17), "text": text, "status": r.text(19), "createdAt": r.text(20), "sentBy": sent_by(r, 31)}))
    });
    let comment = r
        .opt_text(21)
        .map(|id| (r.text(24), json!({"id": id, "kind": "comment", "direction": "inbound", "type": "text", "text": r.text(22), "status": r.text(23), "createdAt": r.text(24), "sentBy": null})));
    let assignee = r.opt_text(26).map(|id| json!({"userId": id, "email": r.opt_text(27)}));
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
        "unreadCount": r.int(30),
        "assignee": assignee,
        "state": r.text(28),
        "resolvedAt": r.opt_text(29),
        "lastActivityAt": r.text(13),
        "lastEntry": last,
        "createdAt": r.text(14),
    })
}

/// The conversation of this business named by the path, as JSON
/// (`404 conversation_not_found` otherwise).
fn load(biz: &str, id: &str, reader: Reader) -> Result<J, Failure> {
    let row = db::query_one(&format!("{} WHERE c.business_id = ?1 AND c.id = ?2", select(reader)), &[biz.into(), id.into()])?.ok_or_else(not_found)?;
    Ok(conversation_json(&row))
}

/// The path's `conversationId`, checked to name one of this business's.
pub(crate) fn path_id(r: &Request) -> Result<String, Failure> {
    let id = switchboard_guest::req::path_uuid(r, "conversationId", "conversation_not_found", "conversation")?.to_ascii_lowercase();
    if db::query_one("SELECT 1 FROM conversations WHERE business_id = ?1 AND id = ?2", &[r.business_id.as_str().into(), id.as_str().into()])?.is_none() {
        return Err(not_found());
    }
    Ok(id)
}

fn not_found() -> Failure {
    fail::not_found("conversation_not_found", "conversation not found")
}

/// The answer of the mutations and of getConversation, as `reader` sees it.
fn result(r: &Request, id: &str) -> HResult<Success> {
    switchboard_guest::ok(&json!({"conversation": load(&r.business_id, id, Reader::of(r))?}))
}
