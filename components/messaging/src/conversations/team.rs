//! listTeamMembers (ours, operation 76): the business's people who can log
//! in to the console, with their role, as the business's database holds
//! them (`team_members`, copied by the host from main's console users at
//! every change, login and console load). The inbox assigns conversations to
//! them (owners and support agents) and names who sent a message.

use serde_json::json;
use switchboard_guest::db;
use switchboard_guest::{ok, params, HResult, Request, Success};

pub fn list(r: &Request) -> HResult<Success> {
    let rows: Vec<(String, String, String)> = db::query_as("SELECT user_id, email, role FROM team_members WHERE business_id = ?1 AND active = 1 ORDER BY email, user_id", &params![&r.business_id])?;
    let me = r.caller.as_deref();
    let members: Vec<_> = rows.iter().map(|(user_id, email, role)| json!({"userId": user_id, "email": email, "role": role, "you": me == Some(user_id.as_str())})).collect();
    ok(&json!({"members": members}))
}
