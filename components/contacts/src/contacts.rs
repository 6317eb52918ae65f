//! listContacts, createContact, getContact, updateContact, deleteContacts.

use serde::Deserialize;
use serde_json::{json, Map, Value as J};
use switchboard_guest::db;
use switchboard_guest::page;
use switchboard_guest::{created, e164, fail, new_id, now, ok, params, req, HResult, Request, Success, Value};

use crate::bulk;
use crate::fields;
use crate::model::{self, violation, CONTACT_COLS};
use crate::order::Sort;

const E164_RULE: &str = "an E.164 number: +, a digit 1-9, then 7 to 14 digits (spaces, dashes, dots and parentheses are ignored)";

fn mobile(raw: &str) -> HResult<String> {
    e164::normalize(raw).ok_or_else(|| fail::validation("invalid_mobile", format!("`mobile` must be {E164_RULE}")))
}

fn mobile_exists() -> switchboard_guest::Failure {
    fail::conflict("contact_mobile_exists", "a contact with this `mobile` already exists in this business")
}

/// Turns `search` into a GLOB pattern on `mobile` (GLOB, unlike LIKE, is
/// case-sensitive, so a `+digits*` prefix can use the (business_id, mobile)
/// index).
///
/// Separators are ignored, and so is a leading space: an unencoded `+` arrives
/// decoded as a space. `+digits` matches mobiles starting with them; plain
/// digits match anywhere in the mobile. Anything else is `400 invalid_search`.
fn search_pattern(raw: &str) -> HResult<Option<String>> {
    let s = e164::strip_separators(raw);
    if s.is_empty() {
        return Ok(None);
    }
    let (prefix, digits) = match s.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, s.as_str()),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail::validation("invalid_search", "query parameter `search` matches mobile numbers: digits, optionally after a leading + (URL-encode it as %2B)"));
    }
    Ok(Some(if prefix { format!("+{digits}*") } else { format!("*{digits}*") }))
}

/// The longest `name` filter (the document says the same).
const MAX_NAME_FILTER_CHARS: usize = 100;

/// Turns `name` into a LIKE pattern: names containing it, SQLite's LIKE
/// folding case for A-Z only. Its own `%`, `_` and `\` are escaped, so
/// they match themselves. Blank is no filter, like a blank `search`.
fn name_pattern(raw: &str) -> HResult<Option<String>> {
    let s = raw.trim();
    if s.is_empty() {
        return Ok(None);
    }
    if s.chars().count() > MAX_NAME_FILTER_CHARS || s.contains('\0') {
        return Err(fail::validation("invalid_name_filter", format!("query parameter `name` must be 1 to {MAX_NAME_FILTER_CHARS} characters of a contact's name")));
    }
    Ok(Some(db::contains_pattern(s)))
}

/// The list's filters (`search`, `name`, `categoryId`), also what
/// updateContacts and deleteContacts take as `matching`: contacts matching
/// all of those given.
#[derive(Default)]
pub struct Filters {
    /// A GLOB pattern on the mobile ([`search_pattern`]).
    search: Option<String>,
    /// A LIKE pattern on the name ([`name_pattern`]).
    name: Option<String>,
    category: Option<String>,
}

impl Filters {
    /// Checks and reads the filters (the same rules as the list's query).
    pub fn new(search: Option<&str>, name: Option<&str>, category: Option<&str>) -> HResult<Filters> {
        Ok(Filters { search: search.map(search_pattern).transpose()?.flatten(), name: name.map(name_pattern).transpose()?.flatten(), category: category.map(str::to_ascii_lowercase) })
    }

