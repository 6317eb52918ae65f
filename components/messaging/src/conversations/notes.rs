//! createConversationNote (ours, operation 77): an internal note in a
//! conversation's thread. It is the team's: never sent to the contact, never
//! a timeline entry or a webhook event, and it neither reopens nor marks
//! unread. Its author is the session's user (null with an API key); the
//! thread shows it as an entry of kind `note`.

use serde::Deserialize;
use serde_json::json;
use switchboard_guest::{created, fail, new_id, now, params, req, HResult, Request, Success};

use super::path_id;

/// The longest note, in characters (as the schema says).
pub const MAX_NOTE_CHARS: usize = 4000;

#[derive(Deserialize)]
struct NoteBody {
    text: String,
}

pub fn create(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = path_id(r)?;
    let b: NoteBody = req::body(r)?;
    let text = b.text.trim();
    if text.is_empty() {
        return Err(fail::validation("text_required", "Write the note first"));
    }
    if text.chars().count() > MAX_NOTE_CHARS {
        return Err(fail::validation("note_too_long", format!("A note is at most {MAX_NOTE_CHARS} characters")));
    }
    let (note, at) = (new_id(), now());
    let author = super::Reader::of(r);
    let author = match author {
        super::Reader::Person(u) => Some(u),
        super::Reader::Key => None,
    };
    switchboard_guest::db::execute(
        "INSERT INTO conversation_notes (business_id, id, conversation_id, author_user_id, text, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        &[biz.into(), note.as_str().into(), id.as_str().into(), author.into(), text.into(), at.as_str().into()],
    )?;
    let email = match author {
        Some(u) => switchboard_guest::db::query_one_as::<String>("SELECT email FROM team_members WHERE business_id = ?1 AND user_id = ?2", &params![biz, u])?,
        None => None,
    };
    created(&json!({"entry": {
        "id": note, "kind": "note", "direction": "internal", "type": "text", "text": text, "mediaId": null, "status": "internal",
        "createdAt": at, "sentAt": null, "deliveredAt": null, "readAt": null, "failedAt": null, "failure": null, "reaction": null,
        "postId": null, "reply": null,
        "sentBy": {"kind": if author.is_some() { "person" } else { "api" }, "id": author, "name": email},
    }}))
}
