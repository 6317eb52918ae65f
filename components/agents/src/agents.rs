//! listAgents, createAgent, updateAgent, archiveAgent.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{json, Map, Value as J};
use switchboard_channel_connections::Channel;
use switchboard_guest::db::{self, Row};
use switchboard_guest::page;
use switchboard_guest::{created, fail, ids, new_id, now, ok, params, req, Columns, Failure, FromRow, HResult, Mismatch, Request, Success, Value};

use crate::channels;
use crate::rules::{self, quote, Violation};

/// Columns of an agent row, in the order [`AgentRow`] reads them.
pub const AGENT_COLS: &str = "id, channel, name, instructions, language_code, status, reference_name, \
    contact_context_required, voice_settings_json, photoapp_collect_mobile, created_at, updated_at, archived_at";

/// An agent row, selected with [`AGENT_COLS`].
pub struct AgentRow {
    pub id: String,
    pub channel: Channel,
    name: String,
    instructions: String,
    language_code: String,
    /// `active` or `archived`.
    pub status: String,
    reference_name: String,
    contact_context_required: bool,
    /// NULL unless a voice agent.
    voice_settings_json: Option<String>,
    /// NULL unless a photoapp agent.
    photoapp_collect_mobile: Option<bool>,
    created_at: String,
    updated_at: String,
    archived_at: Option<String>,
}

impl FromRow for AgentRow {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let mut c = Columns::new(row);
        Ok(AgentRow {
            id: c.read()?,
            channel: c.read()?,
            name: c.read()?,
            instructions: c.read()?,
            language_code: c.read()?,
            status: c.read()?,
            reference_name: c.read()?,
            contact_context_required: c.read()?,
            voice_settings_json: c.read()?,
            photoapp_collect_mobile: c.read()?,
            created_at: c.read()?,
            updated_at: c.read()?,
            archived_at: c.read()?,
        })
    }
}

/// Ids per `IN (...)` list (well below SQLite's parameter limit).
const CHUNK: usize = 400;

pub fn violation(v: Violation) -> Failure {
    fail::validation(v.0, v.1)
}

pub fn agent_not_found(id: &str) -> Failure {
    fail::not_found("agent_not_found", format!("agent `{}` not found", quote(id, 64)))
}

/// The channel a body names (the document's enum has refused any other).
pub fn channel(name: &str) -> HResult<Channel> {
    Channel::parse(name).ok_or_else(|| fail::validation("invalid_channel", format!("`channel` `{}` must be one of chatapp, voice, photoapp, sms, other", quote(name, 64))))
}

/// Rows of `table` of this business whose `id` is in `ids`: `SELECT {cols}
/// FROM {table} WHERE business_id = ?1 AND id IN (...)`, in chunks.
pub fn rows_by_id<T: FromRow>(cols: &str, table: &str, biz: &str, ids: &[&str]) -> HResult<Vec<T>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(CHUNK) {
        let mut params: Vec<Value> = params![biz];
        params.extend(chunk.iter().map(|s| Value::from(*s)));
        let sql = format!("SELECT {cols} FROM {table} WHERE business_id = ?1 AND id IN ({})", db::placeholders(2, chunk.len()));
        out.extend(db::query_as::<T>(&sql, &params)?);
    }
    Ok(out)
}

/// Children rows (`SELECT {cols} FROM {table} WHERE business_id = ?1 AND
/// agent_id IN (...) ORDER BY agent_id, position`, `cols` starting with
/// `agent_id`) grouped by the agent `agent` reads of each.
fn children<T: FromRow>(table: &str, cols: &str, biz: &str, agent_ids: &[&str], agent: fn(&T) -> &str) -> HResult<HashMap<String, Vec<T>>> {
    let mut out: HashMap<String, Vec<T>> = HashMap::new();
    for chunk in agent_ids.chunks(CHUNK) {
        let mut params: Vec<Value> = params![biz];
        params.extend(chunk.iter().map(|s| Value::from(*s)));
        let sql = format!("SELECT {cols} FROM {table} WHERE business_id = ?1 AND agent_id IN ({}) ORDER BY agent_id, position", db::placeholders(2, chunk.len()));
        for r in db::query_as::<T>(&sql, &params)? {
            out.entry(agent(&r).to_string()).or_default().push(r);
        }
    }
    Ok(out)
}

