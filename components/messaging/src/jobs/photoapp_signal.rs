//! `messaging.photoapp-reaction` and `messaging.photoapp-referral`: what a
//! photoapp user does besides writing, enqueued durably by the provider's
//! inbound webhook (today the sandbox: `switchboard admin sandbox reaction
//! | referral` or `POST /sandbox/v1/photoapp/reactions | referrals`). In the
//! job's one fenced transaction:
//!
//! * **a reaction** to a message of the user's conversation (named by our
//!   message id or the provider's) is stored on the message (`reaction`,
//!   cleared when `removed`) and `photoapp.message.reaction` is fanned out,
//!   in the order of the reactions' own times (`occurredAt`, else arrival):
//!   one older than the stored reaction, or the same one again, changes
//!   nothing and makes no event;
//!   a reaction to a message we do not know (another conversation, never
//!   stored) is ignored with a log line, as the provider's own late or
//!   stray reactions would be;
//! * **a referral** (the user arrived from an ad or a post) starts the
//!   user's conversation when it has none (a participant without a contact,
//!   like a first direct message), keeps the latest referral on it and fans
//!   `photoapp.message.referral` out;
//! * **a public comment** on one of the account's posts resolves the
//!   commenter as a participant like a direct message does, is stored once
//!   per provider comment id (`photoapp_comments`) and fans
//!   `photoapp.comment.received` out (event id: the comment id); when the
//!   account's agent answers comments (`comment_reply.rs`), the comment is
//!   `replying` and its reply job is queued.
//!
//! The event id is the job's (one event per provider signal: a job runs to
//! completion once; a retried step commits nothing before it).

use serde_json::{json, Value};
use switchboard_guest::db;
use switchboard_guest::job::run_step;
use switchboard_guest::job_kinds::messaging::{CommentRef, MessagingJob};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::{events, log, new_id, now, params, Failure};

use crate::conversation;
use switchboard_guest::{job, timeline};

pub const REACTION_EVENT: &str = "photoapp.message.reaction";
pub const REFERRAL_EVENT: &str = "photoapp.message.referral";
pub const COMMENT_EVENT: &str = "photoapp.comment.received";

/// The payloads, declared with the kinds in `switchboard-job-kinds` (the
/// host writes them: `crates/admin/src/lib.rs` `enqueue_photoapp_signal`).
pub use switchboard_guest::job_kinds::messaging::{Comment, Reaction, Referral};

pub fn run_comment(job: &Job, p: Comment) -> Outcome {
    run_step("during a photoapp comment", || comment(&job.business_id, &p));
    Outcome::Done
}

pub fn run_reaction(job: &Job, p: Reaction) -> Outcome {
    run_step("during a photoapp reaction", || reaction(&job.business_id, &job.id, &p));
    Outcome::Done
}

pub fn run_referral(job: &Job, p: Referral) -> Outcome {
    run_step("during a photoapp referral", || referral(&job.business_id, &job.id, &p));
    Outcome::Done
}

/// What every photoapp signal event carries (our shape, in the spirit of
/// `photoapp.message.received`).
pub fn envelope(biz: &str, event_type: &str, event_id: &str, occurred_at: &str, account: &str, c: &conversation::Participant, user: &str) -> Value {
    json!({
        "contractVersion": events::CONTRACT_VERSION,
        "eventId": event_id,
        "eventType": event_type,
        "occurredAt": occurred_at,
        "businessId": biz,
        "providerAccountId": account,
        "channel": "photoapp",
        "conversationId": c.conversation_id,
        "participantId": c.conversation_id,
        "customer": {"photoappUserId": user, "username": c.name, "contactId": c.contact_id},
    })
}

fn reaction(biz: &str, job_id: &str, p: &Reaction) -> Result<(), Failure> {
    let Some(c) = conversation::photoapp_participant(biz, &p.account_id, &p.from)? else {
        log::log(log::Level::Info, "photoapp reaction from a user without a conversation: ignored");
        return Ok(());
    };
    // The message reacted to: named, or the latest we sent the user.
    let target = match &p.message_id {
        Some(id) => db::query_one_as::<(String, Option<String>)>(
            "SELECT id, provider_message_id FROM messages WHERE business_id = ?1 AND conversation_id = ?2 AND (id = ?3 OR provider_message_id = ?3)",
            &params![biz, &c.conversation_id, id],
        )?,
        None => db::query_one_as::<(String, Option<String>)>(
            "SELECT id, provider_message_id FROM messages WHERE business_id = ?1 AND conversation_id = ?2 AND direction = 'outbound' ORDER BY created_at DESC, id DESC LIMIT 1",
            &params![biz, &c.conversation_id],
        )?,
    };
    let Some((target_id, target_provider_id)) = target else {
        log::log(log::Level::Info, "photoapp reaction to a message this conversation does not have: ignored");
        return Ok(());
    };
    // Event time decides, not arrival: a reaction older than the stored one
    // (a late `removed` after a newer add) changes nothing and tells no one,
    // nor does the same one again (a provider's webhook sent twice).
    let at = p.occurred_at.clone().unwrap_or_else(now);
    let changed = db::execute(
        "UPDATE messages SET reaction = ?3, reacted_at = ?4 WHERE business_id = ?1 AND id = ?2 \
         AND (reacted_at IS NULL OR reacted_at < ?4 OR (reacted_at = ?4 AND reaction IS NOT ?3))",
        &params![biz, &target_id, (!p.removed).then(|| p.reaction.clone()), &at],
    )?;
    if changed == 0 {
        log::log(log::Level::Info, "photoapp reaction older than the message's stored one: ignored");
        return Ok(());
    }
    let event_id = format!("reaction.{job_id}");
    let mut event = envelope(biz, REACTION_EVENT, &event_id, &at, &p.account_id, &c, &p.from);
    event["messageId"] = json!(target_id);
    event["providerMessageId"] = json!(target_provider_id);
    event["reaction"] = json!({"emoji": p.reaction, "action": if p.removed { "removed" } else { "added" }});
    events::fan_out(biz, "photoapp", &p.account_id, REACTION_EVENT, &event_id, &event)
}

