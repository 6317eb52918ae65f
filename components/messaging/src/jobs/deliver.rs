//! `messaging.deliver`: hands one outbound message (an API send or an
//! auto-reply, queued by `conversation::queue_outbound`) to the messaging provider
//! behind the `messenger` interface and follows it to a final status. It
//! never knows which provider answers (the embedded default is the
//! sandbox-messenger component).
//!
//! A step reads the stored status and asks the provider one question:
//! * `queued`: `submit`. The provider's message id is stored with status
//!   `submitted`. A refusal fails the message (`failed` with the provider's
//!   code and message); a transient error is retried with backoff, and after
//!   [`MAX_SUBMIT_ATTEMPTS`] the message fails with `provider_unavailable`.
//! * `submitted` … `delivered`: `track`. A reported status is stored with its
//!   timestamp; the step continues after the provider's `check-after-ms`, or
//!   finishes when there is nothing more to poll.
//!
//! `sent`, `delivered`, `read` and `failed` fan the matching delivery event
//! ([`MessageStatus::event_type`]: `chatapp.message.*`, or `photoapp.message.sent/seen/failed`)
//! out to the sender's webhook subscriptions in the same transaction as the
//! status. This kind runs in the runner's network
//! mode: the provider call happens before the first write, so no lock is held
//! across it, and the writes commit together with the job's fenced
//! completion (a crash in between re-asks the provider; a submit carries our
//! message id so an adapter can make the resubmission idempotent).

use serde_json::{json, Value};
use switchboard_guest::db;
use switchboard_guest::job::{retry, run_step};
use switchboard_guest::job_types::{Continuation, Job, Outcome};
use switchboard_guest::messenger::{self, OutboundMessage, ProviderError, StatusReport};
use switchboard_guest::row_struct;
use switchboard_guest::{events, log, now, params, Failure};

use crate::status::MessageStatus;
use switchboard_channel_connections::Channel;

/// Transient submit failures tolerated before the message fails.
pub const MAX_SUBMIT_ATTEMPTS: u32 = 8;

pub fn run(job: &Job, message_id: &str) -> Outcome {
    run_step("during message delivery", || step(job, message_id))
}

const COLUMNS: &str = "status, recipient, phone_number_id, conversation_id, provider_message_id, channel, type, text, media_id, reply_to_comment";

row_struct! {
    /// An outbound message as delivery reads it ([`COLUMNS`]).
    struct Message {
        status: String,
        recipient: String,
        /// The sender: the chatapp number or the photoapp account.
        phone_number_id: Option<String>,
        conversation_id: Option<String>,
        provider_message_id: Option<String>,
        channel: Channel,
        kind: String,
        text: Option<String>,
        media_id: Option<String>,
        reply_to_comment: Option<String>,
    }
}

fn step(job: &Job, message_id: &str) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let Some(m) = db::query_one_as::<Message>(&format!("SELECT {COLUMNS} FROM messages WHERE business_id = ?1 AND id = ?2 AND direction = 'outbound'"), &params![biz, message_id])? else {
        return Ok(Outcome::Done);
    };
    match MessageStatus::parse(&m.status) {
        Some(MessageStatus::Queued) => submit(job, message_id, &m),
        Some(status) if status.is_tracked() => {
            let Some(provider_id) = &m.provider_message_id else { return Ok(Outcome::Dead("a submitted message without a provider id".into())) };
            match messenger::track(provider_id, &m.recipient, status.as_str()) {
                Ok(progress) => {
                    if let Some(report) = progress.report {
                        apply(biz, message_id, &m, &report)?;
                    }
                    Ok(match progress.check_after_ms {
                        Some(delay_ms) => Outcome::Continue(Continuation { delay_ms, payload_json: job.payload_json.clone() }),
                        None => Outcome::Done,
                    })
                }
                // Tracking is best effort: the message keeps its last status.
                Err(e) if e.retryable && job.attempt < MAX_SUBMIT_ATTEMPTS => Ok(retry(job.attempt, format!("provider: {}", e.code))),
                Err(e) => {
                    log::log(log::Level::Warn, &format!("message {message_id}: tracking stopped: {}", e.code));
                    Ok(Outcome::Done)
                }
            }
        }
        _ => Ok(Outcome::Done),
    }
}