    /// `FROM contacts c WHERE …` of the contacts of `biz` matching the
    /// filters, with its parameters (`?1` is the business). An unknown
    /// category is `404 category_not_found`.
    pub fn selection(&self, biz: &str) -> HResult<(String, Vec<Value>)> {
        let mut sql = "FROM contacts c WHERE c.business_id = ?1".to_string();
        let mut params: Vec<Value> = params![biz];
        if let Some(cat) = &self.category {
            if db::query_one("SELECT 1 FROM categories WHERE business_id = ?1 AND id = ?2", &params![biz, cat.as_str()])?.is_none() {
                return Err(model::category_not_found(cat));
            }
            params.push(cat.as_str().into());
            sql += &format!(" AND EXISTS (SELECT 1 FROM contact_categories cc WHERE cc.contact_id = c.id AND cc.category_id = ?{})", params.len());
        }
        if let Some(p) = &self.search {
            params.push(p.as_str().into());
            sql += &format!(" AND c.mobile GLOB ?{}", params.len());
        }
        if let Some(p) = &self.name {
            params.push(p.as_str().into());
            sql += &format!(" AND c.name LIKE ?{} ESCAPE '\\'", params.len());
        }
        Ok((sql, params))
    }
}

/// How many contacts of `biz` match `filters`.
pub fn count(biz: &str, filters: &Filters) -> HResult<i64> {
    let (from, params) = filters.selection(biz)?;
    Ok(db::query_one_as::<i64>(&format!("SELECT COUNT(*) {from}"), &params)?.unwrap_or(0))
}

pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let filters = Filters::new(req::query(req, "search"), req::query(req, "name"), req::query_uuid(req, "categoryId")?)?;
    let sort = Sort::of(req)?;
    let limit = req::limit(req, page::DEFAULT_LIMIT, page::MAX_LIMIT)?;
    let after = req::query_nonempty(req, "cursor").map(|c| sort.after(c)).transpose()?;
    let total = match req::query_nonempty(req, "includeTotal") {
        None | Some("false") => None,
        Some("true") => Some(count(biz, &filters)?),
        Some(_) => return Err(fail::validation("invalid_query_parameter", "query parameter `includeTotal` must be true or false")),
    };

    let (from, mut params) = filters.selection(biz)?;
    let mut sql = format!("SELECT {CONTACT_COLS} {from}");
    if let Some(after) = &after {
        let (cond, values) = sort.resume(after, params.len() + 1);
        sql += &cond;
        params.extend(values.into_iter().map(Value::from));
    }
    sql += &format!("{} LIMIT {}", sort.order_by(), limit + 1);
    let mut rows: Vec<model::ContactRow> = db::query_as(&sql, &params)?;
    let next = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|r| sort.cursor(sort.key_of(r).unwrap_or_default(), &r.id))
    } else {
        None
    };
    #[derive(serde::Serialize)]
    struct Page {
        contacts: Vec<model::ContactView>,
        #[serde(rename = "nextCursor")]
        next_cursor: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<i64>,
    }
    ok(&Page { contacts: model::render_contacts(biz, rows)?, next_cursor: next, total })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    name: String,
    mobile: String,
    category_ids: Vec<String>,
    #[serde(default)]
    fields: Map<String, J>,
    #[serde(default)]
    communication_blocked: bool,
}

pub fn create(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: CreateBody = req::body(req)?;
    let name = fields::contact_name(&body.name).map_err(violation)?;
    let mobile = mobile(&body.mobile)?;
    fields::check_fields(&body.fields).map_err(violation)?;
    let categories = model::resolve_named_categories(biz, &body.category_ids)?;

    if db::query_one("SELECT 1 FROM contacts WHERE business_id = ?1 AND mobile = ?2", &params![biz, mobile.as_str()])?.is_some() {
        return Err(mobile_exists());
    }
    let id = new_id();
    let now = now();
    let fields_json = J::Object(body.fields.clone()).to_string();
    db::execute_or(
        "INSERT INTO contacts (id, business_id, mobile, name, fields_json, communication_blocked, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
        &params![id.as_str(), biz, mobile.as_str(), name.as_str(), fields_json.as_str(), body.communication_blocked, now.as_str()],
        mobile_exists,
    )?;
    let ids: Vec<String> = categories.iter().map(|(id, _)| id.clone()).collect();
    model::link_categories(biz, &id, &ids)?;
    model::register_field_keys(biz, body.fields.keys(), &now)?;

    // What was just written, not read back (`model::inserted_contact`).
    let contact = model::inserted_contact(id, mobile, name, fields_json, body.communication_blocked, now, categories);
    created(&json!({"contact": contact}))
}

