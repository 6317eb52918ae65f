//! The messaging area's kinds (`components/messaging/src/jobs/`).
//!
//! `messaging.inbound`, `messaging.photoapp-inbound`, `-reaction`,
//! `-referral` and `-comment` are also enqueued by the host (the sandbox
//! admin commands and routes, a provider's pushed messages:
//! `crates/admin/src/lib.rs`), and `messaging.deliver` by a provider's pushed
//! status (`host/src/provider_events.rs`).

use serde::{Deserialize, Serialize};

use crate::{JobKind, JobOptions};
use switchboard_sql::{params, Sql};

/// Every job kind of the messaging area: the serde name is the kind, the
/// content the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum MessagingJob {
    /// One inbound chatapp message (enqueued by the host).
    #[serde(rename = "messaging.inbound")]
    Inbound(Inbound),
    /// One inbound photoapp direct message (enqueued by the host).
    #[serde(rename = "messaging.photoapp-inbound")]
    PhotoappInbound(PhotoappInbound),
    /// A photoapp user's reaction to a message (enqueued by the host).
    #[serde(rename = "messaging.photoapp-reaction")]
    PhotoappReaction(Reaction),
    /// A photoapp user's arrival from an ad or a post (enqueued by the host).
    #[serde(rename = "messaging.photoapp-referral")]
    PhotoappReferral(Referral),
    /// A public comment on one of the account's posts (enqueued by the host).
    #[serde(rename = "messaging.photoapp-comment")]
    PhotoappComment(Comment),
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
    /// status (calls the `messenger` import; also queued by a provider's
    /// pushed status when the message has no pending delivery job).
    #[serde(rename = "messaging.deliver")]
    Deliver(MessageRef),
}

impl JobKind for MessagingJob {
    fn options(&self) -> JobOptions {
        use MessagingJob::*;
        let calls_out = match self {
            Inbound(_) | PhotoappInbound(_) | PhotoappReaction(_) | PhotoappReferral(_) | PhotoappComment(_) => false,
            Autoreply(_) | Deliver(_) | PhotoappCommentReply(_) | AgentTestReply(_) => true,
        };
        // One step at a time moves a message: a provider's pushed status
        // queues its delivery job in the same lane.
        let lane = match self {
            Deliver(m) => Some(delivery_lane(&m.message_id)),
            _ => None,
        };
        JobOptions { calls_out, lane, delay_ms: 0 }
    }
}

/// The lane of one message's delivery jobs (a pushed status brings its
/// pending job forward by it).
pub fn delivery_lane(message_id: &str) -> String {
    format!("message:{message_id}")
}

/// The outbound message of `business` that the provider knows as
/// `provider_message_id` (a pushed status is about it), if there is one.
pub fn outbound_by_provider_id<S: Sql>(sql: &S, business: &str, provider_message_id: &str) -> Result<Option<String>, S::Error>
where
    S::Error: From<switchboard_sql::Mismatch>,
{
    sql.query_one_as("SELECT id FROM messages WHERE business_id = ?1 AND provider_message_id = ?2 AND direction = 'outbound'", &params![business, provider_message_id])
}

/// The payload of a job about one stored message: `{"messageId": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRef {
    pub message_id: String,
}

/// The payload of a job about one stored photoapp comment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommentRef {
    pub comment_id: String,
}

/// The payload of a console test reply: the pending assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestTurnRef {
    pub turn_id: String,
}

/// One inbound chatapp message as the provider's webhook hands it over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inbound {
    /// The business's number the message was written to.
    pub phone_number_id: String,
    /// The sender's mobile (E.164).
    pub from: String,
    /// The sender's profile name.
    #[serde(default)]
    pub name: Option<String>,
    pub text: String,
    pub provider_message_id: String,
}

/// One inbound photoapp direct message as the provider's webhook hands it over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhotoappInbound {
    /// The business's professional account the message was written to.
    pub account_id: String,
    /// The sender's photoapp user id.
    pub from: String,
    /// The sender's handle.
    #[serde(default)]
    pub name: Option<String>,
    pub text: String,
    pub provider_message_id: String,
}

/// A photoapp user's reaction to a message, or its removal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reaction {
    pub account_id: String,
    pub from: String,
    pub reaction: String,
    /// Our message id or the provider's; none: the user's latest message from us.
    #[serde(default)]
    pub message_id: Option<String>,
    #[serde(default)]
    pub removed: bool,
    /// When the user reacted, as the provider dates it (RFC 3339 UTC with
    /// milliseconds); none: when it arrived. A reaction older than the one
    /// stored changes nothing, so a late `removed` never undoes a newer add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
}

/// A photoapp user's arrival from an ad or a post.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Referral {
    pub account_id: String,
    pub from: String,
    /// `ad`, `post`, …
    pub source: String,
    #[serde(default)]
    pub ad_id: Option<String>,
    #[serde(default)]
    pub post_id: Option<String>,
}

/// A public comment on one of the account's posts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub account_id: String,
    pub from: String,
    #[serde(default)]
    pub name: Option<String>,
    pub text: String,
    #[serde(default)]
    pub post_id: Option<String>,
    /// The provider's comment id (one comment is stored once by it).
    pub comment_id: String,
    /// When it was written, as the provider dates it (RFC 3339 UTC with
    /// milliseconds); none: when it arrived. Its private reply may be sent
    /// within 7 days of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<String>,
}
