//! listAgents, createAgent, updateAgent, archiveAgent.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{json, Map, Value as J};
use switchboard_channel_connections::Channel;
use switchboard_guest::db::{self, Row, RowExt};
use switchboard_guest::page;
use switchboard_guest::{created, fail, ids, new_id, now, ok, req, Failure, HResult, Request, Success, Value};

use crate::channels;
use crate::rules::{self, quote, Violation};

/// Columns of an agent row, in the order [`render`] reads them.
pub const AGENT_COLS: &str = "id, channel, name, instructions, language_code, status, reference_name, \
    contact_context_required, voice_settings_json, photoapp_collect_mobile, created_at, updated_at, archived_at";

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
pub fn rows_by_id(cols: &str, table: &str, biz: &str, ids: &[&str]) -> HResult<Vec<Row>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(CHUNK) {
        let mut params: Vec<Value> = vec![biz.into()];
        params.extend(chunk.iter().map(|s| Value::from(*s)));
        let sql = format!("SELECT {cols} FROM {table} WHERE business_id = ?1 AND id IN ({})", db::placeholders(2, chunk.len()));
        out.extend(db::query(&sql, &params)?);
    }
    Ok(out)
}

/// Children rows (`SELECT agent_id, {cols} FROM {table} WHERE business_id = ?1
/// AND agent_id IN (...) ORDER BY agent_id, position`) grouped by agent.
fn children(table: &str, cols: &str, biz: &str, agent_ids: &[&str]) -> HResult<HashMap<String, Vec<Row>>> {
    let mut out: HashMap<String, Vec<Row>> = HashMap::new();
    for chunk in agent_ids.chunks(CHUNK) {
        let mut params: Vec<Value> = vec![biz.into()];
        params.extend(chunk.iter().map(|s| Value::from(*s)));
        let sql = format!("SELECT agent_id, {cols} FROM {table} WHERE business_id = ?1 AND agent_id IN ({}) ORDER BY agent_id, position", db::placeholders(2, chunk.len()));
        for r in db::query(&sql, &params)? {
            out.entry(r.text(0)).or_default().push(r);
        }
    }
    Ok(out)
}

/// Renders agent rows (selected with [`AGENT_COLS`]) with their data sources,
/// categories and variables: three queries whatever the number of rows.
pub fn render(biz: &str, rows: &[Row]) -> HResult<Vec<J>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = rows.iter().map(|r| r.text(0)).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut sources = children("agent_data_sources", "data_source_id", biz, &ids)?;
    let mut categories = children("agent_categories", "category_id", biz, &ids)?;
    let mut variables = children("agent_variables", "data_source_id, field_key, alias", biz, &ids)?;
    Ok(rows
        .iter()
        .map(|r| {
            let id = r.text(0);
            let channel = r.text(1);
            let kind = Channel::parse(&channel);
            let voice = r.opt_text(8).and_then(|t| serde_json::from_str::<J>(&t).ok()).filter(J::is_object);
            let voice = if kind == Some(Channel::Voice) { voice.unwrap_or_else(|| J::Object(rules::voice_settings(None, &[]).unwrap_or_default())) } else { J::Null };
            let collect = if kind == Some(Channel::Photoapp) { json!(r.opt_int(9).unwrap_or(1) != 0) } else { J::Null };
            let ids_of = |m: &mut HashMap<String, Vec<Row>>| -> Vec<J> { m.remove(&id).unwrap_or_default().iter().map(|c| json!(c.text(1))).collect() };
            let data_source_ids = ids_of(&mut sources);
            let category_ids = ids_of(&mut categories);
            let vars: Vec<J> = variables.remove(&id).unwrap_or_default().iter().map(|c| json!({"sourceId": c.text(1), "fieldKey": c.text(2), "alias": c.text(3)})).collect();
            json!({
                "id": id,
                "businessId": biz,
                "channel": channel,
                "name": r.text(2),
                "instructions": r.text(3),
                "languageCode": r.text(4),
                "status": r.text(5),
                "referenceName": r.text(6),
                "contactContextRequired": r.boolean(7),
                "dataSourceIds": data_source_ids,
                "contactCategoryIds": category_ids,
                "dataSourceVariables": vars,
                "voiceSettings": voice,
                "photoappCollectMobileEnabled": collect,
                "createdAt": r.text(10),
                "updatedAt": r.text(11),
                "archivedAt": r.opt_text(12),
            })
        })
        .collect())
}

/// One agent row of this business.
pub fn load_row(biz: &str, id: &str) -> HResult<Option<Row>> {
    db::query_one(&format!("SELECT {AGENT_COLS} FROM agents WHERE business_id = ?1 AND id = ?2"), &[biz.into(), id.into()])
}

