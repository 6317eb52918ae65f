//! Console-only agent testing (operations 57-59; the contract: "Console-only
//! agent testing uses logged-in session routes, not API-key routes"). The
//! gateway lets only a logged-in console session reach these operations and
//! names its user in `caller`: each user has one test conversation per agent.
//!
//! A turn stores what the tester said and a `pending` assistant turn, and
//! queues `messaging.agent-test-reply` ([`crate::jobs::test_reply`]), which
//! answers with the same grounded turn a real conversation gets (the agent's
//! instructions, data sources and the `lookup` tool, the last
//! [`HISTORY`](crate::jobs::autoreply::HISTORY) turns). A voice agent's
//! conversation opens with its greeting, filled with `testVariables`, and
//! its turns get the voice instructions. Nothing here touches contacts,
//! conversations, messages, timelines or the event outbox, so a test never
//! reaches a customer, a webhook or a contact's timeline.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value as J};
use switchboard_agent_runtime::template::Unfilled;
use switchboard_agent_runtime::turn;
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::job_kinds::messaging::{MessagingJob, TestTurnRef};
use switchboard_guest::{fail, job, new_id, now, params, req, success, Failure, HResult, Request, Success};

/// Turns a test conversation shows (the contract: at most 40 visible).
pub const VISIBLE: usize = 40;
/// A tester may not queue another turn while this many replies are pending.
const MAX_PENDING: i64 = 1;

/// The agent under test.
pub struct Agent {
    pub id: String,
    pub name: String,
    pub channel: Channel,
    pub instructions: String,
    pub settings: serde_json::Map<String, J>,
    /// A photoapp agent that asks for the customer's mobile.
    pub collect_mobile: bool,
}

/// The agent named by the path, unless archived or of another business.
pub fn agent(biz: &str, agent_id: &str) -> Result<Agent, Failure> {
    let row = db::query_one_as::<(String, String, Channel, String, Option<String>, bool)>(
        "SELECT id, name, channel, instructions, voice_settings_json, IFNULL(photoapp_collect_mobile, 0) FROM agents WHERE business_id = ?1 AND id = ?2 AND status = 'active'",
        &params![biz, agent_id.to_ascii_lowercase()],
    )?;
    let Some((id, name, channel, instructions, settings, collect_mobile)) = row else { return Err(fail::not_found("agent_not_found", "agent not found (or archived)")) };
    let settings = settings.and_then(|t| serde_json::from_str::<J>(&t).ok()).and_then(|v| v.as_object().cloned()).unwrap_or_default();
    Ok(Agent { id, name, channel, instructions, settings, collect_mobile })
}

fn caller(req: &Request) -> Result<&str, Failure> {
    // The gateway admits these operations only for a console session.
    req.caller.as_deref().ok_or_else(|| fail::forbidden("session_required", "agent testing takes a logged-in console session"))
}

