//! resolveCallContext (40): the destination and the agent's declared
//! variables as a call would start from them.
//!
//! * `agentId`: an active voice agent of this business (404
//!   `agent_not_found`; 409 `agent_archived`; 409 `agent_not_voice`).
//! * Exactly one of `contactId` and `toNumber` (400 `call_target_required`).
//! * A contact target must be this business's (404 `contact_not_found`), not
//!   communication-blocked (409 `contact_blocked`) and, when the agent is
//!   scoped to contact categories, in one of them (409
//!   `contact_out_of_scope`). Its destination is the contact's mobile;
//!   `values` holds the agent's aliases that name a field of the built-in
//!   Contacts source (`mobile`, `name`, or a custom field), for the fields
//!   this contact has, and those of its other structured sources, from the
//!   contact's row of each ([`source_row`]).
//! * A `toNumber` target has no values; `contactRequired` says whether the
//!   agent needs a contact (a direct call to it is refused): it does when it
//!   declares any variable, since every one, of Contacts or of another
//!   structured source, is read from the contact called.

use serde::Serialize;
use std::collections::BTreeMap;
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::knowledge::lookup_value;
use switchboard_guest::{fail, is_uuid, ok, params, req, HResult, Request, Success};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Resolved {
    destination: String,
    values: BTreeMap<String, String>,
    contact_required: bool,
}

/// A value of the built-in Contacts source: `mobile`, `name`, or a custom field.
pub fn contact_value(field_key: &str, mobile: &str, name: &str, fields: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    match field_key {
        "mobile" => Some(mobile.to_string()),
        "name" => Some(name.to_string()),
        key => fields.get(key).and_then(|v| v.as_str()).map(String::from),
    }
}

/// A voice agent a call can start from.
pub struct Agent {
    pub id: String,
    pub name: String,
    pub instructions: String,
    pub contact_required: bool,
    /// The effective voice settings (defaults filled in), a JSON object.
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// An active voice agent of this business (404 `agent_not_found`, 409
/// `agent_not_voice`, 409 `agent_archived`).
pub fn agent(biz: &str, agent_id: &str) -> HResult<Agent> {
    let agent_id = agent_id.to_ascii_lowercase();
    let not_found = || fail::not_found("agent_not_found", format!("agent `{agent_id}` not found"));
    if !is_uuid(&agent_id) {
        return Err(not_found());
    }
    let (channel, status, contact_required, name, instructions, settings) = db::query_one_as::<(Channel, String, bool, String, String, String)>(
        "SELECT channel, status, contact_context_required, name, instructions, IFNULL(voice_settings_json, '{}') FROM agents WHERE business_id = ?1 AND id = ?2",
        &params![biz, &agent_id],
    )?
    .ok_or_else(not_found)?;
    if channel != Channel::Voice {
        return Err(fail::conflict("agent_not_voice", format!("agent `{agent_id}` is a {} agent; calls need a voice agent", channel.name())));
    }
    if status != "active" {
        return Err(fail::conflict("agent_archived", format!("agent `{agent_id}` is archived")));
    }
    Ok(Agent { contact_required, name, instructions, settings: serde_json::from_str(&settings).unwrap_or_default(), id: agent_id })
}

/// A contact a call of `agent` may reach, with the agent's declared values.
pub struct ContactTarget {
    pub id: String,
    pub name: String,
    pub mobile: String,
    /// Alias → value, only the agent's declared aliases this contact has.
    pub values: BTreeMap<String, String>,
}

/// The contact as a target of `agent`: this business's (404
/// `contact_not_found`), not blocked (409 `contact_blocked`), in the agent's
/// categories when it has any (409 `contact_out_of_scope`).
pub fn contact(biz: &str, agent: &Agent, contact_id: &str) -> HResult<ContactTarget> {
    let contact_id = contact_id.to_ascii_lowercase();
    let not_found = || fail::not_found("contact_not_found", format!("contact `{contact_id}` not found"));
    if !is_uuid(&contact_id) {
        return Err(not_found());
    }
    let (mobile, name, fields, blocked) =
        db::query_one_as::<(String, String, String, bool)>("SELECT mobile, name, fields_json, communication_blocked FROM contacts WHERE business_id = ?1 AND id = ?2", &params![biz, &contact_id])?
            .ok_or_else(not_found)?;
    if blocked {
        return Err(fail::conflict("contact_blocked", "communication with this contact is blocked"));
    }
    let out_of_scope = db::query_one(
        "SELECT 1 FROM agent_categories a WHERE a.business_id = ?1 AND a.agent_id = ?2 \
         AND NOT EXISTS (SELECT 1 FROM agent_categories s JOIN contact_categories c ON c.business_id = s.business_id AND c.category_id = s.category_id \
                         WHERE s.business_id = ?1 AND s.agent_id = ?2 AND c.contact_id = ?3) LIMIT 1",
        &params![biz, &agent.id, &contact_id],
    )?
    .is_some();
    if out_of_scope {
        return Err(fail::conflict("contact_out_of_scope", "the contact is in none of the agent's contact categories"));
    }
    let fields: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&fields).unwrap_or_default();
    let mut values = BTreeMap::new();
    // Each other source's row of this contact, found once for its variables.
    let mut rows: BTreeMap<String, Option<Vec<(String, String)>>> = BTreeMap::new();
    for (alias, field_key, built_in, source_id, version_id) in db::query_as::<(String, String, bool, String, String)>(
        "SELECT v.alias, v.field_key, s.built_in, s.id, IFNULL(s.active_version_id, '') FROM agent_variables v \
         JOIN data_sources s ON s.business_id = v.business_id AND s.id = v.data_source_id \
         WHERE v.business_id = ?1 AND v.agent_id = ?2 AND (s.built_in = 1 OR (s.class = 'structured' AND s.status = 'active')) ORDER BY v.position",
        &params![biz, &agent.id],
    )? {
        let value = if built_in {
            contact_value(&field_key, &mobile, &name, &fields)
        } else {
            let row = match rows.entry(source_id) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => e.insert(source_row(biz, &version_id, &mobile, &fields)?),
            };
            row.as_ref().and_then(|row| row.iter().find(|(key, _)| *key == field_key).map(|(_, cell)| cell.clone()))
        };
        if let Some(value) = value {
            values.insert(alias, value);
        }
    }
    Ok(ContactTarget { id: contact_id, name, mobile, values })
}

