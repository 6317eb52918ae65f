//! `messaging.photoapp-comment-reply`: the account's assigned agent answers
//! one public comment with a public reply under it (calls out: the `ai`
//! import, then the `messenger`'s `reply-to-comment`).
//!
//! Enqueued with the stored comment (`photoapp_signal.rs`) when
//! [`eligible`] holds: the account's assignment names an active photoapp
//! agent with auto-reply on and no handoff, and no subscription of the
//! account that receives `photoapp.comment.received` is active or paused
//! (that integrator owns the comments; a subscription to the replied and
//! failed events alone only watches). The comment is then `replying`.
//!
//! A comment is answered at most once: the reply is preceded by the
//! effect `comment-reply.<attempt>` (`jobs.begin-effect`), and a step that
//! finds its effect started by a crashed step does not reply again: the
//! outcome is unknown, so the comment ends `failed` with
//! `reply_outcome_unknown`. A provider error that is retryable is tried
//! again with backoff (5 attempts); any other ends the comment `failed`.
//! `photoapp.comment.replied` or `photoapp.comment.failed` follows, in the
//! step that records the outcome; a reply to a linked commenter joins the
//! contact's timeline (an outbound entry of type `comment_reply`).

use serde_json::json;
use switchboard_agent_runtime::turn::{self, Turn};
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::job::{retry, run_step};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::jobs::{self, EffectStart};
use switchboard_guest::messenger::{self, CommentReply};
use switchboard_guest::{events, now, params, timeline, Failure};

use crate::conversation;

pub const REPLIED_EVENT: &str = "photoapp.comment.replied";
pub const FAILED_EVENT: &str = "photoapp.comment.failed";
/// Provider and AI failures are tried this many times in all.
const MAX_ATTEMPTS: u32 = 5;
/// The assigned agent (id, instructions) when the service answers this
/// account's comments (autoreply.rs holds the rule; a subscription owns
/// the comments when it receives `photoapp.comment.received`). Its turn is
/// a [`Turn::Comment`]: the agent runtime tells it the reply is public.
pub fn eligible(biz: &str, account: &str) -> Result<Option<(String, String)>, Failure> {
    Ok(super::autoreply::assigned_agent(biz, Channel::Photoapp, account, Some(super::photoapp_signal::COMMENT_EVENT))?.map(|(id, instructions, _)| (id, instructions)))
}

pub fn run(job: &Job, comment: &str) -> Outcome {
    run_step("during a comment reply", || reply(job, comment))
}

struct Comment {
    account: String,
    conversation_id: String,
    provider_comment_id: String,
    post_id: Option<String>,
    text: String,
}

