//! The business's console users, for an owner (before, only `admin user
//! create|list|disable` on the command line): list them, invite one (a
//! one-time setup link, shown once), set a role, remove one. Session-only
//! and owner-only, with the CSRF and `Content-Type` rules of every console
//! route; the statements are the admin crate's (`switchboard_admin::users`).
//!
//! * `GET /console/api/users`: the users, disabled ones included.
//! * `POST /console/api/users` `{email, role}`: 201 with `setupLink`, a path
//!   (`/console/#setup=…`, 24 hours, once) the page puts after its origin.
//! * `PATCH /console/api/users/{userId}` `{role}`: their sessions end.
//! * `DELETE /console/api/users/{userId}`: they can no longer log in.
//!
//! A business keeps at least one owner (409 `last_owner`).

use super::{unavailable, writer, ConsoleRequest};
use crate::pipeline::App;
use serde::Deserialize;
use serde_json::{json, Value};
use switchboard_admin::users::{self, Change};
use switchboard_gateway::validate::Violation;
use switchboard_gateway::{Failure, SessionRecord};

pub const USERS_PATH: &str = "/console/api/users";
const USER_PATH: &str = "/console/api/users/{userId}";

/// The path as logged, if it is one of ours.
pub fn path(p: &str) -> Option<&'static str> {
    if p == USERS_PATH {
        Some(USERS_PATH)
    } else {
        user_of(p).map(|_| USER_PATH)
    }
}

fn user_of(p: &str) -> Option<&str> {
    p.strip_prefix("/console/api/users/").filter(|id| switchboard_gateway::validate::is_uuid(id))
}

/// The access log's operation name.
pub fn operation_name(method: &str, p: &str) -> Option<&'static str> {
    Some(match (method, path(p)?) {
        ("GET", USERS_PATH) => "consoleListUsers",
        ("POST", USERS_PATH) => "consoleInviteUser",
        ("PATCH", USER_PATH) => "consoleSetUserRole",
        ("DELETE", USER_PATH) => "consoleRemoveUser",
        _ => "console",
    })
}

fn invalid(field: &str, message: String) -> Failure {
    Failure::from_violations(vec![Violation { field: field.into(), rule: "invalid", message }], "request body")
}

/// Answers a users route: the session (with its CSRF token for a write),
/// the owner role, then the route.
pub fn route(app: &App, r: &ConsoleRequest) -> Result<(u16, Value), Failure> {
    let allowed = if r.path == USERS_PATH { "GET, POST" } else { "PATCH, DELETE" };
    if !allowed.split(", ").any(|m| m == r.method) {
        return Err(super::method_not_allowed(allowed));
    }
    let s = super::session(app, r)?;
    if s.role != "owner" {
        return Err(Failure::authorization("owner_role_required", "only an owner of the business can see and change who may log in"));
    }
    match (r.method.as_str(), user_of(&r.path)) {
        ("GET", None) => Ok((200, users::list(app.dbs.main(), &s.business_id).map_err(unavailable)?)),
        ("POST", None) => invite(app, &s, super::body(r)?),
        ("PATCH", Some(user)) => change(app, &s, &user.to_ascii_lowercase(), Some(super::body(r)?)),
        (_, Some(user)) => change(app, &s, &user.to_ascii_lowercase(), None),
        _ => Err(super::method_not_allowed(allowed)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Invite {
    email: String,
    role: String,
}

fn invite(app: &App, s: &SessionRecord, body: Value) -> Result<(u16, Value), Failure> {
    let i: Invite = serde_json::from_value(body).map_err(|e| Failure::validation("invalid_body", format!("send {{\"email\": …, \"role\": \"owner\" or \"viewer\"}}: {e}")))?;
    let Some(email) = users::normalize_email(&i.email) else {
        return Err(invalid("email", "`email` must be an address like name@example.com".into()));
    };
    if !users::ROLES.contains(&i.role.as_str()) {
        return Err(invalid("role", "`role` must be owner or viewer".into()));
    }
    let (_gate, c) = writer(app)?;
    if users::find_any_by_email(&c, &email).map_err(unavailable)? {
        return Err(Failure::conflict("user_exists", "a console user with this email exists already (emails are unique across businesses)"));
    }
    drop(c);
    // An empty console URL: the link is a path the page puts after its own origin.
    let made = users::create(app.dbs.main(), &s.business_id, &email, &i.role, None, "").map_err(unavailable)?;
    crate::logging::line("info", &format!("console: a {} was invited to business {}", i.role, s.business_id));
    Ok((201, made))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleChange {
    role: String,
}

/// A role change (`Some`) or a removal (`None`) of another user.
fn change(app: &App, s: &SessionRecord, user: &str, body: Option<Value>) -> Result<(u16, Value), Failure> {
    let role = match body {
        Some(b) => {
            let r: RoleChange = serde_json::from_value(b).map_err(|e| Failure::validation("invalid_body", format!("send {{\"role\": \"owner\" or \"viewer\"}}: {e}")))?;
            if !users::ROLES.contains(&r.role.as_str()) {
                return Err(invalid("role", "`role` must be owner or viewer".into()));
            }
            Some(r.role)
        }
        None => None,
    };
    let (_gate, c) = writer(app)?;
    let done = crate::db::in_transaction(&c, || match &role {
        Some(role) => users::set_role(&c, &s.business_id, user, role),
        None => users::remove(&c, &s.business_id, user),
    })
    .map_err(unavailable)?;
    match done {
        Change::Done => Ok((200, json!({"userId": user, "role": role, "removed": role.is_none()}))),
        Change::NotFound => Err(Failure::not_found("user_not_found", "no active console user with this id in this business")),
        Change::LastOwner => Err(Failure::conflict("last_owner", "a business keeps at least one owner: make another user an owner first")),
    }
}