/// Renders agent rows (selected with [`AGENT_COLS`]) with their data sources,
/// categories and variables: three queries whatever the number of rows.
pub fn render(biz: &str, rows: Vec<AgentRow>) -> HResult<Vec<J>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    type Link = (String, String);
    type Var = (String, String, String, String);
    let mut sources = children::<Link>("agent_data_sources", "agent_id, data_source_id", biz, &ids, |l| &l.0)?;
    let mut categories = children::<Link>("agent_categories", "agent_id, category_id", biz, &ids, |l| &l.0)?;
    let mut variables = children::<Var>("agent_variables", "agent_id, data_source_id, field_key, alias", biz, &ids, |v| &v.0)?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let id = r.id;
            let channel = r.channel;
            let voice = r.voice_settings_json.and_then(|t| serde_json::from_str::<J>(&t).ok()).filter(J::is_object);
            let voice = if channel == Channel::Voice { voice.unwrap_or_else(|| J::Object(rules::voice_settings(None, &[]).unwrap_or_default())) } else { J::Null };
            let collect = if channel == Channel::Photoapp { json!(r.photoapp_collect_mobile.unwrap_or(true)) } else { J::Null };
            let ids_of = |m: &mut HashMap<String, Vec<Link>>| -> Vec<J> { m.remove(&id).unwrap_or_default().into_iter().map(|(_, linked)| json!(linked)).collect() };
            let data_source_ids = ids_of(&mut sources);
            let category_ids = ids_of(&mut categories);
            let vars: Vec<J> = variables.remove(&id).unwrap_or_default().into_iter().map(|(_, source, field, alias)| json!({"sourceId": source, "fieldKey": field, "alias": alias})).collect();
            json!({
                "id": id,
                "businessId": biz,
                "channel": channel.name(),
                "name": r.name,
                "instructions": r.instructions,
                "languageCode": r.language_code,
                "status": r.status,
                "referenceName": r.reference_name,
                "contactContextRequired": r.contact_context_required,
                "dataSourceIds": data_source_ids,
                "contactCategoryIds": category_ids,
                "dataSourceVariables": vars,
                "voiceSettings": voice,
                "photoappCollectMobileEnabled": collect,
                "createdAt": r.created_at,
                "updatedAt": r.updated_at,
                "archivedAt": r.archived_at,
            })
        })
        .collect())
}

/// One agent row of this business.
pub fn load_row(biz: &str, id: &str) -> HResult<Option<AgentRow>> {
    db::query_one_as(&format!("SELECT {AGENT_COLS} FROM agents WHERE business_id = ?1 AND id = ?2"), &params![biz, id])
}

fn load(biz: &str, id: &str) -> HResult<J> {
    let row = load_row(biz, id)?.ok_or_else(|| agent_not_found(id))?;
    Ok(render(biz, vec![row])?.remove(0))
}

