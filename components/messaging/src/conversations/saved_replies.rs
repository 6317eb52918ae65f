//! Saved replies (ours, operations 78-81): a business's ready answers,
//! which the inbox's reply box puts in (the person may change them before
//! sending). Listed by title; at most [`MAX_SAVED_REPLIES`] a business.

use serde::Deserialize;
use serde_json::{json, Value as J};
use switchboard_guest::db;
use switchboard_guest::{created, fail, new_id, now, ok, params, req, Failure, HResult, Request, Success};

pub const MAX_SAVED_REPLIES: i64 = 500;
const MAX_TITLE_CHARS: usize = 100;
const MAX_TEXT_CHARS: usize = 4096;

/// A saved reply as read: id, title, text, created at, updated at.
type Reply = (String, String, String, String, String);

fn reply_json((id, title, text, created_at, updated_at): &Reply) -> J {
    json!({"id": id, "title": title, "text": text, "createdAt": created_at, "updatedAt": updated_at})
}

pub fn list(r: &Request) -> HResult<Success> {
    let rows: Vec<Reply> = db::query_as("SELECT id, title, text, created_at, updated_at FROM saved_replies WHERE business_id = ?1 ORDER BY lower(title), id", &params![&r.business_id])?;
    ok(&json!({"savedReplies": rows.iter().map(reply_json).collect::<Vec<_>>()}))
}

#[derive(Deserialize)]
struct Fields {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// A title or text, trimmed, not blank and not too long.
fn checked(value: Option<String>, field: &str, what: &str, max: usize) -> Result<Option<String>, Failure> {
    let Some(v) = value else { return Ok(None) };
    let v = v.trim().to_string();
    if v.is_empty() {
        return Err(fail::validation(&format!("{field}_required"), format!("{what} is required")));
    }
    if v.chars().count() > max {
        return Err(fail::validation(&format!("{field}_too_long"), format!("{what} is at most {max} characters")));
    }
    Ok(Some(v))
}

pub fn create(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let b: Fields = req::body(r)?;
    let title = checked(b.title, "title", "The title", MAX_TITLE_CHARS)?.ok_or_else(|| fail::validation("title_required", "The title is required"))?;
    let text = checked(b.text, "text", "The text", MAX_TEXT_CHARS)?.ok_or_else(|| fail::validation("text_required", "The text is required"))?;
    let count = db::query_one_as::<i64>("SELECT count(*) FROM saved_replies WHERE business_id = ?1", &params![biz])?.unwrap_or(0);
    if count >= MAX_SAVED_REPLIES {
        return Err(fail::conflict("too_many_saved_replies", format!("A business keeps at most {MAX_SAVED_REPLIES} saved replies; delete one first")));
    }
    let (id, at) = (new_id(), now());
    db::execute(
        "INSERT INTO saved_replies (business_id, id, title, text, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        &[biz.into(), id.as_str().into(), title.as_str().into(), text.as_str().into(), at.as_str().into()],
    )?;
    created(&json!({"savedReply": load(biz, &id)?}))
}

/// The path's `savedReplyId`, checked to name one of this business's.
fn path_id(r: &Request) -> Result<String, Failure> {
    let id = req::path_uuid(r, "savedReplyId", "saved_reply_not_found", "saved reply")?.to_ascii_lowercase();
    load(&r.business_id, &id)?;
    Ok(id)
}

fn load(biz: &str, id: &str) -> Result<J, Failure> {
    db::query_one_as::<Reply>("SELECT id, title, text, created_at, updated_at FROM saved_replies WHERE business_id = ?1 AND id = ?2", &params![biz, id])?
        .map(|r| reply_json(&r))
        .ok_or_else(|| fail::not_found("saved_reply_not_found", "saved reply not found"))
}

pub fn update(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = path_id(r)?;
    let b: Fields = req::body(r)?;
    let title = checked(b.title, "title", "The title", MAX_TITLE_CHARS)?;
    let text = checked(b.text, "text", "The text", MAX_TEXT_CHARS)?;
    db::execute(
        "UPDATE saved_replies SET title = IFNULL(?3, title), text = IFNULL(?4, text), updated_at = ?5 WHERE business_id = ?1 AND id = ?2",
        &[biz.into(), id.as_str().into(), title.into(), text.into(), now().into()],
    )?;
    ok(&json!({"savedReply": load(biz, &id)?}))
}

pub fn delete(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = path_id(r)?;
    db::execute("DELETE FROM saved_replies WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into()])?;
    ok(&json!({"id": id, "deleted": true}))
}
