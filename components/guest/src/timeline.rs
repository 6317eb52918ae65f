//! The one place an entry is appended to a contact's cross-channel timeline
//! (`timeline_entries`): inbound and outbound messages (messaging) and the
//! entries a participant link writes for earlier messages (contacts), and
//! ended calls (voice).

use crate::{db, new_id, params, Failure};

/// Appends a message's entry (`kind` `message`) to the contact's timeline.
pub fn append_message(biz: &str, contact_id: &str, channel: &str, direction: &str, occurred_at: &str, summary: &serde_json::Value) -> Result<(), Failure> {
    db::execute(
        "INSERT INTO timeline_entries (id, business_id, contact_id, channel, kind, direction, occurred_at, summary_json) \
         VALUES (?1, ?2, ?3, ?4, 'message', ?5, ?6, ?7)",
        &params![new_id(), biz, contact_id, channel, direction, occurred_at, summary.to_string()],
    )?;
    Ok(())
}

/// Appends a call's entry (`kind` `call`, channel `voice`, outbound).
pub fn append_call(biz: &str, contact_id: &str, occurred_at: &str, campaign_id: Option<&str>, summary: &serde_json::Value) -> Result<(), Failure> {
    db::execute(
        "INSERT INTO timeline_entries (id, business_id, contact_id, channel, kind, direction, occurred_at, campaign_id, summary_json) \
         VALUES (?1, ?2, ?3, 'voice', 'call', 'outbound', ?4, ?5, ?6)",
        &params![new_id(), biz, contact_id, occurred_at, campaign_id, summary.to_string()],
    )?;
    Ok(())
}
