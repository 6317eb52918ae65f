//! The call operations: start (38), batch start (39), list (37), report
//! (41), transcript download (42) and cancel (43).
//!
//! A start checks the agent and the target (`resolve.rs`), snapshots the
//! variables once, prepares the greeting, reserves the call's maximum charge
//! (`billing.rs`, 402 when the balance cannot cover it) and enqueues the
//! call's `voice.call` job (its id kept on the call, for the wake-up of a
//! call waiting for a line), all in the request's one transaction: a refused
//! start writes nothing, an accepted one is queued with its money held.
//! Everything after (lines, the carrier, the conversation, the end and the
//! charge) is the job's (`jobs/call/`).

use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use switchboard_agent_runtime::template::Unfilled;
use switchboard_agent_runtime::turn;
use switchboard_guest::db;
use switchboard_guest::{download, fail, job, new_id, now, ok, page, params, recording_links, req, success, HResult, Request, Success};

use crate::billing;
use crate::conversation;
use crate::jobs::{CallRef, VoiceJob};
use crate::model::{self, CallStatus, CarrierState, SUMMARY_COLUMNS};
use crate::resolve::{self, Agent};

/// Each test variable value (spec limit).
pub const TEST_VARIABLE_MAX_CHARS: usize = 500;
/// Contacts of one batch start (spec limit).
pub const BATCH_MAX: usize = 20;
/// Transcript turns per downloaded piece.
const TURNS_PER_PIECE: i64 = 500;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Start {
    #[allow(dead_code)]
    business_id: String,
    agent_id: String,
    contact_id: Option<String>,
    to_number: Option<String>,
    #[serde(default)]
    test_variables: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Batch {
    #[allow(dead_code)]
    business_id: String,
    agent_id: String,
    contact_ids: Vec<String>,
}

/// Who a call is for.
pub enum Target<'a> {
    Contact(&'a str),
    Number(&'a str),
}

/// The campaign member a call is placed for (see the campaigns area): the
/// call ends count for the member only while it still holds `claim`.
pub struct Attribution<'a> {
    pub campaign_id: &'a str,
    pub iteration_id: &'a str,
    pub member_id: &'a str,
    pub claim: i64,
}

/// What every start of one request (or one campaign step) shares: the
/// agent, the account, the checked test variables.
pub struct Plan {
    agent: Agent,
    price: i64,
    caller_number: Option<String>,
    max_duration_s: i64,
    test_variables: BTreeMap<String, String>,
    source: &'static str,
}

impl Plan {
    pub fn new(biz: &str, agent_id: &str, test_variables: BTreeMap<String, String>, source: &'static str) -> HResult<Plan> {
        let agent = resolve::agent(biz, agent_id)?;
        let declared: Vec<String> = db::query_as("SELECT alias FROM agent_variables WHERE business_id = ?1 AND agent_id = ?2", &params![biz, &agent.id])?;
        for (alias, value) in &test_variables {
            if !declared.contains(alias) {
                return Err(fail::conflict("test_variable_not_declared", format!("`testVariables.{}`: the agent declares no variable of that alias", fail::quote(alias, 64))));
            }
            if value.chars().count() > TEST_VARIABLE_MAX_CHARS {
                return Err(fail::validation("test_variable_too_long", format!("`testVariables.{alias}` is longer than {TEST_VARIABLE_MAX_CHARS} characters")));
            }
        }
        let account = billing::account(biz)?;
        if account.lines < 1 {
            return Err(fail::conflict("no_voice_lines", "the business has no voice lines; an operator adds them with `switchboard admin voice configure --lines N`"));
        }
        let max_duration_s = conversation::max_duration_s(&agent.settings);
        Ok(Plan { agent, price: account.price_per_block, caller_number: account.caller_number, max_duration_s, test_variables, source })
    }

    /// What one call of this plan reserves before it is dialled.
    pub fn reservation(&self) -> i64 {
        billing::maximum_charge(self.max_duration_s, self.price)
    }

    /// Checks the target, snapshots its variables, reserves the maximum and
    /// queues the call. Returns (call id, destination, contact id).
    pub fn start(&self, biz: &str, target: Target) -> HResult<(String, String, Option<String>)> {
        self.start_for(biz, target, None)
    }

    /// [`Plan::start`], for a campaign member when `member` is given.
    pub fn start_for(&self, biz: &str, target: Target, member: Option<&Attribution>) -> HResult<(String, String, Option<String>)> {
        let (destination, contact, mut values) = match target {
            Target::Contact(id) => {
                let c = resolve::contact(biz, &self.agent, id)?;
                (c.mobile, Some((c.id, c.name)), c.values)
            }
            Target::Number(number) => {
                if self.agent.contact_required {
                    return Err(fail::conflict("contact_required", "the agent uses contact-backed variables, so it can only call contacts; start the call with `contactId`"));
                }
                (number.to_string(), None, BTreeMap::new())
            }
        };
        // Explicit test values win over the contact's.
        values.extend(self.test_variables.clone());
        let greeting = turn::greeting(&self.agent.settings, &values).map_err(|e| match e {
            Unfilled::Missing(alias) => fail::conflict("variable_missing", format!("the greeting uses `{{{{{alias}}}}}`, which has no value for this call")),
            // Never for an agent the API wrote: the agents area checks greetings with the same parser.
            Unfilled::Invalid(e) => fail::conflict("invalid_greeting", format!("the agent's greeting cannot be filled ({e}); update the agent")),
        })?;
        let id = new_id();
        let reserve = self.reservation();
        billing::reserve(biz, &id, reserve)?;
        let (contact_id, contact_name) = contact.clone().unzip();
        // The job's id is kept on the call: the step that frees a line
        // wakes the oldest waiting call through it (`jobs/call/wake.rs`).
        let job_id = job::enqueue(biz, &VoiceJob::Call(CallRef { call_id: id.clone() }))?;
        db::execute(
            "INSERT INTO calls (business_id, id, agent_id, agent_name, contact_id, contact_name, source, callee_number, caller_number, status, \
                                variables_json, call_data_json, settings_json, greeting, max_duration_s, price_per_block, reserved, created_at, \
                                job_id, campaign_id, iteration_id, member_id, member_claim) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'queued', ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
            &params![
                biz,
                &id,
                &self.agent.id,
                &self.agent.name,
                contact_id.as_deref(),
                contact_name.as_deref(),
                self.source,
                &destination,
                self.caller_number.as_deref(),
                json!(values).to_string(),
                json!(self.test_variables).to_string(),
                Value::Object(self.agent.settings.clone()).to_string(),
                greeting,
                self.max_duration_s,
                self.price,
                reserve,
                now(),
                &job_id,
                member.map(|m| m.campaign_id),
                member.map(|m| m.iteration_id),
                member.map(|m| m.member_id),
                member.map(|m| m.claim),
            ],
        )?;
        Ok((id, destination, contact_id))
    }
}

/// 38: one call to a contact or a number.
pub fn start(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let body: Start = req::body(r)?;
    let target = match (&body.contact_id, &body.to_number) {
        (Some(c), None) => Target::Contact(c),
        (None, Some(n)) => Target::Number(n),
        _ => return Err(fail::validation("call_target_required", "give exactly one of `contactId` and `toNumber`")),
    };
    let plan = Plan::new(biz, &body.agent_id, body.test_variables, "api")?;
    let (call_id, destination, _) = plan.start(biz, target)?;
    success(202, &json!({"callId": call_id, "destination": destination, "status": "queued"}))
}

/// 39: up to 20 contacts, each on its own; a contact that cannot be called
/// is listed with its reason and the others go ahead.
pub fn batch(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let body: Batch = req::body(r)?;
    if body.contact_ids.is_empty() || body.contact_ids.len() > BATCH_MAX {
        return Err(fail::validation("invalid_batch_size", format!("`contactIds` must list 1 to {BATCH_MAX} contacts")));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = body.contact_ids.iter().find(|c| !seen.insert(c.to_ascii_lowercase())) {
        return Err(fail::validation("duplicate_contact", format!("`contactIds` lists {dup} twice")));
    }
    let plan = Plan::new(biz, &body.agent_id, BTreeMap::new(), "batch")?;
    let (mut accepted, mut failures) = (Vec::new(), Vec::new());
    for contact in &body.contact_ids {
        match plan.start(biz, Target::Contact(contact)) {
            Ok((call_id, destination, _)) => accepted.push(json!({"contactId": contact.to_ascii_lowercase(), "callId": call_id, "destination": destination, "status": "queued"})),
            Err(f) => failures.push(json!({"contactId": contact.to_ascii_lowercase(), "code": f.code, "message": f.message})),
        }
    }
    success(202, &json!({"accepted": accepted, "failures": failures}))
}

/// 37: newest first, filtered.
pub fn list(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM calls c WHERE c.business_id = ?1");
    let mut params: Vec<switchboard_guest::Value> = params![biz];
    req::narrow(
        r,
        &mut sql,
        &mut params,
        &[
            ("status", "c.status", false),
            ("agentId", "c.agent_id", true),
            ("contactId", "c.contact_id", true),
            ("campaignId", "c.campaign_id", true),
            ("endedBy", "c.ended_by", false),
            ("endReason", "c.end_reason", false),
        ],
    )?;
    let (rows, next) = page::by_id_newest_first(r, &sql, params, "c.id")?;
    let calls: Vec<Value> = rows.iter().map(model::summary).collect();
    ok(&json!({"calls": calls, "nextCursor": next}))
}

fn call_id(r: &Request) -> HResult<String> {
    Ok(req::path_uuid(r, "callId", "call_not_found", "call")?.to_ascii_lowercase())
}

/// 41: the summary and the transcript.
pub fn get(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = call_id(r)?;
    let row = model::one(biz, &id)?;
    let transcript: Vec<Value> = model::transcript(biz, &id, None)?.iter().map(model::Turn::json).collect();
    let mut detail = Map::new();
    detail.insert("call".into(), model::summary(&row));
    detail.insert("transcript".into(), Value::Array(transcript));
    // Signed by the host, valid five minutes from this read.
    if let Some(file) = model::recording_file(&row) {
        let links = recording_links::sign(biz, &id, &file);
        detail.insert("recordingUrl".into(), Value::String(links.url));
        detail.insert("recordingDownloadUrl".into(), Value::String(links.download_url));
        detail.insert("recordingFilename".into(), Value::String(file));
    }
    ok(&Value::Object(detail))
}

/// 42: the canonical transcript as text (the report's turns in the report's
/// order), streamed in pieces of turns; every piece reads the same snapshot,
/// so the cursor is the number of turns already sent.
pub fn transcript(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = call_id(r)?;
    let sent: i64 = match download::cursor(r) {
        None => {
            model::one(biz, &id)?;
            0
        }
        Some(c) => c.parse().map_err(|_| fail::internal("bad_cursor", "bad download cursor"))?,
    };
    // One turn more than a piece holds says whether another piece follows.
    let turns = model::transcript(biz, &id, Some((sent, TURNS_PER_PIECE + 1)))?;
    if sent == 0 && turns.is_empty() {
        return Err(fail::not_found("transcript_not_available", format!("call `{id}` has no transcript turns yet")));
    }
    let more = turns.len() as i64 > TURNS_PER_PIECE;
    let turns = &turns[..turns.len().min(TURNS_PER_PIECE as usize)];
    let text: String = turns.iter().map(model::Turn::line).collect();
    let next = more.then(|| (sent + turns.len() as i64).to_string());
    download::piece("text/plain; charset=utf-8", Some(&download::attachment(&format!("call-{id}-transcript.txt"))), text.into_bytes(), next)
}

/// 43: a call that has no carrier call yet is cancelled at once (its
/// reservation released); one that has is `cancelling`: the intent is
/// stored here, before anything calls the carrier, and the call's job hangs
/// up and reports the end.
pub fn cancel(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let id = call_id(r)?;
    let status = request_cancel(biz, &id)?;
    ok(&json!({"callId": id, "status": status}))
}

/// Cancels call `id` as an operator (43, and a cancelled campaign
/// iteration): `cancelled` at once without a carrier call, else
/// `cancelling` (the call's job hangs up). 409 once it has ended.
pub fn request_cancel(biz: &str, id: &str) -> HResult<&'static str> {
    let (stored, carrier_state, reserved) = db::query_one_as::<(String, String, i64)>("SELECT status, carrier_state, reserved FROM calls WHERE business_id = ?1 AND id = ?2", &params![biz, id])?
        .ok_or_else(|| model::call_not_found(id))?;
    let status = CallStatus::parse(&stored);
    if status.is_none_or(CallStatus::is_terminal) {
        return Err(fail::conflict("call_already_ended", format!("call `{id}` has already ended ({stored})")));
    }
    if status == Some(CallStatus::Cancelling) {
        return Ok(CallStatus::Cancelling.as_str());
    }
    if CarrierState::parse(&carrier_state) == Some(CarrierState::None) {
        billing::settle(biz, id, reserved, 0)?;
        db::execute(
            "UPDATE calls SET status = 'cancelled', ended_by = 'operator', end_reason = 'operator_cancelled', end_intent = 'operator', \
                              reserved = 0, holds_line = 0, ended_at = ?3 WHERE business_id = ?1 AND id = ?2",
            &params![biz, id, now()],
        )?;
        crate::jobs::call::append_timeline(biz, id)?;
        // It may have been the call a freed line woke: the next one goes.
        crate::jobs::call::wake::next_waiting(biz)?;
        return Ok(CallStatus::Cancelled.as_str());
    }
    db::execute("UPDATE calls SET status = 'cancelling', end_intent = 'operator' WHERE business_id = ?1 AND id = ?2", &params![biz, id])?;
    Ok(CallStatus::Cancelling.as_str())
}
