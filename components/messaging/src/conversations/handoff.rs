//! updateConversation (operation 65): the per-conversation handoff. A
//! person takes a conversation over (`humanHandoffActive: true`) and the
//! agent stops auto-replying in it, while it keeps answering the number's
//! or account's other conversations; handing back (`false`) lets it answer
//! the next inbound message (not those that came during the handoff: the
//! person owned them). The channel assignment's `humanHandoffActive`
//! (operation 36) is the same switch for a whole number or account; either
//! one silences the agent. The auto-reply checks [`taken_over`] when it
//! enqueues and again when it runs (`jobs/autoreply.rs`).
//!
//! Public comment replies follow the assignment only: a comment is answered
//! in public under a post, not in the conversation a person took over.

use serde::Deserialize;
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{now, req, Failure, HResult, Request, Success};

use super::{path_id, result};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    human_handoff_active: bool,
}

pub fn update(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = path_id(r)?;
    let b: UpdateBody = req::body(r)?;
    db::execute(
        "UPDATE conversations SET handoff_active = ?3, handoff_changed_at = ?4 WHERE business_id = ?1 AND id = ?2 AND handoff_active <> ?3",
        &[biz.into(), id.as_str().into(), i64::from(b.human_handoff_active).into(), now().into()],
    )?;
    result(biz, &id)
}

/// [`taken_over`] read in the job step's write transaction, for the last
/// check before a step that called out writes. Its reads before its first
/// write run outside any transaction, and at a replica node on the
/// replica's view, which may not yet hold a takeover committed at the
/// primary a moment ago; a statement that is not a `SELECT` (this `VALUES`
/// of the same subquery, which writes nothing) makes the host begin the
/// step's transaction first: the write gate, and at a replica node the
/// primary's lock and everything the primary holds.
pub fn taken_over_now(biz: &str, message_id: &str) -> Result<bool, Failure> {
    Ok(db::query_one(
        "VALUES ((SELECT c.handoff_active FROM messages m JOIN conversations c ON c.business_id = m.business_id AND c.id = m.conversation_id \
          WHERE m.business_id = ?1 AND m.id = ?2))",
        &[biz.into(), message_id.into()],
    )?
    .is_some_and(|r| r.opt_int(0) == Some(1)))
}

/// True when a person has taken the conversation of `message_id` over.
pub fn taken_over(biz: &str, message_id: &str) -> Result<bool, Failure> {
    Ok(db::query_one(
        "SELECT c.handoff_active FROM messages m JOIN conversations c ON c.business_id = m.business_id AND c.id = m.conversation_id \
         WHERE m.business_id = ?1 AND m.id = ?2",
        &[biz.into(), message_id.into()],
    )?
    .is_some_and(|r| r.boolean(0)))
}
