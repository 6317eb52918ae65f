//! Loading and rendering contacts and categories, shared by the operations.

use std::collections::HashMap;
use switchboard_guest::row_struct;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value as J};
use switchboard_channel_connections::Channel;
use switchboard_guest::db::{self};
use switchboard_guest::{fail, is_uuid, params, Failure, HResult, Value};

use crate::fields::{self, Violation};

/// Columns of a contact row, in the order [`ContactRow`] reads them.
pub const CONTACT_COLS: &str = "c.id, c.mobile, c.name, c.fields_json, c.communication_blocked, c.created_at, c.updated_at";

row_struct! {
    /// A contact row, selected with [`CONTACT_COLS`].
    pub struct ContactRow {
        pub id: String,
        pub mobile: String,
        pub name: String,
        fields_json: String,
        communication_blocked: bool,
        created_at: String,
        updated_at: String,
    }
}

pub fn violation(v: Violation) -> Failure {
    fail::validation(v.0, v.1)
}

pub fn contact_not_found() -> Failure {
    fail::not_found("contact_not_found", "contact not found")
}

pub fn category_not_found(id: &str) -> Failure {
    fail::not_found("category_not_found", format!("category `{}` not found", fields::truncate(id, 64)))
}

/// `[biz, ids...]` as parameters, with the `?2..` placeholder list for the ids.
pub fn in_params<S: AsRef<str>>(biz: &str, ids: &[S]) -> (Vec<Value>, String) {
    let mut params: Vec<Value> = Vec::with_capacity(ids.len() + 1);
    params.push(Value::from(biz));
    params.extend(ids.iter().map(|s| Value::from(s.as_ref())));
    (params, db::placeholders(2, ids.len()))
}

/// Parses stored `fields_json` (always an object; anything else reads as `{}`).
pub fn parse_fields(text: &str) -> Map<String, J> {
    match serde_json::from_str::<J>(text) {
        Ok(J::Object(m)) => m,
        _ => Map::new(),
    }
}

/// A contact as every operation answers it. Serialised straight to text:
/// a list page is built without an intermediate `serde_json::Value` tree.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContactView {
    id: String,
    mobile: String,
    name: String,
    /// The stored `fields_json`, embedded as it is (always an object).
    fields: Box<RawValue>,
    communication_blocked: bool,
    categories: Vec<CategoryRef>,
    activity: Activity,
    created_at: String,
    updated_at: String,
}

#[derive(Serialize)]
struct CategoryRef {
    id: String,
    name: String,
}

/// A contact's `activity` rollup: one entry per conversational channel.
#[derive(Serialize, Default)]
struct Activity {
    chatapp: ChannelActivity,
    photoapp: ChannelActivity,
    voice: ChannelActivity,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct ChannelActivity {
    count: i64,
    last_activity_at: Option<String>,
}

impl Activity {
    fn channel(&mut self, channel: Channel) -> Option<&mut ChannelActivity> {
        match channel {
            Channel::Chatapp => Some(&mut self.chatapp),
            Channel::Photoapp => Some(&mut self.photoapp),
            Channel::Voice => Some(&mut self.voice),
            Channel::Sms | Channel::Other => None,
        }
    }
}

/// Stored `fields_json` as an embeddable object (anything else reads as `{}`).
fn fields_object(text: String) -> Box<RawValue> {
    if text.trim_start().starts_with('{') {
        if let Ok(raw) = RawValue::from_string(text) {
            return raw;
        }
    }
    RawValue::from_string("{}".into()).expect("valid JSON")
}

/// Renders contact rows (selected with [`CONTACT_COLS`]) with their categories
/// and activity rollups: one query for the categories of all rows and one for
/// their activity, whatever the number of rows.
pub fn render_contacts(biz: &str, rows: Vec<ContactRow>) -> HResult<Vec<ContactView>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let (params, ph) = in_params(biz, &ids);

    let mut categories: HashMap<String, Vec<CategoryRef>> = HashMap::with_capacity(rows.len());
    for (contact, id, name) in db::query_as::<(String, String, String)>(
        &format!(
            "SELECT cc.contact_id, k.id, k.name FROM contact_categories cc \
             JOIN categories k ON k.id = cc.category_id AND k.business_id = ?1 \
             WHERE cc.business_id = ?1 AND cc.contact_id IN ({ph}) \
             ORDER BY k.name COLLATE NOCASE, k.id"
        ),
        &params,
    )? {
        categories.entry(contact).or_default().push(CategoryRef { id, name });
    }

    let mut activity: HashMap<String, Activity> = HashMap::new();
    for (contact, channel, count, last_activity_at) in db::query_as::<(String, Channel, i64, Option<String>)>(
        &format!(
            "SELECT contact_id, channel, COUNT(*), MAX(occurred_at) FROM timeline_entries \
             WHERE business_id = ?1 AND contact_id IN ({ph}) AND channel IN ('chatapp', 'photoapp', 'voice') \
             GROUP BY contact_id, channel"
        ),
        &params,
    )? {
        if let Some(ch) = activity.entry(contact).or_default().channel(channel) {
            *ch = ChannelActivity { count, last_activity_at };
        }
    }

