//! The one place a message finds its conversation and is stored: inbound
//! messages (the jobs `messaging.inbound` and `messaging.photoapp-inbound`)
//! and the one place an outbound message is queued (`queue_outbound`: API
//! sends and auto-replies). The contact itself is resolved or created by
//! the shared library (`switchboard_guest::contact`), the timeline entry
//! appended by `switchboard_guest::timeline`.

use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::job_kinds::messaging::{MessageRef, MessagingJob};
use switchboard_guest::{job, new_id, params, timeline, Failure};

/// An outbound message to queue.
pub struct Outbound<'a> {
    pub business: &'a str,
    /// Chatapp or photoapp.
    pub channel: Channel,
    pub conversation_id: &'a str,
    /// None for a photoapp participant not linked to a contact (no timeline).
    pub contact_id: Option<&'a str>,
    /// The sender: the chatapp phone number id or the photoapp account id.
    pub phone_number_id: &'a str,
    /// E.164, or the photoapp user id.
    pub recipient: &'a str,
    /// `text` or `image`.
    pub kind: &'a str,
    pub text: Option<String>,
    pub media_id: Option<String>,
    pub now: &'a str,
}

/// Stores a queued outbound message, its timeline entry (when it has a
/// contact) and its `messaging.deliver` job (in the caller's transaction). Returns
/// (message id, task ref, correlation id).
pub fn queue_outbound(m: &Outbound) -> Result<(String, String, String), Failure> {
    queue(m, None)
}

/// Who sent an outbound message (`messages.sender_kind`, `sender_id`; a
/// campaign's opening is marked by a trigger of migration 0038 when its
/// membership names the message).
pub enum Sender<'a> {
    /// The AI agent (its id).
    Agent(&'a str),
    /// A console user (their id).
    Person(&'a str),
    /// An API key (no person behind it).
    Api,
}

impl<'a> Sender<'a> {
    /// A request's sender: the console user behind a session, else the key.
    pub fn of(caller: Option<&'a str>) -> Sender<'a> {
        caller.map_or(Sender::Api, Sender::Person)
    }
}

/// Records who sent `message_id` (in the caller's transaction).
pub fn record_sender(biz: &str, message_id: &str, sender: &Sender) -> Result<(), Failure> {
    let (kind, id) = match sender {
        Sender::Agent(id) => ("agent", Some(*id)),
        Sender::Person(id) => ("person", Some(*id)),
        Sender::Api => ("api", None),
    };
    db::execute("UPDATE messages SET sender_kind = ?3, sender_id = ?4 WHERE business_id = ?1 AND id = ?2", &[biz.into(), message_id.into(), kind.into(), id.into()])?;
    Ok(())
}

/// A comment a photoapp message answers privately: (our id, the provider's).
pub struct PrivateReplyTo<'a> {
    pub comment_id: &'a str,
    pub provider_comment_id: &'a str,
}

/// [`queue_outbound`] for a photoapp private reply: the delivery names the
/// comment (`reply_to_comment`) and the timeline entry says which.
pub fn queue_private_reply(m: &Outbound, to: &PrivateReplyTo) -> Result<(String, String, String), Failure> {
    queue(m, Some(to))
}

fn queue(m: &Outbound, reply_to: Option<&PrivateReplyTo>) -> Result<(String, String, String), Failure> {
    let (message_id, correlation_id) = (new_id(), new_id());
    let task_ref = job::enqueue(m.business, &MessagingJob::Deliver(MessageRef { message_id: message_id.clone() }))?;
    db::execute(
        "INSERT INTO messages (id, business_id, conversation_id, contact_id, channel, direction, type, text, status, created_at, \
         phone_number_id, recipient, media_id, task_ref, correlation_id, queued_at, reply_to_comment) \
         VALUES (?1, ?2, ?3, ?4, ?13, 'outbound', ?5, ?6, 'queued', ?7, ?8, ?9, ?10, ?11, ?12, ?7, ?14)",
        &[
            message_id.as_str().into(),
            m.business.into(),
            m.conversation_id.into(),
            m.contact_id.into(),
            m.kind.into(),
            m.text.clone().into(),
            m.now.into(),
            m.phone_number_id.into(),
            m.recipient.into(),
            m.media_id.clone().into(),
            task_ref.as_str().into(),
            correlation_id.as_str().into(),
            m.channel.into(),
            reply_to.map(|r| r.provider_comment_id).into(),
        ],
    )?;
    if let Some(contact_id) = m.contact_id {
        let mut summary = serde_json::json!({"messageId": message_id, "type": m.kind, "text": m.text, "mediaId": m.media_id});
        if let Some(r) = reply_to {
            summary["privateReplyTo"] = r.comment_id.into();
        }
        timeline::append_message(m.business, contact_id, m.channel.name(), "outbound", m.now, &summary)?;
    }
    Ok((message_id, task_ref, correlation_id))
}

/// True when the provider message was stored already (a redelivery).
pub fn already_stored(biz: &str, provider_message_id: &str) -> Result<bool, Failure> {
    Ok(db::query_one("SELECT 1 FROM messages WHERE business_id = ?1 AND provider_message_id = ?2", &[biz.into(), provider_message_id.into()])?.is_some())
}

/// An inbound text message to store.
pub struct InboundText<'a> {
    pub business: &'a str,
    pub channel: Channel,
    pub conversation_id: &'a str,
    /// None for a photoapp participant not linked to a contact (no timeline).
    pub contact_id: Option<&'a str>,
    pub text: &'a str,
    pub provider_message_id: &'a str,
    pub now: &'a str,
}

