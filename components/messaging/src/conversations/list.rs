//! listConversations (operation 61): newest activity first, keyset pages
//! on (last activity, id) like every time-ordered list. Filters: `channel`,
//! `agentId` (the agent assigned to the conversation's number or
//! account), `status` (who answers now), `state` (open or resolved),
//! `assignee` (`me`: the session's user, nobody for an API key; `none`;
//! or a user id), `unread`
//! (the reader's own for a session), and `q`, a
//! case-insensitive (ASCII) substring of the contact's name or mobile, the
//! photoapp handle, or any message's or comment's text.
//!
//! A conversation whose activity changes while a client pages moves to the
//! top: a client that walks the pages sees it again only by reading the
//! first page again (the console does, as it polls).
//!
//! Measured on a debug build with 100,000 messages in 5,000 conversations:
//! a page (any filter but `q`) 2-7 ms, the next page 3 ms; a search 55-65 ms,
//! because matching message text reads every message of the business.

use serde_json::json;
use switchboard_guest::cursor::Cursor;
use switchboard_guest::db;
use switchboard_guest::{fail, ok, req, HResult, Request, Success, Value};

use super::{conversation_json, has_unread, select, Conversation, Reader, STATUS};

pub fn list(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let reader = Reader::of(r);
    let limit = req::limit(r, 50, 200)?;
    let cursor = req::query_nonempty(r, "cursor").map(Cursor::parse).transpose()?;
    let mut sql = format!("{} WHERE c.business_id = ?1", select(reader));
    let mut params: Vec<Value> = vec![biz.into()];

    let status = format!("({STATUS})");
    req::narrow(r, &mut sql, &mut params, &[("channel", "c.channel", false), ("agentId", "ca.ai_agent_id", true), ("status", &status, false), ("state", "c.state", false)])?;
    match req::query_nonempty(r, "assignee") {
        None => {}
        Some("none") => sql += " AND c.assigned_user_id IS NULL",
        Some("me") => match reader {
            Reader::Person(u) => sql += &format!(" AND c.assigned_user_id = {}", bind(&mut params, u.into())),
            // An API key is nobody: nothing is assigned to it.
            Reader::Key => sql += " AND 0",
        },
        Some(id) if switchboard_guest::is_uuid(id) => sql += &format!(" AND c.assigned_user_id = {}", bind(&mut params, id.to_ascii_lowercase().into())),
        Some(_) => return Err(fail::validation("invalid_query_parameter", "query parameter `assignee` must be me, none or a user id")),
    }
    let unread = has_unread(reader);
    match req::query_nonempty(r, "unread") {
        None => {}
        Some("true") => sql += &format!(" AND {unread}"),
        Some("false") => sql += &format!(" AND NOT {unread}"),
        Some(_) => return Err(fail::validation("invalid_query_parameter", "query parameter `unread` must be true or false")),
    }
    if let Some(q) = req::query_nonempty(r, "q") {
        let p = bind(&mut params, db::contains_pattern(q.trim()).into());
        sql += &format!(
            " AND (k.name LIKE {p} ESCAPE '\\' OR k.mobile LIKE {p} ESCAPE '\\' OR c.participant_name LIKE {p} ESCAPE '\\' \
               OR EXISTS (SELECT 1 FROM messages m WHERE m.business_id = c.business_id AND m.conversation_id = c.id AND m.text LIKE {p} ESCAPE '\\') \
               OR EXISTS (SELECT 1 FROM photoapp_comments pc WHERE pc.business_id = c.business_id AND pc.conversation_id = c.id AND pc.text LIKE {p} ESCAPE '\\'))"
        );
    }
    if let Some(c) = &cursor {
        let k = bind(&mut params, c.key.as_str().into());
        let i = bind(&mut params, c.id.as_str().into());
        sql += &format!(" AND (c.last_activity_at < {k} OR (c.last_activity_at = {k} AND c.id < {i}))");
    }
    sql += &format!(" ORDER BY c.last_activity_at DESC, c.id DESC LIMIT {}", limit + 1);

    let mut rows: Vec<Conversation> = db::query_as(&sql, &params)?;
    let next = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|r| Cursor::new(&r.last_activity_at, &r.id).encode())
    } else {
        None
    };
    let conversations: Vec<serde_json::Value> = rows.iter().map(conversation_json).collect();
    ok(&json!({"conversations": conversations, "nextCursor": next}))
}

/// Adds a parameter; its placeholder.
fn bind(params: &mut Vec<Value>, v: Value) -> String {
    params.push(v);
    format!("?{}", params.len())
}
