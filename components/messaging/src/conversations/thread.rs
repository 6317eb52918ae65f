//! getConversation (operation 62) and getConversationThread (63): one
//! conversation, and its messages, comments and internal notes newest
//! first with their delivery states and who sent each outbound message,
//! keyset pages on (created at, id) over all three. Reading marks nothing
//! read (that is operation 64, a write).

use serde_json::{json, Value as J};
use switchboard_guest::cursor::Cursor;
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{ok, req, HResult, Request, Success, Value};

use super::{path_id, result, sender_columns, sent_by};

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
    let mut rows = db::query(&sql, &params)?;
    let next = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|r| Cursor::new(r.text(7), r.text(0)).encode())
    } else {
        None
    };
    let entries: Vec<J> = rows
        .iter()
        .map(|r| {
            let comment = r.text(1) == "comment";
            let failed = r.text(6) == "failed";
            let failure = (r.opt_text(12).is_some() || r.opt_text(13).is_some() || failed).then(|| json!({"code": r.opt_text(12), "message": r.opt_text(13)}));
            let reply = r.opt_text(16).filter(|_| comment && r.text(6) == "replied").map(|text| json!({"text": text, "repliedAt": r.opt_text(17)}));
            json!({
                "id": r.text(0),
                "kind": r.text(1),
                "direction": r.text(2),
                "type": r.text(3),
                "text": r.opt_text(4),
                "mediaId": r.opt_text(5),
                "status": r.text(6),
                "createdAt": r.text(7),
                "sentAt": r.opt_text(8),
                "deliveredAt": r.opt_text(9),
                "readAt": r.opt_text(10),
                "failedAt": r.opt_text(11),
                "failure": failure,
                "reaction": r.opt_text(14),
                "postId": r.opt_text(15),
                "reply": reply,
                "sentBy": sent_by(r, 18),
            })
        })
        .collect();
    ok(&json!({"entries": entries, "nextCursor": next}))
}
