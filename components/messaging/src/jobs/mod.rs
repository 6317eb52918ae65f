//! The job kinds of the messaging area, declared once ([`MessagingJob`]),
//! and [`run`], through which the dispatcher runs them.
//!
//! `messaging.inbound`, `messaging.photoapp-inbound`, `-reaction`,
//! `-referral` and `-comment` are also written by the host (`crates/admin/src/lib.rs` `enqueue_inbound`, the provider's inbound
//! webhook), so their payloads keep exactly that shape.

pub mod autoreply;
pub mod comment_reply;
pub mod deliver;
pub mod inbound;
pub mod photoapp_inbound;
pub mod photoapp_signal;
pub mod test_reply;

use serde::{Deserialize, Serialize};
use switchboard_guest::job::AreaJob;
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::jobs::JobOptions;

/// Every job kind of this area: the serde name is the kind, the content the payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum MessagingJob {
    /// One inbound chatapp message (enqueued by the host).
    #[serde(rename = "messaging.inbound")]
    Inbound(inbound::Payload),
    /// One inbound photoapp direct message (enqueued by the host).
    #[serde(rename = "messaging.photoapp-inbound")]
    PhotoappInbound(photoapp_inbound::Payload),
    /// A photoapp user's reaction to a message (enqueued by the host).
    #[serde(rename = "messaging.photoapp-reaction")]
    PhotoappReaction(photoapp_signal::Reaction),
    /// A photoapp user's arrival from an ad or a post (enqueued by the host).
    #[serde(rename = "messaging.photoapp-referral")]
    PhotoappReferral(photoapp_signal::Referral),
    /// A public comment on one of the account's posts (enqueued by the host).
    #[serde(rename = "messaging.photoapp-comment")]
    PhotoappComment(photoapp_signal::Comment),
    /// The account's agent answers one stored comment (calls the `ai` and
    /// `messenger` imports).
    #[serde(rename = "messaging.photoapp-comment-reply")]
    PhotoappCommentReply(CommentRef),
    /// The assigned agent answers one inbound message (calls the `ai` import).
    #[serde(rename = "messaging.autoreply")]
    Autoreply(MessageRef),
    /// The agent under test answers one console test turn (calls the `ai`
    /// import; writes only the test conversation).
    #[serde(rename = "messaging.agent-test-reply")]
    AgentTestReply(TestTurnRef),
    /// One outbound message handed to the provider and followed to a final
    /// status (calls the `messenger` import).
    #[serde(rename = "messaging.deliver")]
    Deliver(MessageRef),
}

impl AreaJob for MessagingJob {
    fn options(&self) -> JobOptions {
        let calls_out = match self {
            MessagingJob::Inbound(_) | MessagingJob::PhotoappInbound(_) | MessagingJob::PhotoappReaction(_) | MessagingJob::PhotoappReferral(_) | MessagingJob::PhotoappComment(_) => false,
            MessagingJob::Autoreply(_) | MessagingJob::Deliver(_) | MessagingJob::PhotoappCommentReply(_) | MessagingJob::AgentTestReply(_) => true,
        };
        // One step at a time moves a message: a provider's pushed status
        // (plugins/webhooks.rs in the host) queues its delivery job in the
        // same lane.
        let lane = match self {
            MessagingJob::Deliver(m) => Some(format!("message:{}", m.message_id)),
            _ => None,
        };
        JobOptions { calls_out, lane, delay_ms: 0 }
    }
}

/// The payload of a job about one stored message: `{"messageId": …}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRef {
    pub message_id: String,
}

/// The payload of a job about one stored photoapp comment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommentRef {
    pub comment_id: String,
}

/// The payload of a console test reply: the pending assistant turn.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestTurnRef {
    pub turn_id: String,
}

/// One step of a `messaging.*` job.
pub fn run(job: &Job) -> Outcome {
    match MessagingJob::from_job(job) {
        Ok(MessagingJob::Inbound(p)) => inbound::run(job, p),
        Ok(MessagingJob::PhotoappInbound(p)) => photoapp_inbound::run(job, p),
        Ok(MessagingJob::PhotoappReaction(p)) => photoapp_signal::run_reaction(job, p),
        Ok(MessagingJob::PhotoappReferral(p)) => photoapp_signal::run_referral(job, p),
        Ok(MessagingJob::PhotoappComment(p)) => photoapp_signal::run_comment(job, p),
        Ok(MessagingJob::PhotoappCommentReply(c)) => comment_reply::run(job, &c.comment_id),
        Ok(MessagingJob::Autoreply(m)) => autoreply::run(job, &m.message_id),
        Ok(MessagingJob::Deliver(m)) => deliver::run(job, &m.message_id),
        Ok(MessagingJob::AgentTestReply(t)) => test_reply::run(job, &t.turn_id),
        Err(dead) => dead,
    }
}
