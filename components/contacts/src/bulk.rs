//! Acting on many contacts at once: updateContacts (ours) and the
//! `matching` form of deleteContacts.
//!
//! A selection is either listed ids (`contactIds`, at most 1000; ids not in
//! the business are not counted) or every contact matching the list's
//! filters (`matching`: `search`, `name`, `categoryId`, as listContacts
//! takes them) with the `count` the caller saw (listContacts'
//! `includeTotal`). When another number matches now, nothing is written
//! (`409 contacts_changed`, the number that matches in the message), so a
//! person acts on the contacts they were shown, never on ones created
//! since. At most [`MAX_MATCHED`] contacts per request (`409
//! too_many_contacts`): the whole change is one statement each, in the
//! request's own write transaction, so it is all or nothing and an
//! `Idempotency-Key` replays its answer.

use serde::Deserialize;
use serde_json::json;
use switchboard_guest::db;
use switchboard_guest::{fail, now, ok, params, req, HResult, Request, Success, Value};

use crate::contacts::Filters;
use crate::model;

/// The most contacts one request changes or deletes (an import's size).
pub const MAX_MATCHED: usize = 100_000;

/// `matching`: the list's filters and how many contacts the caller saw match.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Matching {
    search: Option<String>,
    name: Option<String>,
    category_id: Option<String>,
    /// JSON Schema's integer: `840.0` is one too (the schema bounds it).
    count: f64,
}

/// The ids of the contacts `matching` selects, in id order, once the count
/// is the one the caller saw and within the bound.
pub fn matched_ids(biz: &str, m: &Matching) -> HResult<Vec<String>> {
    if let Some(c) = &m.category_id {
        if !switchboard_guest::is_uuid(c) {
            return Err(model::category_not_found(c));
        }
    }
    let filters = Filters::new(m.search.as_deref(), m.name.as_deref(), m.category_id.as_deref())?;
    let (from, params) = filters.selection(biz)?;
    // One more than the bound is enough to refuse.
    let rows: Vec<String> = db::query_as(&format!("SELECT c.id {from} ORDER BY c.id LIMIT {}", MAX_MATCHED + 1), &params)?;
    if rows.len() > MAX_MATCHED {
        return Err(fail::conflict("too_many_contacts", format!("more than {MAX_MATCHED} contacts match; narrow `matching` (a category, a name or a mobile) and act on each part")));
    }
    if rows.len() as f64 != m.count {
        return Err(fail::conflict(
            "contacts_changed",
            format!("{} contacts match now, not the {} of `matching.count`; nothing was changed. List them again and send the new count", rows.len(), m.count),
        ));
    }
    Ok(rows)
}

/// The ids of `ids` that are contacts of `biz` (lower-cased, each once).
fn existing_ids(biz: &str, ids: &[String]) -> HResult<Vec<String>> {
    if ids.is_empty() || ids.len() > 1000 {
        return Err(fail::validation("invalid_contact_ids", "`contactIds` must contain 1 to 1000 contact ids"));
    }
    let list = serde_json::to_string(&ids.iter().map(|i| i.to_ascii_lowercase()).collect::<Vec<_>>()).unwrap_or_default();
    db::query_as("SELECT c.id FROM contacts c WHERE c.business_id = ?1 AND c.id IN (SELECT value FROM json_each(?2)) ORDER BY c.id", &params![biz, list])
}

/// Deletes these contacts of `biz` with their category links and timeline
/// entries; answers how many.
pub fn delete_ids(biz: &str, ids: &[String]) -> HResult<u64> {
    let list: Value = serde_json::to_string(ids).unwrap_or_default().into();
    let p = params![biz, list];
    const IDS: &str = "SELECT value FROM json_each(?2)";
    db::execute(&format!("DELETE FROM contact_categories WHERE business_id = ?1 AND contact_id IN ({IDS})"), &p)?;
    db::execute(&format!("DELETE FROM timeline_entries WHERE business_id = ?1 AND contact_id IN ({IDS})"), &p)?;
    db::execute(&format!("DELETE FROM contacts WHERE business_id = ?1 AND id IN ({IDS})"), &p)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    contact_ids: Option<Vec<String>>,
    matching: Option<Matching>,
    add_category_ids: Option<Vec<String>>,
    communication_blocked: Option<bool>,
}

/// updateContacts: adds the selected contacts to categories and/or blocks
/// or unblocks them. Answers `matched` (the contacts selected) and
/// `updated` (those that changed: a contact already in every category and
/// in that state is not counted).
pub fn update(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: UpdateBody = req::body(req)?;
    if body.add_category_ids.is_none() && body.communication_blocked.is_none() {
        return Err(fail::validation("empty_update", "give at least one of `addCategoryIds`, `communicationBlocked`"));
    }
    let categories = body.add_category_ids.as_deref().map(|ids| model::resolve_categories(biz, ids)).transpose()?.unwrap_or_default();
    let ids = match (&body.contact_ids, &body.matching) {
        (Some(ids), None) => existing_ids(biz, ids)?,
        (None, Some(m)) => matched_ids(biz, m)?,
        _ => return Err(fail::validation("invalid_body", "give exactly one of `contactIds` or `matching`")),
    };
    let list: Value = serde_json::to_string(&ids).unwrap_or_default().into();
    let cats: Value = serde_json::to_string(&categories).unwrap_or_default().into();
    // The changed contacts first (their categories are read before any is
    // added), then the links.
    let (set_blocked, blocked_differs) = match body.communication_blocked {
        Some(b) => (format!(", communication_blocked = {}", b as i64), format!("communication_blocked <> {}", b as i64)),
        None => (String::new(), "0".to_string()),
    };
    let updated = db::execute(
        &format!(
            "UPDATE contacts SET updated_at = ?4{set_blocked} \
             WHERE business_id = ?1 AND id IN (SELECT value FROM json_each(?2)) \
               AND ({blocked_differs} OR EXISTS (SELECT 1 FROM json_each(?3) k \
                    WHERE NOT EXISTS (SELECT 1 FROM contact_categories cc WHERE cc.contact_id = contacts.id AND cc.category_id = k.value)))"
        ),
        &params![biz, &list, &cats, now()],
    )?;
    if !categories.is_empty() {
        db::execute(
            "INSERT OR IGNORE INTO contact_categories (business_id, contact_id, category_id) \
             SELECT ?1, i.value, k.value FROM json_each(?2) i, json_each(?3) k",
            &params![biz, list, cats],
        )?;
    }
    ok(&json!({"matched": ids.len(), "updated": updated}))
}
