//! An agent body (createAgent, updateAgent): its shape, and every rule of
//! it that the document cannot express, checked against the business's
//! data sources, categories and fields before anything is stored.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{Map, Value as J};
use switchboard_channel_connections::Channel;
use switchboard_guest::{db, fail, params, Failure, FromRow, HResult, Value};

use crate::rules::{self, quote, Violation};

/// Ids per `IN (...)` list (well below SQLite's parameter limit).
pub(crate) const CHUNK: usize = 400;

pub(crate) fn violation(v: Violation) -> Failure {
    fail::validation(v.0, v.1)
}

/// The channel a body names (the document's enum has refused any other).
pub(crate) fn channel(name: &str) -> HResult<Channel> {
    Channel::parse(name).ok_or_else(|| fail::validation("invalid_channel", format!("`channel` `{}` must be one of chatapp, voice, photoapp, sms, other", quote(name, 64))))
}

/// Rows of `table` of this business whose `id` is in `ids`: `SELECT {cols}
/// FROM {table} WHERE business_id = ?1 AND id IN (...)`, in chunks.
pub(crate) fn rows_by_id<T: FromRow>(cols: &str, table: &str, biz: &str, ids: &[&str]) -> HResult<Vec<T>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(CHUNK) {
        let mut params: Vec<Value> = params![biz];
        params.extend(chunk.iter().map(|s| Value::from(*s)));
        let sql = format!("SELECT {cols} FROM {table} WHERE business_id = ?1 AND id IN ({})", db::placeholders(2, chunk.len()));
        out.extend(db::query_as::<T>(&sql, &params)?);
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Variable {
    pub(crate) source_id: String,
    pub(crate) field_key: String,
    pub(crate) alias: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AssignmentBody {
    pub(crate) phone_number_id: Option<String>,
    pub(crate) provider_account_id: Option<String>,
    pub(crate) auto_reply_enabled: Option<bool>,
    pub(crate) human_handoff_active: Option<bool>,
}

/// AgentCreate and AgentUpdate (`agentId` and `assignment` only in one of them;
/// the schema has already refused the other).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentBody {
    pub(crate) agent_id: Option<String>,
    pub(crate) channel: String,
    pub(crate) name: String,
    pub(crate) instructions: String,
    pub(crate) language_code: Option<String>,
    #[serde(default)]
    pub(crate) data_source_ids: Vec<String>,
    #[serde(default)]
    pub(crate) contact_category_ids: Vec<String>,
    #[serde(default)]
    pub(crate) data_source_variables: Vec<Variable>,
    pub(crate) voice_settings: Option<Map<String, J>>,
    pub(crate) photoapp_collect_mobile_enabled: Option<bool>,
    #[serde(default)]
    pub(crate) assignment: Option<AssignmentBody>,
}

/// An agent body that passed every rule, ready to store.
pub(crate) struct Checked {
    pub(crate) channel: Channel,
    pub(crate) name: String,
    pub(crate) language_code: String,
    pub(crate) data_source_ids: Vec<String>,
    pub(crate) category_ids: Vec<String>,
    pub(crate) variables: Vec<Variable>,
    pub(crate) contact_context_required: bool,
    pub(crate) voice_settings: Option<String>,
    pub(crate) photoapp_collect_mobile: Option<bool>,
}

/// The first repeated entry of a list, with its index.
fn first_duplicate(items: &[String]) -> Option<(usize, &str)> {
    let mut seen = HashSet::new();
    items.iter().enumerate().find(|(_, s)| !seen.insert(s.as_str())).map(|(i, s)| (i, s.as_str()))
}

/// A data source of this business as an agent sees it.
pub(crate) struct Source {
    pub(crate) built_in: bool,
    pub(crate) structured: bool,
    pub(crate) archived: bool,
}

fn load_sources(biz: &str, ids: &[&str]) -> HResult<HashMap<String, Source>> {
    Ok(rows_by_id::<(String, bool, String, String)>("id, built_in, class, status", "data_sources", biz, ids)?
        .into_iter()
        .map(|(id, built_in, class, status)| (id, Source { built_in, structured: class == "structured", archived: status == "archived" }))
        .collect())
}

fn source_not_found(field: &str, id: &str) -> Failure {
    fail::not_found("data_source_not_found", format!("`{field}`: data source `{}` not found", quote(id, 64)))
}

fn source_archived(field: &str, id: &str) -> Failure {
    fail::validation("data_source_archived", format!("`{field}`: data source `{}` is archived", quote(id, 64)))
}

/// True when `key` is a field of the source: for the built-in Contacts source
/// `mobile`, `name` and the business's contact field keys; otherwise a
/// declared field of the structured source.
fn field_exists(biz: &str, source_id: &str, built_in: bool, key: &str) -> HResult<bool> {
    if built_in {
        if key == "mobile" || key == "name" {
            return Ok(true);
        }
        return Ok(db::query_one("SELECT 1 FROM contact_fields WHERE business_id = ?1 AND field_key = ?2", &params![biz, key])?.is_some());
    }
    Ok(db::query_one("SELECT 1 FROM data_source_fields WHERE business_id = ?1 AND data_source_id = ?2 AND field_key = ?3", &params![biz, source_id, key])?.is_some())
}

/// Every rule of an agent body that the schema cannot express, in this
/// order: the texts, the channel and its settings, the data sources, the
/// categories, the variables, the voice settings.
pub(crate) fn check(biz: &str, b: AgentBody) -> HResult<(Checked, Option<AssignmentBody>)> {
    let name = rules::agent_name(&b.name).map_err(violation)?;
    rules::instructions(&b.instructions).map_err(violation)?;
    let language_code = rules::language_code(b.language_code.as_deref()).map_err(violation)?;
    let channel = channel(&b.channel)?;
    check_channel_settings(&b, channel)?;
    check_data_sources(biz, &b.data_source_ids)?;
    check_categories(biz, &b.contact_category_ids)?;
    let aliases = check_variables(biz, &b.data_source_variables)?;
    // Every declared variable is contact-backed: a Contacts variable is the
    // called contact's field, one of another structured source the field of
    // the contact's row of that source (the voice area's `resolve`). A call
    // to a bare number has no contact, hence no value for any of them.
    let contact_context_required = !b.data_source_variables.is_empty();
    let voice_settings = if channel == Channel::Voice { Some(voice_settings(&b, &aliases, contact_context_required)?) } else { None };
    let photoapp_collect_mobile = (channel == Channel::Photoapp).then(|| b.photoapp_collect_mobile_enabled.unwrap_or(true));
    Ok((
        Checked {
            channel,
            name,
            language_code,
            data_source_ids: b.data_source_ids,
            category_ids: b.contact_category_ids,
            variables: b.data_source_variables,
            contact_context_required,
            voice_settings,
            photoapp_collect_mobile,
        },
        b.assignment,
    ))
}

/// The channel-specific settings only on their channel. The document states
/// these two (one body shape per channel) and the gateway refuses them
/// first; kept so no caller can store a mismatch.
fn check_channel_settings(b: &AgentBody, channel: Channel) -> HResult<()> {
    if b.voice_settings.is_some() && channel != Channel::Voice {
        return Err(fail::validation("voice_settings_not_allowed", format!("`voiceSettings` applies to voice agents only; this agent's channel is `{channel}`")));
    }
    if b.photoapp_collect_mobile_enabled.is_some() && channel != Channel::Photoapp {
        return Err(fail::validation("photoapp_setting_not_allowed", format!("`photoappCollectMobileEnabled` applies to photoapp agents only; this agent's channel is `{channel}`")));
    }
    Ok(())
}

/// Data sources: unique, existing, of this business, not archived.
fn check_data_sources(biz: &str, data_source_ids: &[String]) -> HResult<()> {
    if let Some((i, id)) = first_duplicate(data_source_ids) {
        return Err(fail::validation("duplicate_data_source_id", format!("`dataSourceIds[{i}]`: data source `{}` is listed twice", quote(id, 64))));
    }
    let ids: Vec<&str> = data_source_ids.iter().map(String::as_str).collect();
    let found = load_sources(biz, &ids)?;
    for (i, id) in ids.iter().enumerate() {
        match found.get(*id) {
            None => return Err(source_not_found(&format!("dataSourceIds[{i}]"), id)),
            Some(s) if s.archived => return Err(source_archived(&format!("dataSourceIds[{i}]"), id)),
            Some(_) => {}
        }
    }
    Ok(())
}

/// Contact categories: unique, existing, of this business.
fn check_categories(biz: &str, category_ids: &[String]) -> HResult<()> {
    if let Some((i, id)) = first_duplicate(category_ids) {
        return Err(fail::validation("duplicate_category_id", format!("`contactCategoryIds[{i}]`: category `{}` is listed twice", quote(id, 64))));
    }
    let cids: Vec<&str> = category_ids.iter().map(String::as_str).collect();
    let known: HashSet<String> = rows_by_id::<String>("id", "categories", biz, &cids)?.into_iter().collect();
    if let Some((i, id)) = cids.iter().enumerate().find(|(_, id)| !known.contains(**id)) {
        return Err(fail::not_found("category_not_found", format!("`contactCategoryIds[{i}]`: category `{}` not found", quote(id, 64))));
    }
    Ok(())
}

/// Declared variables: unique aliases, a structured source of this
/// business, a field that exists in it. Their aliases, in order.
fn check_variables(biz: &str, variables: &[Variable]) -> HResult<Vec<String>> {
    let aliases: Vec<String> = variables.iter().map(|v| v.alias.clone()).collect();
    if let Some((i, alias)) = first_duplicate(&aliases) {
        return Err(fail::validation("duplicate_alias", format!("`dataSourceVariables[{i}].alias`: alias `{}` is declared twice; aliases must be unique", quote(alias, 64))));
    }
    let mut var_sources: Vec<&str> = variables.iter().map(|v| v.source_id.as_str()).collect();
    var_sources.sort_unstable();
    var_sources.dedup();
    let var_found = load_sources(biz, &var_sources)?;
    let mut checked_pairs: HashSet<(&str, &str)> = HashSet::new();
    for (i, v) in variables.iter().enumerate() {
        if !rules::is_key(&v.field_key) || !rules::is_key(&v.alias) {
            return Err(fail::validation("invalid_variable", format!("`dataSourceVariables[{i}]`: `fieldKey` and `alias` must match ^[a-zA-Z][a-zA-Z0-9_]{{0,63}}$")));
        }
        let field = format!("dataSourceVariables[{i}].sourceId");
        let s = match var_found.get(&v.source_id) {
            None => return Err(source_not_found(&field, &v.source_id)),
            Some(s) if s.archived => return Err(source_archived(&field, &v.source_id)),
            Some(s) => s,
        };
        if !s.structured {
            return Err(fail::validation("data_source_not_structured", format!("`{field}`: data source `{}` is unstructured; variables can only name fields of structured sources", v.source_id)));
        }
        if checked_pairs.insert((v.source_id.as_str(), v.field_key.as_str())) && !field_exists(biz, &v.source_id, s.built_in, &v.field_key)? {
            let known = if s.built_in { " (Contacts fields are `mobile`, `name` and the business's contact field keys)" } else { "" };
            return Err(fail::validation("unknown_field_key", format!("`dataSourceVariables[{i}].fieldKey`: data source `{}` has no field `{}`{known}", v.source_id, v.field_key)));
        }
    }
    Ok(aliases)
}

/// A voice agent's effective settings (defaults filled in) as stored JSON;
/// one that declares variables must be scoped to contact categories.
fn voice_settings(b: &AgentBody, aliases: &[String], contact_context_required: bool) -> HResult<String> {
    let alias_refs: Vec<&str> = aliases.iter().map(String::as_str).collect();
    let eff = rules::voice_settings(b.voice_settings.as_ref(), &alias_refs).map_err(violation)?;
    if contact_context_required && b.contact_category_ids.is_empty() {
        return Err(fail::validation(
            "contact_categories_required",
            "`contactCategoryIds` must name at least one category: a voice agent that declares variables (each one is read from the contact called) must be scoped to contact categories",
        ));
    }
    Ok(J::Object(eff).to_string())
}