fn submit(job: &Job, message_id: &str, m: &Message) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let provider_media_id = match &m.media_id {
        Some(media_id) => db::query_one_as::<String>("SELECT provider_media_id FROM media WHERE business_id = ?1 AND id = ?2", &params![biz, media_id])?,
        None => None,
    };
    let outbound = OutboundMessage {
        message_id: message_id.to_string(),
        channel: m.channel.name().to_string(),
        sender_id: m.phone_number_id.clone().unwrap_or_default(),
        recipient: m.recipient.clone(),
        kind: m.kind.clone(),
        text: m.text.clone(),
        provider_media_id,
        // A photoapp private reply names its comment (private_reply.rs).
        reply_to_comment: m.reply_to_comment.clone(),
    };
    match messenger::submit(&outbound) {
        Ok(provider_id) => {
            db::execute(
                "UPDATE messages SET status = ?5, provider_status = ?5, submitted_at = ?3, provider_message_id = ?4 \
                 WHERE business_id = ?1 AND id = ?2 AND status = ?6",
                &params![biz, message_id, now(), provider_id, MessageStatus::Submitted.as_str(), MessageStatus::Queued.as_str()],
            )?;
            Ok(Outcome::Continue(Continuation { delay_ms: 0, payload_json: job.payload_json.clone() }))
        }
        Err(e) if e.retryable && job.attempt < MAX_SUBMIT_ATTEMPTS => Ok(retry(job.attempt, format!("provider: {}", e.code))),
        Err(e) => {
            let e = if e.retryable {
                ProviderError { code: "provider_unavailable".into(), message: format!("the provider kept failing: {}", e.message), retryable: false, reference: e.reference }
            } else {
                e
            };
            // The delivery event's providerMessageId is a string: the
            // provider's reference of the refused attempt, or the message id
            // the attempt was submitted under when it gave none.
            let reference = e.reference.clone().unwrap_or_else(|| message_id.to_string());
            db::execute("UPDATE messages SET provider_message_id = ?3 WHERE business_id = ?1 AND id = ?2 AND provider_message_id IS NULL", &params![biz, message_id, reference])?;
            let report = StatusReport { status: MessageStatus::Failed.as_str().into(), provider_status: "rejected".into(), failure: Some(e) };
            apply(biz, message_id, m, &report)?;
            Ok(Outcome::Done)
        }
    }
}

/// Stores `report` and emits its delivery event.
fn apply(biz: &str, message_id: &str, m: &Message, report: &StatusReport) -> Result<(), Failure> {
    let Some((to, column)) = MessageStatus::parse(&report.status).and_then(|s| Some((s, s.timestamp_column()?))) else {
        log::log(log::Level::Warn, &format!("message {message_id}: the provider reported an unknown status"));
        return Ok(());
    };
    let now = now();
    let (code, text) = match &report.failure {
        Some(f) => (Some(f.code.as_str()), Some(f.message.as_str())),
        None => (None, None),
    };
    db::execute(
        &format!(
            "UPDATE messages SET status = ?3, provider_status = ?4, {column} = ?5, \
             failure_code = IFNULL(?6, failure_code), failure_message = IFNULL(?7, failure_message) \
             WHERE business_id = ?1 AND id = ?2"
        ),
        &params![biz, message_id, to.as_str(), &report.provider_status, &now, code, text],
    )?;
    let channel = m.channel;
    let Some(event_type) = to.event_type(channel) else { return Ok(()) };
    type Stamps = (Option<String>, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>, Option<String>);
    let (sent_at, delivered_at, read_at, failed_at, failure_code, failure_message, provider_message_id) = db::query_one_as::<Stamps>(
        "SELECT sent_at, delivered_at, read_at, failed_at, failure_code, failure_message, provider_message_id FROM messages WHERE business_id = ?1 AND id = ?2",
        &params![biz, message_id],
    )?
    .expect("message exists");
    let failure = if to == MessageStatus::Failed { json!({"code": failure_code, "message": failure_message}) } else { Value::Null };
    let sender = m.phone_number_id.clone().unwrap_or_default();
    let event_id = format!("{message_id}.{}", to.as_str());
    let mut event = json!({
        "contractVersion": events::CONTRACT_VERSION,
        "eventId": event_id,
        "eventType": event_type,
        "occurredAt": now,
        "businessId": biz,
        "phoneNumberId": sender,
        "channel": channel.name(),
        "conversationId": m.conversation_id,
        "messageId": message_id,
        "providerMessageId": provider_message_id,
        "recipient": {"mobileE164": m.recipient},
        "delivery": {
            "status": to.as_str(),
            "providerStatus": report.provider_status,
            "sentAt": sent_at,
            "deliveredAt": delivered_at,
            "readAt": read_at,
            "failedAt": failed_at,
            "failure": failure,
        },
    });
    if channel == Channel::Photoapp {
        // Our photoapp shape (the contract leaves it open): the account in
        // place of the number, the user id in place of the mobile.
        let o = event.as_object_mut().expect("an object");
        o.shift_remove("phoneNumberId");
        o.insert("providerAccountId".into(), json!(sender));
        o.insert("recipient".into(), json!({"photoappUserId": m.recipient}));
    }
    events::fan_out(biz, channel.name(), &sender, event_type, &event_id, &event)
}