/// A contact's row of a structured source (its active version `version_id`),
/// as (field key, cell) pairs of its non-empty cells: the first row whose
/// lookup field holds the contact's mobile, else the first whose lookup
/// field has the key of one of the contact's own fields and holds its value
/// (a `customerId` column for a contact's `customerId`). Matches are exact
/// and case-insensitive, as the `lookup` tool's, and numbers match as
/// numbers ([`written_forms`]: a contact's `42` finds a cell `42.0`);
/// `None` without one.
fn source_row(biz: &str, version_id: &str, mobile: &str, fields: &serde_json::Map<String, serde_json::Value>) -> HResult<Option<Vec<(String, String)>>> {
    if version_id.is_empty() {
        return Ok(None);
    }
    // The version's columns, read once: the lookup fields to match on, and
    // every column's key for the row's cells.
    let columns: Vec<(i64, String, Option<i64>)> =
        db::query_as("SELECT position, field_key, lookup FROM ingestion_columns WHERE business_id = ?1 AND version_id = ?2 ORDER BY position", &params![biz, version_id])?;
    // Each candidate is one seek of the lookup index (version, field, value).
    let lookup_fields: Vec<String> = columns.iter().filter(|(_, _, lookup)| *lookup == Some(1)).map(|(_, key, _)| key.clone()).collect();
    let by_mobile = lookup_fields.iter().filter_map(|f| Some((f.as_str(), lookup_value(mobile)?)));
    let by_key = lookup_fields.iter().filter_map(|f| Some((f.as_str(), fields.get(f).and_then(field_text).as_deref().and_then(lookup_value)?)));
    let mut row = None;
    for (field, value) in by_mobile.chain(by_key).flat_map(|(f, v)| written_forms(&v).into_iter().map(move |v| (f, v))) {
        row = db::query_one_as::<i64>(
            "SELECT row_number FROM lookup_values WHERE business_id = ?1 AND version_id = ?2 AND field_key = ?3 AND value = ?4 ORDER BY row_number LIMIT 1",
            &params![biz, version_id, field, value],
        )?;
        if row.is_some() {
            break;
        }
    }
    let Some(row) = row else { return Ok(None) };
    let Some(cells) = db::query_one_as::<String>("SELECT original FROM ingestion_rows WHERE business_id = ?1 AND version_id = ?2 AND row_number = ?3", &params![biz, version_id, row])? else {
        return Ok(None);
    };
    // The row's cells are JSON, one per column of the version (read above).
    let cells: Vec<serde_json::Value> = serde_json::from_str(&cells).unwrap_or_default();
    Ok(Some(columns.iter().filter_map(|(position, key, _)| Some((key.clone(), cell_text(cells.get(usize::try_from(*position).ok()?)?)?))).collect()))
}

