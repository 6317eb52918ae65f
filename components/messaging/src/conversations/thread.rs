//! getConversation (operation 62) and getConversationThread (63): one
//! conversation, and its messages, comments and internal notes newest
//! first with their delivery states and who sent each outbound message,
//! keyset pages on (created at, id) over all three. Reading marks nothing
//! read (that is operation 64, a write).

use serde_json::{json, Value as J};
use switchboard_guest::cursor::Cursor;
use switchboard_guest::db;
use switchboard_guest::{ok, req, HResult, Request, Success, Value};
use switchboard_sql::{Columns, FromRow, Mismatch, Row};

use super::{path_id, result, sender_columns, SentBy};

pub fn get(r: &Request) -> HResult<Success> {
    // The read itself answers conversation_not_found: no existence check first.
    let id = req::path_uuid(r, "conversationId", "conversation_not_found", "conversation")?.to_ascii_lowercase();
    result(r, &id)
}

pub fn thread(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = path_id(r)?;
    let limit = req::limit(r, 50, 200)?;
    let cursor = req::query_nonempty(r, "cursor").map(Cursor::parse).transpose()?;
    let mut params: Vec<Value> = vec![biz.into(), id.as_str().into()];
    // The same page bound on both halves, so each reads only its page.
    let before = match &cursor {
        Some(c) => {
            params.push(c.key.as_str().into());
            params.push(c.id.as_str().into());
            " AND (created_at < ?3 OR (created_at = ?3 AND id < ?4))"
        }
        None => "",
    };
    let sender = sender_columns("messages");
    let sql = format!(
        "SELECT id, 'message', direction, type, text, media_id, status, created_at, sent_at, delivered_at, read_at, failed_at, \
                failure_code, failure_message, reaction, NULL, NULL, NULL, {sender} \
         FROM messages WHERE business_id = ?1 AND conversation_id = ?2{before} \
         UNION ALL \
         SELECT id, 'comment', 'inbound', 'text', text, NULL, status, created_at, NULL, NULL, NULL, \
                CASE status WHEN 'failed' THEN replied_at END, failure_code, failure_message, NULL, post_id, reply_text, replied_at, NULL, NULL, NULL \
         FROM photoapp_comments WHERE business_id = ?1 AND conversation_id = ?2{before} \
         UNION ALL \
         SELECT id, 'note', 'internal', 'text', text, NULL, 'internal', created_at, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
                CASE WHEN author_user_id IS NULL THEN 'api' ELSE 'person' END, author_user_id, \
                (SELECT st.email FROM team_members st WHERE st.business_id = conversation_notes.business_id AND st.user_id = conversation_notes.author_user_id) \
         FROM conversation_notes WHERE business_id = ?1 AND conversation_id = ?2{before} \
         ORDER BY 8 DESC, 1 DESC LIMIT {}",
        limit + 1
    );
    let mut rows: Vec<Entry> = db::query_as(&sql, &params)?;
    let next = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|r| Cursor::new(&r.created_at, &r.id).encode())
    } else {
        None
    };
    let entries: Vec<J> = rows.iter().map(entry_json).collect();
    ok(&json!({"entries": entries, "nextCursor": next}))
}

/// A row of the thread's statement: a message, a comment or a note.
struct Entry {
    id: String,
    kind: String,
    direction: String,
    message_type: String,
    text: Option<String>,
    media_id: Option<String>,
    status: String,
    created_at: String,
    sent_at: Option<String>,
    delivered_at: Option<String>,
    read_at: Option<String>,
    failed_at: Option<String>,
    failure_code: Option<String>,
    failure_message: Option<String>,
    reaction: Option<String>,
    post_id: Option<String>,
    reply_text: Option<String>,
    replied_at: Option<String>,
    sent_by: SentBy,
}

impl FromRow for Entry {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let mut c = Columns::new(row);
        // Fields are read in the order written, the statement's.
        Ok(Entry {
            id: c.read()?,
            kind: c.read()?,
            direction: c.read()?,
            message_type: c.read()?,
            text: c.read()?,
            media_id: c.read()?,
            status: c.read()?,
            created_at: c.read()?,
            sent_at: c.read()?,
            delivered_at: c.read()?,
            read_at: c.read()?,
            failed_at: c.read()?,
            failure_code: c.read()?,
            failure_message: c.read()?,
            reaction: c.read()?,
            post_id: c.read()?,
            reply_text: c.read()?,
            replied_at: c.read()?,
            sent_by: SentBy::read(&mut c)?,
        })
    }
}

fn entry_json(r: &Entry) -> J {
    let comment = r.kind == "comment";
    let failed = r.status == "failed";
    let failure = (r.failure_code.is_some() || r.failure_message.is_some() || failed).then(|| json!({"code": r.failure_code, "message": r.failure_message}));
    let reply = r.reply_text.as_ref().filter(|_| comment && r.status == "replied").map(|text| json!({"text": text, "repliedAt": r.replied_at}));
    json!({
        "id": r.id,
        "kind": r.kind,
        "direction": r.direction,
        "type": r.message_type,
        "text": r.text,
        "mediaId": r.media_id,
        "status": r.status,
        "createdAt": r.created_at,
        "sentAt": r.sent_at,
        "deliveredAt": r.delivered_at,
        "readAt": r.read_at,
        "failedAt": r.failed_at,
        "failure": failure,
        "reaction": r.reaction,
        "postId": r.post_id,
        "reply": reply,
        "sentBy": r.sent_by.json(),
    })
}