fn referral(biz: &str, job_id: &str, p: &Referral) -> Result<(), Failure> {
    let now = now();
    let c = conversation::start_photoapp_participant(biz, &p.account_id, &p.from, None, &now)?;
    let referral = json!({"source": p.source, "adId": p.ad_id, "postId": p.post_id});
    db::execute(
        "UPDATE conversations SET referral_json = ?3, referred_at = ?4 WHERE business_id = ?1 AND id = ?2",
        &[biz.into(), c.conversation_id.as_str().into(), referral.to_string().into(), now.as_str().into()],
    )?;
    let event_id = format!("referral.{job_id}");
    let mut event = envelope(biz, REFERRAL_EVENT, &event_id, &now, &p.account_id, &c, &p.from);
    event["referral"] = referral;
    events::fan_out(biz, "photoapp", &p.account_id, REFERRAL_EVENT, &event_id, &event)
}

fn comment(biz: &str, p: &Comment) -> Result<(), Failure> {
    let now = now();
    let name = super::inbound::profile_name(p.name.as_deref());
    let c = conversation::start_photoapp_participant(biz, &p.account_id, &p.from, name.as_deref(), &now)?;
    let stored = db::execute(
        "INSERT INTO photoapp_comments (business_id, id, account_id, conversation_id, provider_comment_id, post_id, text, created_at, commented_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
        &[
            biz.into(),
            new_id().into(),
            p.account_id.as_str().into(),
            c.conversation_id.as_str().into(),
            p.comment_id.as_str().into(),
            p.post_id.clone().into(),
            p.text.as_str().into(),
            now.as_str().into(),
            // The provider's time starts the private reply's 7 days (private_reply.rs).
            p.occurred_at.as_deref().unwrap_or(&now).into(),
        ],
    )?;
    if stored == 0 {
        return Ok(()); // a redelivered comment
    }
    let id = db::query_one_as::<String>("SELECT id FROM photoapp_comments WHERE business_id = ?1 AND account_id = ?2 AND provider_comment_id = ?3", &params![biz, &p.account_id, &p.comment_id])?
        .expect("stored above");
    // A linked participant's comment joins the contact's timeline (an
    // inbound photoapp message entry of type `comment`; operation 34 writes
    // the entries of comments made before the link).
    if let Some(contact) = &c.contact_id {
        timeline::append_message(biz, contact, "photoapp", "inbound", &now, &comment_summary(&id, &p.comment_id, p.post_id.as_deref(), &p.text))?;
    }
    if super::comment_reply::eligible(biz, &p.account_id)?.is_some() {
        db::execute("UPDATE photoapp_comments SET status = 'replying' WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.as_str().into()])?;
        job::enqueue(biz, &MessagingJob::PhotoappCommentReply(CommentRef { comment_id: id.clone() }))?;
    }
    let mut event = envelope(biz, COMMENT_EVENT, &p.comment_id, &now, &p.account_id, &c, &p.from);
    event["comment"] = json!({"commentId": p.comment_id, "postId": p.post_id, "text": p.text});
    events::fan_out(biz, "photoapp", &p.account_id, COMMENT_EVENT, &p.comment_id, &event)
}

/// A comment's timeline entry summary (the contacts area writes the same
/// shape when a participant is linked).
pub fn comment_summary(id: &str, provider_comment_id: &str, post_id: Option<&str>, text: &str) -> Value {
    json!({"type": "comment", "commentId": id, "providerCommentId": provider_comment_id, "postId": post_id, "text": text})
}

/// The timeline entry summary of a comment's public reply (an outbound
/// photoapp entry; the contacts area writes the same shape when a
/// participant is linked).
pub fn comment_reply_summary(id: &str, provider_comment_id: &str, post_id: Option<&str>, reply: &str) -> Value {
    json!({"type": "comment_reply", "commentId": id, "providerCommentId": provider_comment_id, "postId": post_id, "text": reply})
}
