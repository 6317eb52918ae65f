//! `messaging.autoreply`: the assigned agent answers one inbound chatapp or
//! photoapp message (issue 4 point 7, the reply half).
//!
//! `inbound.rs` and `photoapp_inbound.rs` enqueue the job in the same
//! transaction as the stored message, only when [`eligible`] holds for the
//! phone number or photoapp account:
//!
//! - no subscription of that number/account is `active` (every subscription
//!   is `externalAutomation: true`, so an active one means the integrator
//!   answers; a paused one does not);
//! - its assignment names an active agent of that channel, with
//!   `auto_reply_enabled = 1` and `human_handoff_active = 0`, and no person
//!   has taken the message's conversation over (`conversations/handoff.rs`); an agent
//!   with `photoappCollectMobileEnabled` is also told to ask for a mobile
//!   number (the agent runtime's `turn::COLLECT_MOBILE`).
//!
//! The job checks the same rules again when it runs (a handoff or a
//! subscription may have arrived in between), and the conversation's
//! handoff once more after the agent's turn, before it writes the reply,
//! and skips a contact whose
//! communication is blocked. It then reads the last [`HISTORY`] messages of
//! the conversation (oldest first; inbound = `user`, outbound = `assistant`)
//! and the agent's instructions, asks for a grounded reply (the agent
//! runtime's `turn::answer`, through the host's `ai` interface)
//! and stores it as an outbound `text` message with status `queued` plus a
//! timeline entry, and enqueues its `messaging.deliver` job (the same
//! delivery as an API send: recipient = the contact's mobile, `task_ref` =
//! the delivery job), all in the job's one fenced transaction. An `ai` error
//! is retried with backoff, then the job is dead (no reply).

use switchboard_agent_runtime::turn::{self, Turn};
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::job::{self, retry, run_step};
use switchboard_guest::job_kinds::messaging::{MessageRef, MessagingJob};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{now, params, Failure};

use crate::conversation;
use crate::conversations::handoff;

/// Conversation history an agent turn sees (spec: last 20 messages).
pub const HISTORY: usize = 20;
/// `ai` failures are retried this many times before the job gives up.
const MAX_ATTEMPTS: u32 = 6;

/// The assigned agent (id, instructions, photoapp_collect_mobile) when the
/// service answers this chatapp number or photoapp account (`sender`)
/// itself: never while an external-automation subscription for it is
/// active or paused (a paused integrator still owns the replies; answering
/// then would give the customer two answers after it resumes), and after
/// revocation as the assignment says.
pub fn eligible(biz: &str, channel: Channel, sender: &str) -> Result<Option<(String, String, bool)>, Failure> {
    assigned_agent(biz, channel, sender, None)
}

/// The one rule of who answers for a number or an account: its assignment's
/// active agent of that channel, auto-reply on, no handoff, and no active or
/// paused subscription of the sender that owns the traffic: any
/// subscription (every one is external automation) when `owning_event` is
/// None, else one that receives `owning_event` (comments:
/// `comment_reply.rs`). (id, instructions, photoapp_collect_mobile).
pub fn assigned_agent(biz: &str, channel: Channel, sender: &str, owning_event: Option<&str>) -> Result<Option<(String, String, bool)>, Failure> {
    db::query_one_as(
        "SELECT a.id, a.instructions, IFNULL(a.photoapp_collect_mobile, 0) FROM channel_assignments ca \
         JOIN agents a ON a.business_id = ca.business_id AND a.id = ca.ai_agent_id \
         WHERE ca.business_id = ?1 AND ca.channel = ?2 AND ca.provider_id = ?3 \
           AND ca.auto_reply_enabled = 1 AND ca.human_handoff_active = 0 \
           AND a.status = 'active' AND a.channel = ?2 \
           AND NOT EXISTS (SELECT 1 FROM webhook_subscriptions ws WHERE ws.business_id = ?1 AND ws.channel = ?2 \
                           AND IFNULL(ws.phone_number_id, ws.provider_account_id) = ?3 AND ws.status IN ('active', 'paused') \
                           AND ws.external_automation = 1 \
                           AND (?4 IS NULL OR EXISTS (SELECT 1 FROM json_each(ws.events_json) e WHERE e.value = ?4)))",
        &params![biz, channel, sender, owning_event],
    )
}

/// Called by the inbound jobs after storing `message_id`.
pub fn maybe_enqueue(biz: &str, channel: Channel, sender: &str, message_id: &str) -> Result<(), Failure> {
    if eligible(biz, channel, sender)?.is_some() && !handoff::taken_over(biz, message_id)? {
        job::enqueue(biz, &MessagingJob::Autoreply(MessageRef { message_id: message_id.to_string() }))?;
    }
    Ok(())
}

