//! markConversationRead (operation 64): the business's read marker of the
//! conversation (an API key has no person behind it), and for a console
//! session the user's own too (`conversation_reads`), which is what their
//! `unreadCount` counts from. Without
//! `lastSeenEntryId` everything in the conversation now is read; with it,
//! what came after that message or comment stays unread, so a message that
//! arrived after the reader's page was drawn is not marked read unseen. A
//! marker never moves back: marking an entry older than the marker read
//! changes nothing.

use serde::Deserialize;
use switchboard_guest::db;
use switchboard_guest::{fail, is_uuid, now, params, req, HResult, Request, Success};

use super::{path_id, result, Reader};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadBody {
    #[serde(default)]
    last_seen_entry_id: Option<String>,
}

pub fn mark_read(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = path_id(r)?;
    let b: ReadBody = req::body(r)?;
    let Some(entry) = b.last_seen_entry_id.map(|e| e.to_ascii_lowercase()) else {
        db::execute("UPDATE conversations SET unread_count = 0, read_at = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into(), now().into()])?;
        // The person has seen the newest entry there is.
        let newest = db::query_one_as::<(String, String)>(
            "SELECT created_at, id FROM (SELECT created_at, id FROM messages WHERE business_id = ?1 AND conversation_id = ?2 \
               UNION ALL SELECT created_at, id FROM photoapp_comments WHERE business_id = ?1 AND conversation_id = ?2) ORDER BY 1 DESC, 2 DESC LIMIT 1",
            &params![biz, &id],
        )?;
        if let Some((at, entry)) = newest {
            mark_mine(r, &id, &at, &entry)?;
        }
        return result(r, &id);
    };
    let missing = || fail::not_found("entry_not_found", "`lastSeenEntryId` names no message, comment or note of this conversation");
    if !is_uuid(&entry) {
        return Err(missing());
    }
    let seen_at = db::query_one_as::<String>(
        "SELECT created_at FROM messages WHERE business_id = ?1 AND conversation_id = ?2 AND id = ?3 \
         UNION ALL SELECT created_at FROM photoapp_comments WHERE business_id = ?1 AND conversation_id = ?2 AND id = ?3 \
         UNION ALL SELECT created_at FROM conversation_notes WHERE business_id = ?1 AND conversation_id = ?2 AND id = ?3",
        &params![biz, &id, &entry],
    )?
    .ok_or_else(missing)?;
    // What is still unread after the entry: inbound messages and comments
    // after it in the thread's order (created at, id).
    db::execute(
        "UPDATE conversations SET read_at = ?3, unread_count = \
           (SELECT count(*) FROM messages m WHERE m.business_id = ?1 AND m.conversation_id = ?2 AND m.direction = 'inbound' \
              AND (m.created_at > ?3 OR (m.created_at = ?3 AND m.id > ?4))) + \
           (SELECT count(*) FROM photoapp_comments k WHERE k.business_id = ?1 AND k.conversation_id = ?2 \
              AND (k.created_at > ?3 OR (k.created_at = ?3 AND k.id > ?4))) \
         WHERE business_id = ?1 AND id = ?2 AND IFNULL(read_at, '') <= ?3",
        &[biz.into(), id.as_str().into(), seen_at.as_str().into(), entry.as_str().into()],
    )?;
    mark_mine(r, &id, &seen_at, &entry)?;
    result(r, &id)
}

/// A session's user has seen up to (`at`, `entry`): their marker moves
/// there, never back.
fn mark_mine(r: &Request, id: &str, at: &str, entry: &str) -> Result<(), switchboard_guest::Failure> {
    let Reader::Person(user) = Reader::of(r) else { return Ok(()) };
    db::execute(
        "INSERT INTO conversation_reads (business_id, conversation_id, user_id, seen_at, seen_id) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (business_id, conversation_id, user_id) DO UPDATE SET seen_at = excluded.seen_at, seen_id = excluded.seen_id \
         WHERE excluded.seen_at > conversation_reads.seen_at OR (excluded.seen_at = conversation_reads.seen_at AND excluded.seen_id > conversation_reads.seen_id)",
        &[r.business_id.as_str().into(), id.into(), user.into(), at.into(), entry.into()],
    )?;
    Ok(())
}