/// Agents in creation order (ids are uuid v7), archived ones included with
/// `status: archived`.
pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let (rows, next) = page::by_id_as(req, &format!("SELECT {AGENT_COLS} FROM agents WHERE business_id = ?1"), params![biz], "id")?;
    ok(&json!({"agents": render(biz, rows)?, "nextCursor": next}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Variable {
    source_id: String,
    field_key: String,
    alias: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssignmentBody {
    pub phone_number_id: Option<String>,
    pub provider_account_id: Option<String>,
    pub auto_reply_enabled: Option<bool>,
    pub human_handoff_active: Option<bool>,
}

/// AgentCreate and AgentUpdate (`agentId` and `assignment` only in one of them;
/// the schema has already refused the other).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AgentBody {
    agent_id: Option<String>,
    channel: String,
    name: String,
    instructions: String,
    language_code: Option<String>,
    #[serde(default)]
    data_source_ids: Vec<String>,
    #[serde(default)]
    contact_category_ids: Vec<String>,
    #[serde(default)]
    data_source_variables: Vec<Variable>,
    voice_settings: Option<Map<String, J>>,
    photoapp_collect_mobile_enabled: Option<bool>,
    #[serde(default)]
    assignment: Option<AssignmentBody>,
}

/// An agent body that passed every rule, ready to store.
struct Checked {
    channel: Channel,
    name: String,
    language_code: String,
    data_source_ids: Vec<String>,
    category_ids: Vec<String>,
    variables: Vec<Variable>,
    contact_context_required: bool,
    voice_settings: Option<String>,
    photoapp_collect_mobile: Option<bool>,
}

/// The first repeated entry of a list, with its index.
fn first_duplicate(items: &[String]) -> Option<(usize, &str)> {
    let mut seen = HashSet::new();
    items.iter().enumerate().find(|(_, s)| !seen.insert(s.as_str())).map(|(i, s)| (i, s.as_str()))
}

/// A data source of this business as an agent sees it.
struct Source {
    built_in: bool,
    structured: bool,
    archived: bool,
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
fn check(biz: &str, b: AgentBody) -> HResult<(Checked, Option<AssignmentBody>)> {
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

/// Replaces the agent's data sources, categories and variables.
fn write_children(biz: &str, agent: &str, c: &Checked) -> HResult<()> {
    let p = params![biz, agent];
    for table in ["agent_data_sources", "agent_categories", "agent_variables"] {
        db::execute(&format!("DELETE FROM {table} WHERE business_id = ?1 AND agent_id = ?2"), &p)?;
    }
    let pos = |i: usize| i as i64;
    db::execute_many(
        "INSERT INTO agent_data_sources (business_id, agent_id, data_source_id, position) VALUES (?1, ?2, ?3, ?4)",
        &c.data_source_ids.iter().enumerate().map(|(i, s)| params![biz, agent, s, pos(i)]).collect::<Vec<_>>(),
    )?;
    db::execute_many(
        "INSERT INTO agent_categories (business_id, agent_id, category_id, position) VALUES (?1, ?2, ?3, ?4)",
        &c.category_ids.iter().enumerate().map(|(i, s)| params![biz, agent, s, pos(i)]).collect::<Vec<_>>(),
    )?;
    db::execute_many(
        "INSERT INTO agent_variables (business_id, agent_id, alias, data_source_id, field_key, position) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        &c.variables.iter().enumerate().map(|(i, v)| params![biz, agent, &v.alias, &v.source_id, &v.field_key, pos(i)]).collect::<Vec<_>>(),
    )?;
    Ok(())
}

/// A reference name not yet used in this business.
fn fresh_reference_name(biz: &str) -> HResult<String> {
    for _ in 0..32 {
        let name = rules::reference_name(&ids::random_bytes(4));
        if db::query_one("SELECT 1 FROM agents WHERE business_id = ?1 AND reference_name = ?2", &params![biz, &name])?.is_none() {
            return Ok(name);
        }
    }
    Err(fail::busy("reference_name_exhausted", "could not generate a unique agent reference name; retry the request"))
}

pub fn create(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: AgentBody = req::body(req)?;
    let instructions = body.instructions.clone();
    let (c, assignment) = check(biz, body)?;
    let channel = c.channel;
    // The assignment target is checked before anything is written.
    let target = match &assignment {
        Some(a) => Some(channels::resolve_target(biz, channel, a.phone_number_id.as_deref(), a.provider_account_id.as_deref(), "assignment.")?),
        None => None,
    };
    let id = new_id();
    let now = now();
    let reference_name = fresh_reference_name(biz)?;
    db::execute_or(
        "INSERT INTO agents (id, business_id, channel, name, instructions, language_code, status, reference_name, \
         contact_context_required, voice_settings_json, photoapp_collect_mobile, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'active', ?7, ?8, ?9, ?10, ?11, ?11)",
        &params![&id, biz, channel, &c.name, instructions, &c.language_code, &reference_name, c.contact_context_required, c.voice_settings.clone(), c.photoapp_collect_mobile, &now],
        || fail::busy("reference_name_taken", "the generated reference name was taken concurrently; retry the request"),
    )?;
    write_children(biz, &id, &c)?;
    let assignment_json = match (assignment, target) {
        (Some(a), Some(target)) => {
            let auto = a.auto_reply_enabled.unwrap_or(true);
            let handoff = a.human_handoff_active.unwrap_or(false);
            channels::write_assignment(biz, channel, &target, Some(&id), auto, handoff, &now)?;
            let (phone, account) = if channel == Channel::Chatapp { (json!(target), J::Null) } else { (J::Null, json!(target)) };
            json!({"channel": channel.name(), "phoneNumberId": phone, "providerAccountId": account, "aiAgentId": id,
                   "autoReplyEnabled": auto, "humanHandoffActive": handoff})
        }
        _ => J::Null,
    };
    let (live, ready) = channels::readiness(biz, channel)?;
    let agent = load(biz, &id)?;
    created(&json!({
        "agent": agent,
        "referenceName": reference_name,
        "channelReadiness": {"channel": channel.name(), "live": live, "ready": ready},
        "assignment": assignment_json,
    }))
}

/// Full replacement of the editable fields; the channel and the reference
/// name never change, and an archived agent cannot be edited.
pub fn update(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: AgentBody = req::body(req)?;
    let id = body.agent_id.clone().ok_or_else(|| fail::invalid_body("`agentId` is required"))?;
    let row = load_row(biz, &id)?.ok_or_else(|| agent_not_found(&id))?;
    if channel(&body.channel)? != row.channel {
        return Err(fail::conflict("channel_immutable", format!("`channel` must be the agent's channel `{}`; an agent's channel cannot change (create a new agent instead)", row.channel)));
    }
    if row.status == "archived" {
        return Err(fail::conflict("agent_archived", format!("agent `{id}` is archived and can no longer be changed")));
    }
    let instructions = body.instructions.clone();
    let (c, _) = check(biz, body)?;
    db::execute(
        "UPDATE agents SET name = ?3, instructions = ?4, language_code = ?5, contact_context_required = ?6, \
         voice_settings_json = ?7, photoapp_collect_mobile = ?8, updated_at = ?9 WHERE business_id = ?1 AND id = ?2",
        &params![biz, &id, &c.name, instructions, &c.language_code, c.contact_context_required, c.voice_settings.clone(), c.photoapp_collect_mobile, now()],
    )?;
    write_children(biz, &id, &c)?;
    ok(&json!({"agent": load(biz, &id)?}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MutationBody {
    agent_id: String,
}

/// Archives an agent and clears the assignments that named it. Archiving an
/// archived agent changes nothing and answers the same record.
pub fn archive(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let body: MutationBody = req::body(req)?;
    let id = body.agent_id.as_str();
    let row = load_row(biz, id)?.ok_or_else(|| agent_not_found(id))?;
    if row.status == "active" {
        let now = now();
        db::execute("UPDATE agents SET status = 'archived', archived_at = ?3, updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, id, &now])?;
        channels::clear_agent_assignments(biz, id, &now)?;
    }
    ok(&json!({"agent": load(biz, id)?}))
}
