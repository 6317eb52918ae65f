//! `messaging.agent-test-reply`: the agent under test answers one pending
//! turn of a console test conversation (`agent_test.rs`), with the turn a
//! real conversation of its channel gets: [`turn::answer`] over the
//! last [`HISTORY`] turns, grounded in the agent's sources; a voice agent's
//! turn also gets the call's instructions and the conversation's
//! `testVariables`. The reply is written to the test turn only.

use switchboard_agent_runtime::turn::{self, Turn};
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::job::{retry, run_step};
use switchboard_guest::job_types::{Job, Outcome};
use switchboard_guest::params;

use super::autoreply::HISTORY;
use crate::agent_test;

/// `ai` failures are retried this many times, then the turn shows the error.
const MAX_ATTEMPTS: u32 = 3;

pub fn run(job: &Job, turn_id: &str) -> Outcome {
    run_step("during an agent test reply", || reply(job, turn_id))
}

fn reply(job: &Job, turn_id: &str) -> Result<Outcome, switchboard_guest::Failure> {
    let biz = job.business_id.as_str();
    let Some((user, agent_id)) =
        db::query_one_as::<(String, String)>("SELECT user_id, agent_id FROM agent_test_messages WHERE business_id = ?1 AND id = ?2 AND status = 'pending'", &params![biz, turn_id])?
    else {
        // Reset (or answered) meanwhile.
        return Ok(Outcome::Done);
    };
    let agent = match agent_test::agent(biz, &agent_id) {
        Ok(a) => a,
        Err(_) => return finish(biz, turn_id, Err("the agent was archived".into()), None),
    };
    let mut history: Vec<(String, String)> = db::query_as(
        &format!(
            "SELECT role, text FROM agent_test_messages WHERE business_id = ?1 AND user_id = ?2 AND agent_id = ?3 \
             AND id < ?4 AND status = 'done' AND text IS NOT NULL ORDER BY id DESC LIMIT {HISTORY}"
        ),
        &params![biz, &user, &agent_id, turn_id],
    )?;
    history.reverse();
    let variables = if agent.channel == Channel::Voice { agent_test::variables(biz, &user, &agent_id)? } else { Default::default() };
    let turn = match agent.channel {
        Channel::Voice => Turn::Call { variables: &variables },
        // As a real photoapp reply is told (`autoreply::eligible`).
        Channel::Photoapp => Turn::Message { collect_mobile: agent.collect_mobile },
        _ => Turn::Message { collect_mobile: false },
    };
    match turn::answer(biz, &agent.id, &agent.instructions, turn, &history)? {
        Ok(r) => finish(biz, turn_id, Ok(r.text), r.used),
        Err(e) if job.attempt >= MAX_ATTEMPTS => finish(biz, turn_id, Err(format!("the AI provider failed: {}", short(&e))), None),
        Err(e) => Ok(retry(job.attempt, format!("ai: {e}"))),
    }
}

fn short(e: &str) -> String {
    e.chars().take(300).collect()
}

fn finish(biz: &str, turn_id: &str, outcome: Result<String, String>, used: Option<String>) -> Result<Outcome, switchboard_guest::Failure> {
    let (text, status, error) = match outcome {
        Ok(t) => (Some(t), "done", None),
        Err(e) => (None, "failed", Some(e)),
    };
    db::execute(
        "UPDATE agent_test_messages SET text = ?3, status = ?4, error = ?5, grounding_json = ?6 WHERE business_id = ?1 AND id = ?2 AND status = 'pending'",
        &[biz.into(), turn_id.into(), text.into(), status.into(), error.into(), used.into()],
    )?;
    Ok(Outcome::Done)
}