/// (role, text) pairs, oldest first, from (direction, text) rows newest
/// first; at most [`HISTORY`] of them.
pub fn history(newest_first: &[(String, Option<String>)]) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = newest_first
        .iter()
        .take(HISTORY)
        .map(|(dir, text)| {
            let role = if dir == "outbound" { "assistant" } else { "user" };
            (role.to_string(), text.clone().unwrap_or_else(|| "[image]".to_string()))
        })
        .collect();
    h.reverse();
    h
}

pub fn run(job: &Job, message_id: &str) -> Outcome {
    run_step("during auto-reply", || reply(job, message_id))
}

fn reply(job: &Job, message_id: &str) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    // The sender is the chatapp number or the photoapp account; the
    // recipient the contact's mobile or the photoapp user; the contact may be
    // absent for a photoapp participant not linked yet.
    let Some((conversation_id, contact_id, channel, sender, blocked, recipient)) = db::query_one_as::<(String, Option<String>, Channel, String, bool, Option<String>)>(
        "SELECT m.conversation_id, m.contact_id, c.channel, IFNULL(c.phone_number_id, c.provider_account_id), \
                IFNULL(k.communication_blocked, 0), CASE c.channel WHEN 'chatapp' THEN k.mobile ELSE c.participant_id END \
         FROM messages m \
         JOIN conversations c ON c.business_id = m.business_id AND c.id = m.conversation_id \
         LEFT JOIN contacts k ON k.business_id = m.business_id AND k.id = m.contact_id \
         WHERE m.business_id = ?1 AND m.id = ?2 AND m.direction = 'inbound'",
        &params![biz, message_id],
    )?
    else {
        return Ok(Outcome::Dead("the inbound message no longer exists".into()));
    };
    let Some(recipient) = recipient else { return Ok(Outcome::Dead("the conversation has no recipient".into())) };
    if blocked {
        return Ok(Outcome::Done);
    }
    let Some((agent, instructions, collect_mobile)) = eligible(biz, channel, &sender)? else {
        return Ok(Outcome::Done);
    };
    if handoff::taken_over(biz, message_id)? {
        return Ok(Outcome::Done);
    }

    let rows: Vec<(String, Option<String>)> = db::query_as(
        &format!("SELECT direction, text FROM messages WHERE business_id = ?1 AND conversation_id = ?2 ORDER BY created_at DESC, id DESC LIMIT {HISTORY}"),
        &params![biz, &conversation_id],
    )?;
    // Grounded in the agent's own sources (passages, and lookups of its
    // structured ones).
    let (text, used) = match turn::answer(biz, &agent, &instructions, Turn::Message { collect_mobile }, &history(&rows))? {
        Ok(r) => (r.text, r.used),
        Err(e) if job.attempt >= MAX_ATTEMPTS => return Ok(Outcome::Dead(format!("ai: {e}"))),
        Err(e) => return Ok(retry(job.attempt, format!("ai: {e}"))),
    };

    // A person may have taken the conversation over while the agent thought
    // (read in the transaction the reply is written in).
    if handoff::taken_over_now(biz, message_id)? {
        return Ok(Outcome::Done);
    }
    let now = now();
    let (reply_id, _, _) = conversation::queue_outbound(&conversation::Outbound {
        business: biz,
        channel,
        conversation_id: &conversation_id,
        contact_id: contact_id.as_deref(),
        phone_number_id: &sender,
        recipient: &recipient,
        kind: "text",
        text: Some(text),
        media_id: None,
        now: &now,
    })?;
    conversation::record_sender(biz, &reply_id, &conversation::Sender::Agent(&agent))?;
    if let Some(used) = used {
        db::execute("UPDATE messages SET grounding_json = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), reply_id.as_str().into(), used.into()])?;
    }
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_bounded_to_the_last_20_oldest_first() {
        // 30 messages, newest first: m29 … m0; odd ones are replies.
        let rows: Vec<(String, Option<String>)> = (0..30).rev().map(|i| (if i % 2 == 1 { "outbound" } else { "inbound" }.to_string(), Some(format!("m{i}")))).collect();
        let h = history(&rows);
        assert_eq!(h.len(), HISTORY);
        assert_eq!(h.first().unwrap(), &("user".to_string(), "m10".to_string()));
        assert_eq!(h.last().unwrap(), &("assistant".to_string(), "m29".to_string()));
        let texts: Vec<&str> = h.iter().map(|(_, t)| t.as_str()).collect();
        let expected: Vec<String> = (10..30).map(|i| format!("m{i}")).collect();
        assert_eq!(texts, expected);
    }

    #[test]
    fn short_history_and_images() {
        let h = history(&[("inbound".into(), None), ("outbound".into(), Some("hi".into()))]);
        assert_eq!(h, vec![("assistant".to_string(), "hi".to_string()), ("user".to_string(), "[image]".to_string())]);
        assert!(history(&[]).is_empty());
    }
}