/// A contact field's value as text (a number as it is written).
fn field_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The texts a value may be written as in a source's cell: itself and, for
/// a plain decimal number, its other forms, so numbers match as numbers
/// ("42", "42.0"; "12.50", "12.5"). A leading zero (`007`) is a code, not a
/// number.
fn written_forms(value: &str) -> Vec<String> {
    let mut out = vec![value.to_string()];
    let digits = value.strip_prefix('-').unwrap_or(value);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let plain = !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b.is_ascii_digit()) && (!digits.contains('.') || !frac.is_empty());
    if !plain || (int.len() > 1 && int.starts_with('0')) || int.len() > 15 {
        return out;
    }
    let sign = if value.starts_with('-') { "-" } else { "" };
    let frac = frac.trim_end_matches('0');
    let shortest = if frac.is_empty() { format!("{sign}{int}") } else { format!("{sign}{int}.{frac}") };
    for form in [shortest.clone(), if frac.is_empty() { format!("{shortest}.0") } else { shortest.clone() }] {
        if !out.contains(&form) {
            out.push(form);
        }
    }
    out
}

/// A cell as a variable's value: text as it is, numbers and booleans
/// written out; empty cells have none.
fn cell_text(cell: &serde_json::Value) -> Option<String> {
    match cell {
        serde_json::Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub fn run(request: &Request) -> HResult<Success> {
    let biz = request.business_id.as_str();
    let agent = agent(biz, req::query_nonempty(request, "agentId").unwrap_or_default())?;
    let contact_required = agent.contact_required;
    match (req::query_nonempty(request, "contactId"), req::query_nonempty(request, "toNumber")) {
        (Some(c), None) => {
            let target = contact(biz, &agent, c)?;
            ok(&Resolved { destination: target.mobile, values: target.values, contact_required })
        }
        (None, Some(number)) => ok(&Resolved { destination: number.to_string(), values: BTreeMap::new(), contact_required }),
        _ => Err(fail::validation("call_target_required", "give exactly one of the query parameters `contactId` and `toNumber`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contact_values_come_from_mobile_name_or_a_custom_field() {
        let fields = serde_json::json!({"city": "Paris", "n": 3});
        let fields = fields.as_object().unwrap();
        assert_eq!(contact_value("mobile", "+15550001234", "Ada", fields).as_deref(), Some("+15550001234"));
        assert_eq!(contact_value("name", "+15550001234", "Ada", fields).as_deref(), Some("Ada"));
        assert_eq!(contact_value("city", "+15550001234", "Ada", fields).as_deref(), Some("Paris"));
        assert_eq!(contact_value("tier", "+15550001234", "Ada", fields), None);
        assert_eq!(contact_value("n", "+15550001234", "Ada", fields), None, "only text values");
    }

    #[test]
    fn numbers_match_as_numbers() {
        assert_eq!(written_forms("42"), ["42", "42.0"]);
        assert_eq!(written_forms("42.0"), ["42.0", "42"]);
        assert_eq!(written_forms("12.50"), ["12.50", "12.5"]);
        assert_eq!(written_forms("-3"), ["-3", "-3.0"]);
        assert_eq!(written_forms("007"), ["007"], "a code");
        assert_eq!(written_forms("0.5"), ["0.5"]);
        assert_eq!(written_forms("sku-12"), ["sku-12"]);
        assert_eq!(written_forms("4."), ["4."]);
        assert_eq!(field_text(&serde_json::json!(42)).as_deref(), Some("42"));
    }

    #[test]
    fn cells_become_values_as_written() {
        assert_eq!(cell_text(&serde_json::json!(" Gold ")).as_deref(), Some("Gold"));
        assert_eq!(cell_text(&serde_json::json!(12.5)).as_deref(), Some("12.5"));
        assert_eq!(cell_text(&serde_json::json!(true)).as_deref(), Some("true"));
        assert_eq!(cell_text(&serde_json::json!("")), None);
        assert_eq!(cell_text(&serde_json::Value::Null), None);
    }
}
