//! The one place a message finds its contact and conversation, for
//! inbound messages (dispatcher `messaging.inbound`, which includes this file
//! by path) and outbound sends (`sendMessage`), and the one place an
//! outbound message is queued (`queue_outbound`: API sends and auto-replies).
//!
//! The contact is resolved by mobile or created (`INSERT … ON CONFLICT
//! (business_id, mobile) DO NOTHING` then `SELECT`, so two messages for a new
//! number never create two contacts). A new contact gets the category named
//! by the caller ("Inbound" for a first inbound message, "Outbound" for a
//! first send), reused case-insensitively and created when missing, since
//! every contact has at least one category.

use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{jobs, new_id, Failure};

/// The job that moves a queued message through the messenger.
pub const DELIVER_KIND: &str = "messaging.deliver";

/// An outbound message to queue.
pub struct Outbound<'a> {
    pub business: &'a str,
    /// `chatapp` or `photoapp`.
    pub channel: &'a str,
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
    let (message_id, correlation_id) = (new_id(), new_id());
    let job = serde_json::json!({"messageId": message_id});
    let task_ref = jobs::enqueue(DELIVER_KIND, m.business, &job.to_string(), &jobs::JobOptions { calls_out: true, lane: None, delay_ms: 0 }).map_err(db::store_failure)?;
    db::execute(
        "INSERT INTO messages (id, business_id, conversation_id, contact_id, channel, direction, type, text, status, created_at, \
         phone_number_id, recipient, media_id, task_ref, correlation_id, queued_at) \
         VALUES (?1, ?2, ?3, ?4, ?13, 'outbound', ?5, ?6, 'queued', ?7, ?8, ?9, ?10, ?11, ?12, ?7)",
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
        ],
    )?;
    if let Some(contact_id) = m.contact_id {
        let summary = serde_json::json!({"messageId": message_id, "type": m.kind, "text": m.text, "mediaId": m.media_id});
        timeline(m.business, contact_id, m.channel, "outbound", m.now, &summary)?;
    }
    Ok((message_id, task_ref, correlation_id))
}

/// True when the provider message was stored already (a redelivery).
// Used by the dispatcher's inbound jobs, which include this file by path.
#[allow(dead_code)]
pub fn already_stored(biz: &str, provider_message_id: &str) -> Result<bool, Failure> {
    Ok(db::query_one("SELECT 1 FROM messages WHERE business_id = ?1 AND provider_message_id = ?2", &[biz.into(), provider_message_id.into()])?.is_some())
}

/// An inbound text message to store.
#[allow(dead_code)]
pub struct InboundText<'a> {
    pub business: &'a str,
    pub channel: &'a str,
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
#[allow(dead_code)]
pub fn store_inbound(m: &InboundText) -> Result<Option<String>, Failure> {
    let message_id = new_id();
    let inserted = db::execute(
        "INSERT INTO messages (id, business_id, conversation_id, contact_id, channel, direction, type, text, provider_message_id, status, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'inbound', 'text', ?6, ?7, 'received', ?8) ON CONFLICT (business_id, provider_message_id) DO NOTHING",
        &[
            message_id.as_str().into(),
            m.business.into(),
            m.conversation_id.into(),
            m.contact_id.into(),
            m.channel.into(),
            m.text.into(),
            m.provider_message_id.into(),
            m.now.into(),
        ],
    )?;
    if inserted == 0 {
        return Ok(None);
    }
    if let Some(contact_id) = m.contact_id {
        timeline(m.business, contact_id, m.channel, "inbound", m.now, &serde_json::json!({"messageId": message_id, "text": m.text}))?;
    }
    Ok(Some(message_id))
}

/// Appends a message's entry to the contact's cross-channel timeline.
pub fn timeline(biz: &str, contact_id: &str, channel: &str, direction: &str, now: &str, summary: &serde_json::Value) -> Result<(), Failure> {
    db::execute(
        "INSERT INTO timeline_entries (id, business_id, contact_id, channel, kind, direction, occurred_at, summary_json) \
         VALUES (?1, ?2, ?3, ?4, 'message', ?5, ?6, ?7)",
        &[new_id().into(), biz.into(), contact_id.into(), channel.into(), direction.into(), now.into(), summary.to_string().into()],
    )?;
    Ok(())
}