    Ok(rows
        .into_iter()
        .map(|r| ContactView {
            mobile: r.mobile,
            name: r.name,
            fields: fields_object(r.fields_json),
            communication_blocked: r.communication_blocked,
            categories: categories.remove(&r.id).unwrap_or_default(),
            activity: activity.remove(&r.id).unwrap_or_default(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            id: r.id,
        })
        .collect())
}

/// One contact of this business, rendered; `None` if there is none.
pub fn load_contact(biz: &str, id: &str) -> HResult<Option<ContactView>> {
    let rows = db::query_as::<ContactRow>(&format!("SELECT {CONTACT_COLS} FROM contacts c WHERE c.business_id = ?1 AND c.id = ?2"), &params![biz, id])?;
    Ok(render_contacts(biz, rows)?.into_iter().next())
}

/// A contact just inserted with these values, as [`load_contact`] would
/// read it back, without reading it: its categories (id, name) in the
/// order `render_contacts` selects them (`ORDER BY k.name COLLATE NOCASE,
/// k.id`: the name with ASCII letters folded, byte by byte, then the id),
/// and no activity (no timeline entry can name an id just made). A create
/// answers with it: three statements fewer under the write transaction.
pub fn inserted_contact(id: String, mobile: String, name: String, fields_json: String, communication_blocked: bool, now: String, mut categories: Vec<(String, String)>) -> ContactView {
    categories.sort_by(|a, b| a.1.to_ascii_lowercase().cmp(&b.1.to_ascii_lowercase()).then_with(|| a.0.cmp(&b.0)));
    ContactView {
        id,
        mobile,
        name,
        fields: fields_object(fields_json),
        communication_blocked,
        categories: categories.into_iter().map(|(id, name)| CategoryRef { id, name }).collect(),
        activity: Activity::default(),
        created_at: now.clone(),
        updated_at: now,
    }
}

/// Checks a `categoryIds` list (1..=50 entries) and that every id is a
/// category of this business. Returns the ids without duplicates, in order.
/// A category of another business is indistinguishable from a missing one.
pub fn resolve_categories(biz: &str, ids: &[String]) -> HResult<Vec<String>> {
    Ok(resolve_named_categories(biz, ids)?.into_iter().map(|(id, _)| id).collect())
}

/// [`resolve_categories`] with each category's name: (id, name).
pub fn resolve_named_categories(biz: &str, ids: &[String]) -> HResult<Vec<(String, String)>> {
    if ids.is_empty() {
        return Err(fail::validation("invalid_category_ids", "`categoryIds` must contain at least one category id (a contact always belongs to a category)"));
    }
    let mut unique: Vec<String> = Vec::with_capacity(ids.len());
    for id in ids {
        if !unique.contains(id) {
            unique.push(id.clone());
        }
    }
    if unique.len() > 50 {
        return Err(fail::validation("invalid_category_ids", "`categoryIds` may contain at most 50 category ids"));
    }
    if let Some(bad) = unique.iter().find(|id| !is_uuid(id)) {
        return Err(category_not_found(bad));
    }
    let (params, ph) = in_params(biz, &unique);
    let found: Vec<(String, String)> = db::query_as(&format!("SELECT id, name FROM categories WHERE business_id = ?1 AND id IN ({ph})"), &params)?;
    let mut named = Vec::with_capacity(unique.len());
    for id in unique {
        match found.iter().find(|(f, _)| *f == id) {
            Some((_, name)) => named.push((id, name.clone())),
            None => return Err(category_not_found(&id)),
        }
    }
    Ok(named)
}

/// Adds `contact_id` to each category (already resolved) of this business.
pub use switchboard_guest::contact::link_categories;

/// Records custom field keys in the business's key registry (`contact_fields`).
pub fn register_field_keys<'a>(biz: &str, keys: impl Iterator<Item = &'a String>, now: &str) -> HResult<()> {
    let rows: Vec<Vec<Value>> = keys.map(|k| params![biz, k, now]).collect();
    db::execute_many("INSERT OR IGNORE INTO contact_fields (business_id, field_key, created_at) VALUES (?1, ?2, ?3)", &rows)?;
    Ok(())
}

/// A category row: (id, name, created_at), selected with [`CATEGORY_COLS`].
pub type CategoryRow = (String, String, String);

/// A category as listed: `{id, name, contactCount, createdAt}`.
pub fn render_categories(biz: &str, rows: Vec<CategoryRow>) -> HResult<Vec<J>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    let (params, ph) = in_params(biz, &ids);
    let counts: HashMap<String, i64> =
        db::query_as::<(String, i64)>(&format!("SELECT category_id, COUNT(*) FROM contact_categories WHERE business_id = ?1 AND category_id IN ({ph}) GROUP BY category_id"), &params)?
            .into_iter()
            .collect();
    Ok(rows
        .into_iter()
        .map(|(id, name, created_at)| {
            let count = counts.get(&id).copied().unwrap_or(0);
            json!({"id": id, "name": name, "contactCount": count, "createdAt": created_at})
        })
        .collect())
}

/// Columns of a category row for [`render_categories`] ([`CategoryRow`]).
pub const CATEGORY_COLS: &str = "id, name, created_at";
