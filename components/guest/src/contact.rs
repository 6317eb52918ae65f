//! Contacts as every area meets them: the one place a contact is resolved or
//! created by mobile number, and the one place contacts join categories.
//!
//! A contact is resolved by mobile or created (`INSERT … ON CONFLICT
//! (business_id, mobile) DO NOTHING` then `SELECT`, so two messages for a new
//! number never create two contacts). A new contact gets the category named
//! by the caller ("Inbound" for a first inbound message or a participant
//! link, "Outbound" for a first send), reused case-insensitively and created
//! when missing, since every contact has at least one category.

use crate::db;
use crate::{new_id, params, Failure, Value};

/// A resolved contact.
pub struct Contact {
    pub id: String,
    pub name: String,
    pub blocked: bool,
    /// True when this call created it.
    pub created: bool,
}

/// The contact of (`biz`, `mobile`), if any.
pub fn find(biz: &str, mobile: &str) -> Result<Option<Contact>, Failure> {
    Ok(db::query_one_as::<(String, String, bool)>("SELECT id, name, communication_blocked FROM contacts WHERE business_id = ?1 AND mobile = ?2", &params![biz, mobile])?
        .map(|(id, name, blocked)| Contact { id, name, blocked, created: false }))
}

/// True when communication with contact `id` is blocked.
pub fn blocked(biz: &str, id: &str) -> Result<bool, Failure> {
    Ok(db::query_one_as::<bool>("SELECT communication_blocked FROM contacts WHERE business_id = ?1 AND id = ?2", &params![biz, id])?.unwrap_or(false))
}

/// The contact of (`biz`, `mobile`), created with `name` and `category` when missing.
pub fn resolve(biz: &str, mobile: &str, name: &str, category: &str, now: &str) -> Result<Contact, Failure> {
    let created = db::execute(
        "INSERT INTO contacts (id, business_id, mobile, name, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5) \
         ON CONFLICT (business_id, mobile) DO NOTHING",
        &params![new_id(), biz, mobile, name, now],
    )?;
    let mut contact = find(biz, mobile)?.expect("contact exists after insert");
    if created > 0 {
        contact.created = true;
        let category = category_id(biz, category, now)?;
        link_categories(biz, &contact.id, &[category])?;
    }
    Ok(contact)
}

/// The business's category `name` (any case), created when missing.
pub fn category_id(biz: &str, name: &str, now: &str) -> Result<String, Failure> {
    let find = || db::query_one_as::<String>("SELECT id FROM categories WHERE business_id = ?1 AND name = ?2 COLLATE NOCASE ORDER BY id LIMIT 1", &params![biz, name]);
    if let Some(id) = find()? {
        return Ok(id);
    }
    db::execute("INSERT INTO categories (id, business_id, name, created_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING", &params![new_id(), biz, name, now])?;
    Ok(find()?.expect("category exists after insert"))
}

/// Adds contact `contact_id` to each category (ids of this business, already
/// checked); a link that exists is kept.
pub fn link_categories(biz: &str, contact_id: &str, category_ids: &[String]) -> Result<(), Failure> {
    let rows: Vec<Vec<Value>> = category_ids.iter().map(|k| params![biz, contact_id, k]).collect();
    db::execute_many("INSERT OR IGNORE INTO contact_categories (business_id, contact_id, category_id) VALUES (?1, ?2, ?3)", &rows)?;
    Ok(())
}

/// Adds the contacts with `mobiles` to each category (ids of this business,
/// already checked), in one statement; links that exist are kept.
pub fn link_categories_by_mobile(biz: &str, mobiles: &[String], category_ids: &[String]) -> Result<(), Failure> {
    if mobiles.is_empty() || category_ids.is_empty() {
        return Ok(());
    }
    let mut params: Vec<Value> = Vec::with_capacity(1 + mobiles.len() + category_ids.len());
    params.push(biz.into());
    params.extend(mobiles.iter().map(|m| Value::from(m.as_str())));
    params.extend(category_ids.iter().map(|k| Value::from(k.as_str())));
    let mobiles_ph = db::placeholders(2, mobiles.len());
    let cats_ph = db::placeholders(2 + mobiles.len(), category_ids.len());
    db::execute(
        &format!(
            "INSERT OR IGNORE INTO contact_categories (business_id, contact_id, category_id) \
             SELECT ?1, c.id, k.id FROM contacts c, categories k \
             WHERE c.business_id = ?1 AND c.mobile IN ({mobiles_ph}) AND k.business_id = ?1 AND k.id IN ({cats_ph})"
        ),
        &params,
    )?;
    Ok(())
}