/// A photoapp conversation: (conversation id, linked contact id).
pub struct Participant {
    pub conversation_id: String,
    pub contact_id: Option<String>,
    /// The user's handle, as last seen (read by the inbound job).
    #[allow(dead_code)]
    pub name: Option<String>,
}

/// The conversation of photoapp user `participant` with `account`, if the
/// user has written (only then may the business send).
pub fn photoapp_participant(biz: &str, account: &str, participant: &str) -> Result<Option<Participant>, Failure> {
    Ok(db::query_one(
        "SELECT id, contact_id, participant_name FROM conversations \
         WHERE business_id = ?1 AND channel = 'photoapp' AND provider_account_id = ?2 AND participant_id = ?3",
        &[biz.into(), account.into(), participant.into()],
    )?
    .map(|r| Participant { conversation_id: r.text(0), contact_id: r.opt_text(1), name: r.opt_text(2) }))
}

/// A resolved contact.
pub struct Contact {
    pub id: String,
    pub name: String,
    // Read by sendMessage; the dispatcher includes this file without it.
    #[allow(dead_code)]
    pub blocked: bool,
    /// True when this call created it.
    pub created: bool,
}

/// True when communication with contact `id` is blocked.
// Read by sendMessage; the dispatcher includes this file without it.
#[allow(dead_code)]
pub fn blocked(biz: &str, id: &str) -> Result<bool, Failure> {
    Ok(db::query_one("SELECT communication_blocked FROM contacts WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.into()])?
        .is_some_and(|r| r.boolean(0)))
}

/// The contact of (`biz`, `mobile`), if any.
pub fn find(biz: &str, mobile: &str) -> Result<Option<Contact>, Failure> {
    Ok(db::query_one("SELECT id, name, communication_blocked FROM contacts WHERE business_id = ?1 AND mobile = ?2", &[biz.into(), mobile.into()])?
        .map(|r| Contact { id: r.text(0), name: r.text(1), blocked: r.boolean(2), created: false }))
}

/// The contact of (`biz`, `mobile`), created with `name` and `category` when missing.
pub fn resolve(biz: &str, mobile: &str, name: &str, category: &str, now: &str) -> Result<Contact, Failure> {
    let created = db::execute(
        "INSERT INTO contacts (id, business_id, mobile, name, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5) \
         ON CONFLICT (business_id, mobile) DO NOTHING",
        &[new_id().into(), biz.into(), mobile.into(), name.into(), now.into()],
    )?;
    let mut contact = find(biz, mobile)?.expect("contact exists after insert");
    if created > 0 {
        contact.created = true;
        let category = category_id(biz, category, now)?;
        db::execute(
            "INSERT OR IGNORE INTO contact_categories (business_id, contact_id, category_id) VALUES (?1, ?2, ?3)",
            &[biz.into(), contact.id.as_str().into(), category.into()],
        )?;
    }
    Ok(contact)
}

/// The chatapp conversation of (business, phone number, contact), created when missing.
pub fn conversation(biz: &str, phone_number_id: &str, contact_id: &str, now: &str) -> Result<String, Failure> {
    db::execute(
        "INSERT INTO conversations (id, business_id, contact_id, channel, phone_number_id, created_at) \
         VALUES (?1, ?2, ?3, 'chatapp', ?4, ?5) ON CONFLICT (business_id, channel, phone_number_id, contact_id) DO NOTHING",
        &[new_id().into(), biz.into(), contact_id.into(), phone_number_id.into(), now.into()],
    )?;
    Ok(db::query_one(
        "SELECT id FROM conversations WHERE business_id = ?1 AND channel = 'chatapp' AND phone_number_id = ?2 AND contact_id = ?3",
        &[biz.into(), phone_number_id.into(), contact_id.into()],
    )?
    .expect("conversation exists after insert")
    .text(0))
}

/// The business's category `name` (any case), created when missing.
fn category_id(biz: &str, name: &str, now: &str) -> Result<String, Failure> {
    let find = || db::query_one("SELECT id FROM categories WHERE business_id = ?1 AND name = ?2 COLLATE NOCASE ORDER BY id LIMIT 1", &[biz.into(), name.into()]);
    if let Some(r) = find()? {
        return Ok(r.text(0));
    }
    db::execute(
        "INSERT INTO categories (id, business_id, name, created_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        &[new_id().into(), biz.into(), name.into(), now.into()],
    )?;
    Ok(find()?.expect("category exists after insert").text(0))
}
