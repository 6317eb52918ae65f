//! updateConversation (operation 65): the conversation's person
//! (`assignedUserId`: an owner or support agent of the business who can log
//! in, from `team_members`, or null), its state (`open` or `resolved`; a new
//! inbound entry opens it again), and the per-conversation handoff. A
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
use switchboard_guest::db;
use switchboard_guest::{fail, is_uuid, now, params, req, Failure, HResult, Request, Success};

use super::{path_id, result};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    #[serde(default)]
    human_handoff_active: Option<bool>,
    /// Absent: unchanged; null: nobody.
    #[serde(default, deserialize_with = "present")]
    assigned_user_id: Option<Option<String>>,
    #[serde(default)]
    state: Option<String>,
}

/// A field that may be null: `Some(None)` when sent as null.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

pub fn update(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = path_id(r)?;
    let b: UpdateBody = req::body(r)?;
    let now = now();
    if let Some(active) = b.human_handoff_active {
        db::execute(
            "UPDATE conversations SET handoff_active = ?3, handoff_changed_at = ?4 WHERE business_id = ?1 AND id = ?2 AND handoff_active <> ?3",
            &[biz.into(), id.as_str().into(), i64::from(active).into(), now.as_str().into()],
        )?;
    }
    if let Some(assignee) = b.assigned_user_id {
        let assignee = assignee.map(|u| u.to_ascii_lowercase());
        if let Some(u) = &assignee {
            let member = is_uuid(u)
                && db::query_one("SELECT 1 FROM team_members WHERE business_id = ?1 AND user_id = ?2 AND active = 1 AND role IN ('owner', 'agent')", &[biz.into(), u.as_str().into()])?.is_some();
            if !member {
                return Err(fail::not_found("assignee_not_found", "`assignedUserId` names no owner or support agent of this business who can log in (listTeamMembers lists them)"));
            }
        }
        db::execute("UPDATE conversations SET assigned_user_id = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into(), assignee.into()])?;
    }
    match b.state.as_deref() {
        None => {}
        Some("resolved") => {
            db::execute(
                "UPDATE conversations SET state = 'resolved', resolved_at = ?3 WHERE business_id = ?1 AND id = ?2 AND state <> 'resolved'",
                &[biz.into(), id.as_str().into(), now.as_str().into()],
            )?;
        }
        Some("open") => {
            db::execute("UPDATE conversations SET state = 'open', resolved_at = NULL WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into()])?;
        }
        Some(_) => return Err(fail::validation("invalid_state", "`state` must be open or resolved")),
    }
    result(r, &id)
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
    Ok(db::query_one_as::<Option<i64>>(
        "VALUES ((SELECT c.handoff_active FROM messages m JOIN conversations c ON c.business_id = m.business_id AND c.id = m.conversation_id \
          WHERE m.business_id = ?1 AND m.id = ?2))",
        &params![biz, message_id],
    )?
    .flatten()
        == Some(1))
}

/// True when a person has taken the conversation of `message_id` over.
pub fn taken_over(biz: &str, message_id: &str) -> Result<bool, Failure> {
    Ok(db::query_one_as::<bool>(
        "SELECT c.handoff_active FROM messages m JOIN conversations c ON c.business_id = m.business_id AND c.id = m.conversation_id \
         WHERE m.business_id = ?1 AND m.id = ?2",
        &params![biz, message_id],
    )?
    .unwrap_or(false))
}