/// Stores an inbound text message (status `received`) and its timeline
/// entry; `None` when the provider message id was stored already (the
/// unique key guards a redelivery racing this one).
pub fn store_inbound(m: &InboundText) -> Result<Option<String>, Failure> {
    let message_id = new_id();
    let inserted = db::execute(
        "INSERT INTO messages (id, business_id, conversation_id, contact_id, channel, direction, type, text, provider_message_id, status, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'inbound', 'text', ?6, ?7, 'received', ?8) ON CONFLICT (business_id, provider_message_id) DO NOTHING",
        &[message_id.as_str().into(), m.business.into(), m.conversation_id.into(), m.contact_id.into(), m.channel.into(), m.text.into(), m.provider_message_id.into(), m.now.into()],
    )?;
    if inserted == 0 {
        return Ok(None);
    }
    if let Some(contact_id) = m.contact_id {
        timeline::append_message(m.business, contact_id, m.channel.name(), "inbound", m.now, &serde_json::json!({"messageId": message_id, "text": m.text}))?;
    }
    Ok(Some(message_id))
}

/// A photoapp conversation: (conversation id, linked contact id).
pub struct Participant {
    pub conversation_id: String,
    pub contact_id: Option<String>,
    /// The user's handle, as last seen (read by the inbound job).
    pub name: Option<String>,
}

/// The conversation of photoapp user `participant` with `account`, if the
/// user has written (only then may the business send).
pub fn photoapp_participant(biz: &str, account: &str, participant: &str) -> Result<Option<Participant>, Failure> {
    Ok(db::query_one_as::<(String, Option<String>, Option<String>)>(
        "SELECT id, contact_id, participant_name FROM conversations \
         WHERE business_id = ?1 AND channel = 'photoapp' AND provider_account_id = ?2 AND participant_id = ?3",
        &params![biz, account, participant],
    )?
    .map(|(conversation_id, contact_id, name)| Participant { conversation_id, contact_id, name }))
}

/// The conversation of photoapp user `participant` with `account`, started
/// when missing (a participant without a contact: a first direct message, a
/// comment or a referral), its handle refreshed when the provider sends one.
pub fn start_photoapp_participant(biz: &str, account: &str, participant: &str, name: Option<&str>, now: &str) -> Result<Participant, Failure> {
    db::execute(
        "INSERT INTO conversations (id, business_id, contact_id, channel, provider_account_id, participant_id, participant_name, created_at) \
         VALUES (?1, ?2, NULL, 'photoapp', ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
        &[new_id().into(), biz.into(), account.into(), participant.into(), name.into(), now.into()],
    )?;
    if name.is_some() {
        db::execute(
            "UPDATE conversations SET participant_name = ?4 WHERE business_id = ?1 AND channel = 'photoapp' AND provider_account_id = ?2 AND participant_id = ?3",
            &[biz.into(), account.into(), participant.into(), name.into()],
        )?;
    }
    Ok(photoapp_participant(biz, account, participant)?.expect("conversation exists after insert"))
}

/// The chatapp conversation of (business, phone number, contact), created when missing.
pub fn conversation(biz: &str, phone_number_id: &str, contact_id: &str, now: &str) -> Result<String, Failure> {
    db::execute(
        "INSERT INTO conversations (id, business_id, contact_id, channel, phone_number_id, created_at) \
         VALUES (?1, ?2, ?3, 'chatapp', ?4, ?5) ON CONFLICT (business_id, channel, phone_number_id, contact_id) DO NOTHING",
        &[new_id().into(), biz.into(), contact_id.into(), phone_number_id.into(), now.into()],
    )?;
    Ok(db::query_one_as::<String>(
        "SELECT id FROM conversations WHERE business_id = ?1 AND channel = 'chatapp' AND phone_number_id = ?2 AND contact_id = ?3",
        &params![biz, phone_number_id, contact_id],
    )?
    .expect("conversation exists after insert"))
}