fn agent_id(req: &Request) -> Result<&str, Failure> {
    req::path_uuid(req, "agentId", "agent_not_found", "agent")
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Said {
    text: String,
    #[serde(default)]
    test_variables: Option<BTreeMap<String, String>>,
}

/// Operation 57: the conversation as it stands.
pub fn get(req: &Request) -> HResult<Success> {
    let agent = agent(&req.business_id, agent_id(req)?)?;
    success(200, &conversation(&req.business_id, caller(req)?, &agent)?)
}

/// Operation 58: the tester says something; the agent's reply is queued.
pub fn say(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let user = caller(req)?;
    let agent = agent(biz, agent_id(req)?)?;
    let said: Said = req::body(req)?;
    let text = said.text.trim();
    if text.is_empty() {
        return Err(fail::validation("text_required", "`text` must hold more than white space"));
    }
    let pending = db::query_one_as::<i64>("SELECT COUNT(*) FROM agent_test_messages WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3 AND status = 'pending'", &params![biz, user, &agent.id])?
        .unwrap_or(0);
    if pending >= MAX_PENDING {
        return Err(fail::conflict("agent_test_reply_pending", "the agent is still answering your last message; wait for its reply"));
    }
    let variables = match said.test_variables {
        Some(v) => {
            check_variables(biz, &agent, &v)?;
            v
        }
        None => variables(biz, user, &agent.id)?,
    };
    let vars_json = serde_json::to_string(&variables).unwrap_or_else(|_| "{}".into());
    let started = db::query_one("SELECT 1 FROM agent_test_messages WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3 LIMIT 1", &[biz.into(), user.into(), agent.id.as_str().into()])?.is_some();
    let at = now();
    // A voice call opens with the agent's greeting (the call's variables
    // filled in), before the customer says anything.
    if !started && agent.channel == Channel::Voice {
        let greeting = turn::greeting(&agent.settings, &variables).map_err(|e| match e {
            Unfilled::Missing(alias) => fail::conflict("variable_missing", format!("the greeting uses `{{{{{alias}}}}}`: give it a value in `testVariables`")),
            // Never for an agent the API wrote: the agents area checks greetings with the same parser.
            Unfilled::Invalid(e) => fail::conflict("invalid_greeting", format!("the agent's greeting cannot be filled ({e}); update the agent")),
        })?;
        if let Some(greeting) = greeting {
            insert(biz, user, &agent.id, "assistant", Some(&greeting), "done", None, &at)?;
        }
    }
    insert(biz, user, &agent.id, "user", Some(text), "done", Some(&vars_json), &at)?;
    let reply = insert(biz, user, &agent.id, "assistant", None, "pending", None, &at)?;
    // Only what can be shown is kept: a long test session stays small.
    db::execute(
        &format!(
            "DELETE FROM agent_test_messages WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3 AND id NOT IN \
             (SELECT id FROM agent_test_messages WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3 ORDER BY id DESC LIMIT {VISIBLE})"
        ),
        &[biz.into(), user.into(), agent.id.as_str().into()],
    )?;
    job::enqueue(biz, &MessagingJob::AgentTestReply(TestTurnRef { turn_id: reply }))?;
    success(202, &conversation(biz, user, &agent)?)
}

/// Operation 59: forget the conversation (and its variables).
pub fn reset(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let user = caller(req)?;
    let agent = agent(biz, agent_id(req)?)?;
    // A reply still pending finds its turn gone and ends quietly.
    db::execute("DELETE FROM agent_test_messages WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3", &[biz.into(), user.into(), agent.id.as_str().into()])?;
    success(200, &conversation(biz, user, &agent)?)
}

/// Declared variables only (as a test call checks them), each at most 500
/// characters (the schema says so too).
fn check_variables(biz: &str, agent: &Agent, given: &BTreeMap<String, String>) -> Result<(), Failure> {
    if given.is_empty() {
        return Ok(());
    }
    let declared: Vec<String> = db::query_as("SELECT alias FROM agent_variables WHERE business_id = ?1 AND agent_id = ?2", &params![biz, &agent.id])?;
    for alias in given.keys() {
        if !declared.contains(alias) {
            return Err(fail::conflict("test_variable_not_declared", format!("`testVariables.{}`: the agent declares no variable of that alias", fail::quote(alias, 64))));
        }
    }
    Ok(())
}

/// The variables of the conversation: those of its latest user turn.
pub fn variables(biz: &str, user: &str, agent_id: &str) -> Result<BTreeMap<String, String>, Failure> {
    let vars = db::query_one_as::<Option<String>>(
        "SELECT variables_json FROM agent_test_messages WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3 AND role = 'user' \
         ORDER BY id DESC LIMIT 1",
        &params![biz, user, agent_id],
    )?;
    Ok(vars.flatten().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default())
}

#[allow(clippy::too_many_arguments)]
fn insert(biz: &str, user: &str, agent_id: &str, role: &str, text: Option<&str>, status: &str, vars: Option<&str>, at: &str) -> Result<String, Failure> {
    let id = new_id();
    db::execute(
        "INSERT INTO agent_test_messages (business_id, id, user_id, agent_id, role, text, status, variables_json, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        &[biz.into(), id.as_str().into(), user.into(), agent_id.into(), role.into(), text.into(), status.into(), vars.into(), at.into()],
    )?;
    Ok(id)
}

/// A turn as [`conversation`] reads it: id, role, text, status, error,
/// grounding (JSON), created at.
type Turn = (String, String, Option<String>, String, Option<String>, Option<String>, String);

fn turn((id, role, text, status, error, grounding, created_at): &Turn) -> J {
    json!({
        "id": id,
        "role": role,
        "text": text,
        "status": status,
        "error": error,
        "grounding": grounding.as_deref().and_then(|t| serde_json::from_str::<J>(t).ok()).filter(J::is_object),
        "createdAt": created_at,
    })
}

/// The last [`VISIBLE`] turns, oldest first.
fn conversation(biz: &str, user: &str, agent: &Agent) -> Result<J, Failure> {
    let rows: Vec<Turn> = db::query_as(
        &format!(
            "SELECT id, role, text, status, error, grounding_json, created_at FROM agent_test_messages \
             WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3 ORDER BY id DESC LIMIT {VISIBLE}"
        ),
        &params![biz, user, &agent.id],
    )?;
    let mut messages: Vec<J> = rows.iter().map(turn).collect();
    messages.reverse();
    let pending = rows.iter().any(|r| r.3 == "pending");
    Ok(json!({
        "agentId": agent.id,
        "agentName": agent.name,
        "channel": agent.channel.name(),
        "testVariables": variables(biz, user, &agent.id)?,
        "messages": messages,
        "pending": pending,
    }))
}
