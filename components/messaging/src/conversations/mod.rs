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
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::{fail, params, Failure, HResult, Request, Success};
use switchboard_sql::{Columns, FromRow, Mismatch, Row};

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

/// Who sent an outbound message, as [`sender_columns`] select it (all
/// null for inbound ones and for messages sent before it was kept).
pub(crate) struct SentBy {
    kind: Option<String>,
    id: Option<String>,
    name: Option<String>,
}

impl SentBy {
    /// The three columns of [`sender_columns`], next in `c`.
    pub(crate) fn read(c: &mut Columns) -> Result<Self, Mismatch> {
        Ok(SentBy { kind: c.read()?, id: c.read()?, name: c.read()? })
    }

    /// The message's `sentBy` (null without a kind).
    pub(crate) fn json(&self) -> J {
        match &self.kind {
            None => J::Null,
            Some(kind) => json!({"kind": kind, "id": self.id, "name": self.name}),
        }
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

/// A row of [`select`]: the conversation, its last message (`lm_*`, all
/// null without one) and its last comment (`lc_*`).
struct Conversation {
    id: String,
    channel: Channel,
    phone_number_id: Option<String>,
    provider_account_id: Option<String>,
    recipient: String,
    contact_id: Option<String>,
    contact_name: Option<String>,
    participant_name: Option<String>,
    agent_id: Option<String>,
    agent_name: Option<String>,
    status: String,
    handoff_active: bool,
    last_activity_at: String,
    created_at: String,
    lm_id: Option<String>,
    lm_direction: Option<String>,
    lm_type: Option<String>,
    lm_text: String,
    lm_status: Option<String>,
    lm_created_at: Option<String>,
    lc_id: Option<String>,
    lc_text: Option<String>,
    lc_status: Option<String>,
    lc_created_at: Option<String>,
    lm_text_null: bool,
    assigned_user_id: Option<String>,
    assignee_email: Option<String>,
    state: String,
    resolved_at: Option<String>,
    unread: i64,
    lm_sent_by: SentBy,
}

impl FromRow for Conversation {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let mut c = Columns::new(row);
        // Fields are read in the order written, the statement's.
        Ok(Conversation {
            id: c.read()?,
            channel: c.read()?,
            phone_number_id: c.read()?,
            provider_account_id: c.read()?,
            recipient: c.read()?,
            contact_id: c.read()?,
            contact_name: c.read()?,
            participant_name: c.read()?,
            agent_id: c.read()?,
            agent_name: c.read()?,
            status: c.read()?,
            handoff_active: c.read()?,
            // c.unread_count is skipped: `unread` is the reader's count.
            last_activity_at: {
                c.skip();
                c.read()?
            },
            created_at: c.read()?,
            lm_id: c.read()?,
            lm_direction: c.read()?,
            lm_type: c.read()?,
            lm_text: c.read()?,
            lm_status: c.read()?,
            lm_created_at: c.read()?,
            lc_id: c.read()?,
            lc_text: c.read()?,
            lc_status: c.read()?,
            lc_created_at: c.read()?,
            lm_text_null: c.read()?,
            assigned_user_id: c.read()?,
            assignee_email: c.read()?,
            state: c.read()?,
            resolved_at: c.read()?,
            unread: c.read()?,
            lm_sent_by: SentBy::read(&mut c)?,
        })
    }
}

/// A row of [`select`] as a `Conversation` of the document.
fn conversation_json(r: &Conversation) -> J {
    let contact = r.contact_id.as_ref().map(|id| json!({"id": id, "name": r.contact_name.clone().unwrap_or_default()}));
    let agent = r.agent_id.as_ref().map(|id| json!({"id": id, "name": r.agent_name.clone().unwrap_or_default()}));
    // The newest of the last message and the last comment.
    let message = r.lm_id.as_ref().map(|id| {
        let text = if r.lm_text_null { J::Null } else { J::String(r.lm_text.clone()) };
        let at = r.lm_created_at.clone().unwrap_or_default();
        (at, json!({"id": id, "kind": "message", "direction": r.lm_direction, "type": r.lm_type, "text": text, "status": r.lm_status, "createdAt": r.lm_created_at, "sentBy": r.lm_sent_by.json()}))
    });
    let comment = r.lc_id.as_ref().map(|id| {
        let at = r.lc_created_at.clone().unwrap_or_default();
        (at, json!({"id": id, "kind": "comment", "direction": "inbound", "type": "text", "text": r.lc_text, "status": r.lc_status, "createdAt": r.lc_created_at, "sentBy": null}))
    });
    let assignee = r.assigned_user_id.as_ref().map(|id| json!({"userId": id, "email": r.assignee_email}));
    let last = match (message, comment) {
        (Some(m), Some(c)) => Some(if c.0 > m.0 { c.1 } else { m.1 }),
        (m, c) => m.or(c).map(|(_, v)| v),
    };
    json!({
        "id": r.id,
        "channel": r.channel.name(),
        "phoneNumberId": r.phone_number_id,
        "providerAccountId": r.provider_account_id,
        "recipient": r.recipient,
        "contact": contact,
        "participantName": r.participant_name,
        "agent": agent,
        "status": r.status,
        "humanHandoffActive": r.handoff_active,
        "unreadCount": r.unread,
        "assignee": assignee,
        "state": r.state,
        "resolvedAt": r.resolved_at,
        "lastActivityAt": r.last_activity_at,
        "lastEntry": last,
        "createdAt": r.created_at,
    })
}

/// The conversation of this business named by the path, as JSON
/// (`404 conversation_not_found` otherwise).
fn load(biz: &str, id: &str, reader: Reader) -> Result<J, Failure> {
    let row = db::query_one_as::<Conversation>(&format!("{} WHERE c.business_id = ?1 AND c.id = ?2", select(reader)), &params![biz, id])?.ok_or_else(not_found)?;
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
