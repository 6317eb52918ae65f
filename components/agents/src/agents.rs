//! listAgents, createAgent, updateAgent, archiveAgent.

use std::collections::HashMap;
use switchboard_guest::row_struct;

use serde::Deserialize;
use serde_json::{json, Value as J};
use switchboard_channel_connections::Channel;
use switchboard_guest::db::{self};
use switchboard_guest::page;
use switchboard_guest::{created, fail, ids, new_id, now, ok, params, req, Failure, FromRow, HResult, Request, Success, Value};

use crate::body::{channel, check, AgentBody, Checked, CHUNK};
use crate::channels;
use crate::rules::{self, quote};

/// Columns of an agent row, in the order [`AgentRow`] reads them.
pub const AGENT_COLS: &str = "id, channel, name, instructions, language_code, status, reference_name, \
    contact_context_required, voice_settings_json, photoapp_collect_mobile, created_at, updated_at, archived_at";

row_struct! {
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
}

pub fn agent_not_found(id: &str) -> Failure {
    fail::not_found("agent_not_found", format!("agent `{}` not found", quote(id, 64)))
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
    let (rows, next) = page::by_id::<AgentRow>(req, &format!("SELECT {AGENT_COLS} FROM agents WHERE business_id = ?1"), params![biz], "id")?;
    ok(&json!({"agents": render(biz, rows)?, "nextCursor": next}))
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