fn load(biz: &str, id: &str) -> HResult<J> {
    let row = load_row(biz, id)?.ok_or_else(|| agent_not_found(id))?;
    Ok(render(biz, &[row])?.remove(0))
}

/// Agents in creation order (ids are uuid v7), archived ones included with
/// `status: archived`.
pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let (rows, next) = page::by_id(req, &format!("SELECT {AGENT_COLS} FROM agents WHERE business_id = ?1"), vec![biz.into()], "id")?;
    ok(&json!({"agents": render(biz, &rows)?, "nextCursor": next}))
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
    Ok(rows_by_id("id, built_in, class, status", "data_sources", biz, ids)?
        .iter()
        .map(|r| (r.text(0), Source { built_in: r.boolean(1), structured: r.text(2) == "structured", archived: r.text(3) == "archived" }))
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
        return Ok(db::query_one("SELECT 1 FROM contact_fields WHERE business_id = ?1 AND field_key = ?2", &[biz.into(), key.into()])?.is_some());
    }
    Ok(db::query_one("SELECT 1 FROM data_source_fields WHERE business_id = ?1 AND data_source_id = ?2 AND field_key = ?3", &[biz.into(), source_id.into(), key.into()])?.is_some())
}

/// Every rule of an agent body that the schema cannot express.
fn check(biz: &str, b: AgentBody) -> HResult<(Checked, Option<AssignmentBody>)> {
    let name = rules::agent_name(&b.name).map_err(violation)?;
    rules::instructions(&b.instructions).map_err(violation)?;
    let language_code = rules::language_code(b.language_code.as_deref()).map_err(violation)?;
    let channel = channel(&b.channel)?;
    // The document states these two (one body shape per channel) and the
    // gateway refuses them first; kept so no caller can store a mismatch.
    if b.voice_settings.is_some() && channel != Channel::Voice {
        return Err(fail::validation("voice_settings_not_allowed", format!("`voiceSettings` applies to voice agents only; this agent's channel is `{channel}`")));
    }
    if b.photoapp_collect_mobile_enabled.is_some() && channel != Channel::Photoapp {
        return Err(fail::validation("photoapp_setting_not_allowed", format!("`photoappCollectMobileEnabled` applies to photoapp agents only; this agent's channel is `{channel}`")));
    }

    // Data sources: unique, existing, of this business, not archived.
    if let Some((i, id)) = first_duplicate(&b.data_source_ids) {
        return Err(fail::validation("duplicate_data_source_id", format!("`dataSourceIds[{i}]`: data source `{}` is listed twice", quote(id, 64))));
    }
    let ids: Vec<&str> = b.data_source_ids.iter().map(String::as_str).collect();
    let found = load_sources(biz, &ids)?;
    for (i, id) in ids.iter().enumerate() {
        match found.get(*id) {
            None => return Err(source_not_found(&format!("dataSourceIds[{i}]"), id)),
            Some(s) if s.archived => return Err(source_archived(&format!("dataSourceIds[{i}]"), id)),
            Some(_) => {}
        }
    }

    // Contact categories: unique, existing, of this business.
    if let Some((i, id)) = first_duplicate(&b.contact_category_ids) {
        return Err(fail::validation("duplicate_category_id", format!("`contactCategoryIds[{i}]`: category `{}` is listed twice", quote(id, 64))));
    }
    let cids: Vec<&str> = b.contact_category_ids.iter().map(String::as_str).collect();
    let known: HashSet<String> = rows_by_id("id", "categories", biz, &cids)?.iter().map(|r| r.text(0)).collect();
    if let Some((i, id)) = cids.iter().enumerate().find(|(_, id)| !known.contains(**id)) {
        return Err(fail::not_found("category_not_found", format!("`contactCategoryIds[{i}]`: category `{}` not found", quote(id, 64))));
    }

    // Declared variables: unique aliases, a structured source of this
    // business, a field that exists in it.
    let aliases: Vec<String> = b.data_source_variables.iter().map(|v| v.alias.clone()).collect();
    if let Some((i, alias)) = first_duplicate(&aliases) {
        return Err(fail::validation("duplicate_alias", format!("`dataSourceVariables[{i}].alias`: alias `{}` is declared twice; aliases must be unique", quote(alias, 64))));
    }
    let mut var_sources: Vec<&str> = b.data_source_variables.iter().map(|v| v.source_id.as_str()).collect();
    var_sources.sort_unstable();
    var_sources.dedup();
    let var_found = load_sources(biz, &var_sources)?;
    let mut checked_pairs: HashSet<(&str, &str)> = HashSet::new();
    for (i, v) in b.data_source_variables.iter().enumerate() {
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
    // Every declared variable is contact-backed: a Contacts variable is the
    // called contact's field, one of another structured source the field of
    // the contact's row of that source (the voice area's `resolve`). A call
    // to a bare number has no contact, hence no value for any of them.
    let contact_context_required = !b.data_source_variables.is_empty();

    // Channel-specific settings.
    let voice_settings = if channel == Channel::Voice {
        let alias_refs: Vec<&str> = aliases.iter().map(String::as_str).collect();
        let eff = rules::voice_settings(b.voice_settings.as_ref(), &alias_refs).map_err(violation)?;
        if contact_context_required && b.contact_category_ids.is_empty() {
            return Err(fail::validation(
                "contact_categories_required",
                "`contactCategoryIds` must name at least one category: a voice agent that declares variables (each one is read from the contact called) must be scoped to contact categories",
            ));
        }
        Some(J::Object(eff).to_string())
    } else {
        None
    };
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

/// Replaces the agent's data sources, categories and variables.
fn write_children(biz: &str, agent: &str, c: &Checked) -> HResult<()> {
    let p = [Value::from(biz), Value::from(agent)];
    for table in ["agent_data_sources", "agent_categories", "agent_variables"] {
        db::execute(&format!("DELETE FROM {table} WHERE business_id = ?1 AND agent_id = ?2"), &p)?;
    }
    let pos = |i: usize| Value::Integer(i as i64);
    db::execute_many(
        "INSERT INTO agent_data_sources (business_id, agent_id, data_source_id, position) VALUES (?1, ?2, ?3, ?4)",
        &c.data_source_ids.iter().enumerate().map(|(i, s)| vec![biz.into(), agent.into(), s.into(), pos(i)]).collect::<Vec<_>>(),
    )?;
    db::execute_many(
        "INSERT INTO agent_categories (business_id, agent_id, category_id, position) VALUES (?1, ?2, ?3, ?4)",
        &c.category_ids.iter().enumerate().map(|(i, s)| vec![biz.into(), agent.into(), s.into(), pos(i)]).collect::<Vec<_>>(),
    )?;
    db::execute_many(
        "INSERT INTO agent_variables (business_id, agent_id, alias, data_source_id, field_key, position) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        &c.variables.iter().enumerate().map(|(i, v)| vec![biz.into(), agent.into(), v.alias.as_str().into(), v.source_id.as_str().into(), v.field_key.as_str().into(), pos(i)]).collect::<Vec<_>>(),
    )?;
    Ok(())
}

/// A reference name not yet used in this business.
fn fresh_reference_name(biz: &str) -> HResult<String> {
    for _ in 0..32 {
        let name = rules::reference_name(&ids::random_bytes(4));
        if db::query_one("SELECT 1 FROM agents WHERE business_id = ?1 AND reference_name = ?2", &[biz.into(), name.as_str().into()])?.is_none() {
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
        &[
            id.as_str().into(),
            biz.into(),
            channel.name().into(),
            c.name.as_str().into(),
            instructions.into(),
            c.language_code.as_str().into(),
            reference_name.as_str().into(),
            c.contact_context_required.into(),
            c.voice_settings.clone().into(),
            c.photoapp_collect_mobile.into(),
            now.as_str().into(),
        ],
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
    let (current_channel, status) = (row.text(1), row.text(5));
    if Some(channel(&body.channel)?) != Channel::parse(&current_channel) {
        return Err(fail::conflict("channel_immutable", format!("`channel` must be the agent's channel `{current_channel}`; an agent's channel cannot change (create a new agent instead)")));
    }
    if status == "archived" {
        return Err(fail::conflict("agent_archived", format!("agent `{id}` is archived and can no longer be changed")));
    }
    let instructions = body.instructions.clone();
    let (c, _) = check(biz, body)?;
    db::execute(
        "UPDATE agents SET name = ?3, instructions = ?4, language_code = ?5, contact_context_required = ?6, \
         voice_settings_json = ?7, photoapp_collect_mobile = ?8, updated_at = ?9 WHERE business_id = ?1 AND id = ?2",
        &[
            biz.into(),
            id.as_str().into(),
            c.name.as_str().into(),
            instructions.into(),
            c.language_code.as_str().into(),
            c.contact_context_required.into(),
            c.voice_settings.clone().into(),
            c.photoapp_collect_mobile.into(),
            now().into(),
        ],
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
    if row.text(5) == "active" {
        let now = now();
        db::execute("UPDATE agents SET status = 'archived', archived_at = ?3, updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &[biz.into(), id.into(), now.as_str().into()])?;
        channels::clear_agent_assignments(biz, id, &now)?;
    }
    ok(&json!({"agent": load(biz, id)?}))
}