fn reply(job: &Job, id: &str) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    type Stored = (String, String, String, Option<String>, String, String);
    let Some((account, conversation_id, provider_comment_id, post_id, text, status)) =
        db::query_one_as::<Stored>("SELECT account_id, conversation_id, provider_comment_id, post_id, text, status FROM photoapp_comments WHERE business_id = ?1 AND id = ?2", &params![biz, id])?
    else {
        return Ok(Outcome::Dead("the comment no longer exists".into()));
    };
    if status != "replying" {
        return Ok(Outcome::Done);
    }
    let c = Comment { account, conversation_id, provider_comment_id, post_id, text };
    let Some((commenter, contact_id, name)) = db::query_one_as::<(String, Option<String>, Option<String>)>(
        "SELECT participant_id, contact_id, participant_name FROM conversations WHERE business_id = ?1 AND id = ?2",
        &params![biz, &c.conversation_id],
    )?
    else {
        return Ok(Outcome::Dead("the commenter's conversation no longer exists".into()));
    };
    let who = conversation::Participant { conversation_id: c.conversation_id.clone(), contact_id, name };
    let Some((agent, instructions)) = eligible(biz, &c.account)? else {
        // The integrator took the comments over, or the agent stopped answering.
        db::execute("UPDATE photoapp_comments SET status = 'received' WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.into()])?;
        return Ok(Outcome::Done);
    };
    let text = match turn::answer(biz, &agent, &instructions, Turn::Comment, &[("user".to_string(), c.text.clone())])? {
        Ok(r) => r.text,
        Err(e) if job.attempt >= MAX_ATTEMPTS => return fail(biz, id, &c, &who, &commenter, "ai_unavailable", &format!("no reply could be written: {e}")),
        Err(e) => return Ok(retry(job.attempt, format!("ai: {e}"))),
    };
    match jobs::begin_effect(&format!("comment-reply.{}", job.attempt)).map_err(db::store_failure)? {
        EffectStart::Fresh => {}
        EffectStart::StartedBefore => return fail(biz, id, &c, &who, &commenter, "reply_outcome_unknown", "a reply was started and its outcome is unknown; it is not sent twice"),
        EffectStart::Superseded => return Ok(Outcome::Dead("superseded: another node runs this job".into())),
    }
    let sent = messenger::reply_to_comment(&CommentReply {
        reply_id: id.to_string(),
        channel: "photoapp".into(),
        sender_id: c.account.clone(),
        comment_id: c.provider_comment_id.clone(),
        commenter: commenter.clone(),
        text: text.clone(),
    });
    match sent {
        Ok(provider_reply_id) => {
            let now = now();
            db::execute(
                "UPDATE photoapp_comments SET status = 'replied', reply_text = ?3, provider_reply_id = ?4, replied_at = ?5 WHERE business_id = ?1 AND id = ?2",
                &[biz.into(), id.into(), text.as_str().into(), provider_reply_id.as_str().into(), now.as_str().into()],
            )?;
            // A linked commenter's timeline shows the public reply too.
            if let Some(contact) = &who.contact_id {
                let summary = super::photoapp_signal::comment_reply_summary(id, &c.provider_comment_id, c.post_id.as_deref(), &text);
                timeline::append_message(biz, contact, "photoapp", "outbound", &now, &summary)?;
            }
            let mut event = envelope(biz, REPLIED_EVENT, &c, &who, &commenter, &now);
            event["reply"] = json!({"text": text, "providerReplyId": provider_reply_id});
            events::fan_out(biz, "photoapp", &c.account, REPLIED_EVENT, &event_id(REPLIED_EVENT, &c), &event)?;
            Ok(Outcome::Done)
        }
        Err(e) if e.retryable && job.attempt < MAX_ATTEMPTS => Ok(retry(job.attempt, format!("messenger: {}", e.code))),
        Err(e) => fail(biz, id, &c, &who, &commenter, &e.code, &e.message),
    }
}

/// The comment ends `failed` with `code`; `photoapp.comment.failed` follows.
fn fail(biz: &str, id: &str, c: &Comment, who: &conversation::Participant, commenter: &str, code: &str, message: &str) -> Result<Outcome, Failure> {
    let now = now();
    db::execute(
        "UPDATE photoapp_comments SET status = 'failed', failure_code = ?3, failure_message = ?4, replied_at = ?5 WHERE business_id = ?1 AND id = ?2",
        &[biz.into(), id.into(), code.into(), message.into(), now.as_str().into()],
    )?;
    let mut event = envelope(biz, FAILED_EVENT, c, who, commenter, &now);
    event["failure"] = json!({"code": code, "message": message});
    events::fan_out(biz, "photoapp", &c.account, FAILED_EVENT, &event_id(FAILED_EVENT, c), &event)?;
    Ok(Outcome::Done)
}

/// The event of the comment's outcome; its id is `replied.<comment id>` or
/// `failed.<comment id>` (one outcome per comment).
fn envelope(biz: &str, event_type: &str, c: &Comment, who: &conversation::Participant, commenter: &str, now: &str) -> serde_json::Value {
    let mut event = super::photoapp_signal::envelope(biz, event_type, &event_id(event_type, c), now, &c.account, who, commenter);
    event["comment"] = json!({"commentId": c.provider_comment_id, "postId": c.post_id, "text": c.text});
    event
}

fn event_id(event_type: &str, c: &Comment) -> String {
    format!("{}.{}", if event_type == REPLIED_EVENT { "replied" } else { "failed" }, c.provider_comment_id)
}