pub fn get(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let id = req::path_uuid(req, "contactId", "contact_not_found", "contact")?;
    let campaign = req::query_uuid(req, "campaignId")?.map(str::to_ascii_lowercase);
    let contact = model::load_contact(biz, id)?.ok_or_else(model::contact_not_found)?;
    #[derive(serde::Serialize)]
    struct Answer {
        contact: model::ContactView,
        /// With `campaignId`: the contact's shared summary of that campaign
        /// (null without it, or when the contact was never a member).
        #[serde(rename = "campaignSummary")]
        campaign_summary: Option<J>,
    }
    let campaign_summary = match campaign {
        Some(c) => switchboard_guest::campaign_summary::of(biz, &id.to_ascii_lowercase(), &c)?,
        None => None,
    };
    ok(&Answer { contact, campaign_summary })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    name: Option<String>,
    mobile: Option<String>,
    /// Merged into the stored fields; a `null` value removes the key.
    fields: Option<Map<String, J>>,
    /// Replaces the contact's categories.
    category_ids: Option<Vec<String>>,
    communication_blocked: Option<bool>,
}

pub fn update(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let id = req::path_uuid(req, "contactId", "contact_not_found", "contact")?;
    let body: UpdateBody = req::body(req)?;
    if body.name.is_none() && body.mobile.is_none() && body.fields.is_none() && body.category_ids.is_none() && body.communication_blocked.is_none() {
        return Err(fail::validation("empty_update", "give at least one of `name`, `mobile`, `fields`, `categoryIds`, `communicationBlocked`"));
    }
    let (stored_mobile, stored_name, fields_json, stored_blocked) =
        db::query_one_as::<(String, String, String, bool)>("SELECT mobile, name, fields_json, communication_blocked FROM contacts WHERE business_id = ?1 AND id = ?2", &params![biz, id])?
            .ok_or_else(model::contact_not_found)?;

    let name = match &body.name {
        Some(n) => fields::contact_name(n).map_err(violation)?,
        None => stored_name,
    };
    let mobile = match &body.mobile {
        Some(m) => mobile(m)?,
        None => stored_mobile.clone(),
    };
    let mut stored = model::parse_fields(&fields_json);
    let mut new_keys: Vec<String> = Vec::new();
    if let Some(patch) = &body.fields {
        for (k, v) in patch {
            match v {
                J::Null => {
                    stored.remove(k);
                }
                J::String(s) => {
                    fields::check_pair("fields", k, s).map_err(violation)?;
                    stored.insert(k.clone(), v.clone());
                    new_keys.push(k.clone());
                }
                _ => return Err(fail::validation("invalid_field_value", format!("`fields.{k}` must be a string or null"))),
            }
        }
        if stored.len() > fields::MAX_FIELDS {
            return Err(violation(fields::too_many_fields()));
        }
    }
    let categories = body.category_ids.as_deref().map(|ids| model::resolve_categories(biz, ids)).transpose()?;
    let blocked = body.communication_blocked.unwrap_or(stored_blocked);

    if mobile != stored_mobile && db::query_one("SELECT 1 FROM contacts WHERE business_id = ?1 AND mobile = ?2 AND id <> ?3", &params![biz, &mobile, id])?.is_some() {
        return Err(mobile_exists());
    }
    let now = now();
    db::execute_or(
        "UPDATE contacts SET name = ?3, mobile = ?4, fields_json = ?5, communication_blocked = ?6, updated_at = ?7 \
         WHERE business_id = ?1 AND id = ?2",
        &params![biz, id, name, mobile, J::Object(stored).to_string(), blocked, &now],
        mobile_exists,
    )?;
    if let Some(cats) = categories {
        db::execute("DELETE FROM contact_categories WHERE business_id = ?1 AND contact_id = ?2", &params![biz, id])?;
        model::link_categories(biz, id, &cats)?;
    }
    model::register_field_keys(biz, new_keys.iter(), &now)?;

    let contact = model::load_contact(biz, id)?.ok_or_else(model::contact_not_found)?;
    ok(&json!({"contact": contact}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteBody {
    contact_ids: Option<Vec<String>>,
    category_id: Option<String>,
    /// Ours: every contact matching the list's filters (see crate::bulk).
    matching: Option<bulk::Matching>,
}

/// Deletes the listed contacts (ids not in this business are not counted),
/// every contact in a category, or every contact matching the list's
/// filters, with their category links and timeline entries.
pub fn delete(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: DeleteBody = req::body(req)?;
    let deleted = match (body.contact_ids, body.category_id, body.matching) {
        (None, None, Some(m)) => bulk::delete_ids(biz, &bulk::matched_ids(biz, &m)?)?,
        (Some(ids), None, None) => {
            if ids.is_empty() || ids.len() > 1000 {
                return Err(fail::validation("invalid_contact_ids", "`contactIds` must contain 1 to 1000 contact ids"));
            }
            let mut unique: Vec<&String> = ids.iter().collect();
            unique.sort();
            unique.dedup();
            let rows: Vec<Vec<Value>> = unique.iter().map(|id| params![biz, *id]).collect();
            db::execute_many("DELETE FROM contact_categories WHERE business_id = ?1 AND contact_id = ?2", &rows)?;
            db::execute_many("DELETE FROM timeline_entries WHERE business_id = ?1 AND contact_id = ?2", &rows)?;
            db::execute_many("DELETE FROM contacts WHERE business_id = ?1 AND id = ?2", &rows)?
        }
        (None, Some(cat), None) => {
            if !switchboard_guest::is_uuid(&cat) || db::query_one("SELECT 1 FROM categories WHERE business_id = ?1 AND id = ?2", &params![biz, cat.as_str()])?.is_none() {
                return Err(model::category_not_found(&cat));
            }
            // The IN subqueries are uncorrelated, so SQLite evaluates each once
            // before deleting; the links are removed last because both earlier
            // statements select through them.
            const MEMBERS: &str = "SELECT contact_id FROM contact_categories WHERE business_id = ?1 AND category_id = ?2";
            let p = [Value::from(biz), Value::from(cat.as_str())];
            db::execute(&format!("DELETE FROM timeline_entries WHERE business_id = ?1 AND contact_id IN ({MEMBERS})"), &p)?;
            let n = db::execute(&format!("DELETE FROM contacts WHERE business_id = ?1 AND id IN ({MEMBERS})"), &p)?;
            db::execute(&format!("DELETE FROM contact_categories WHERE business_id = ?1 AND contact_id IN ({MEMBERS})"), &p)?;
            n
        }
        _ => return Err(fail::validation("invalid_body", "give exactly one of `contactIds`, `categoryId` or `matching`")),
    };
    ok(&json!({"deleted": deleted}))
}

#[cfg(test)]
mod tests {
    use super::{name_pattern, search_pattern};

    #[test]
    fn search() {
        assert_eq!(search_pattern("+1415").unwrap().as_deref(), Some("+1415*"));
        assert_eq!(search_pattern(" 1415").unwrap().as_deref(), Some("*1415*"));
        assert_eq!(search_pattern("415 555").unwrap().as_deref(), Some("*415555*"));
        assert_eq!(search_pattern("  ").unwrap(), None);
        assert!(search_pattern("ada").is_err());
        assert!(search_pattern("+").is_err());
        assert!(search_pattern("1%").is_err());
    }

    #[test]
    fn name() {
        assert_eq!(name_pattern(" ada ").unwrap().as_deref(), Some("%ada%"));
        assert_eq!(name_pattern("50%_a\\b").unwrap().as_deref(), Some("%50\\%\\_a\\\\b%"));
        assert_eq!(name_pattern("   ").unwrap(), None);
        assert!(name_pattern(&"x".repeat(101)).is_err());
    }
}
