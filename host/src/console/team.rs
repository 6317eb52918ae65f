//! The business's console users, for an owner (before, only `admin user
//! create|list|disable` on the command line): list them, invite one (a
//! one-time setup link, shown once), set a role, remove one. Session-only
//! and owner-only, with the CSRF and `Content-Type` rules of every console
//! route; the statements are the admin crate's (`switchboard_admin::users`).
//!
//! * `GET /console/api/users`: the users, disabled ones included, and the
//!   roles one can have (`roles`, most able first).
//! * `POST /console/api/users` `{email, role}`: 201 with `setupLink`, a path
//!   (`/console/#setup=…`, 24 hours, once) the page puts after its origin.
//! * `PATCH /console/api/users/{userId}` `{role}`: their sessions end.
//! * `DELETE /console/api/users/{userId}`: they can no longer log in.
//!
//! A business keeps at least one owner (409 `last_owner`). The roles are
//! owner, agent (a support agent: answers conversations, configures
//! nothing) and viewer (`switchboard_admin::users::ROLES`).
//!
//! Inviting an address that already has a login with another business does
//! not say so: the answer looks like any invitation's, and its link never
//! works (addresses are unique across businesses, and an owner must not
//! learn who else uses the service). One of this business's own users is
//! refused (409 `user_exists`): the owner sees them in the list anyway.
//!
//! [`sync_members`] copies the business's users into its own database's
//! `team_members` (migration 0038), which the inbox reads for names and
//! assignees.

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
        ("GET", None) => {
            let mut listed = users::list(app.dbs.main(), &s.business_id).map_err(unavailable)?;
            listed["roles"] = json!(users::ROLES);
            Ok((200, listed))
        }
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
    let i: Invite = serde_json::from_value(body).map_err(|e| Failure::validation("invalid_body", format!("send {{\"email\": …, \"role\": \"owner\", \"agent\" or \"viewer\"}}: {e}")))?;
    let Some(email) = users::normalize_email(&i.email) else {
        return Err(invalid("email", "Enter an email address like name@example.com".into()));
    };
    if !users::ROLES.contains(&i.role.as_str()) {
        return Err(invalid("role", "Choose owner, agent or viewer".into()));
    }
    let made = {
        let (_gate, c) = writer(app)?;
        if !users::find_any_by_email(&c, &email).map_err(unavailable)? {
            drop(c);
            // An empty console URL: the link is a path the page puts after its own origin.
            Some(users::create(app.dbs.main(), &s.business_id, &email, &i.role, None, "").map_err(unavailable)?)
        } else {
            None
        }
    };
    if let Some(made) = made {
        tracing::info!(businessId = %s.business_id, role = %i.role, "console user invited");
        sync_members(app, &s.business_id);
        return Ok((201, made));
    }
    if users::list(app.dbs.main(), &s.business_id).map_err(unavailable)?["users"].as_array().is_some_and(|l| l.iter().any(|u| u["email"] == email.as_str())) {
        return Err(Failure::conflict("user_exists", "this person can already log in to this business (see the list)"));
    }
    tracing::info!(businessId = %s.business_id, "console invitation of an address another business uses answered without a user");
    Ok((201, look_alike(&s.business_id, &email, &i.role)))
}

/// What an invitation answers, for an address another business uses: the
/// shape and kinds of values of a real one (a fresh user id, a setup link
/// with a random token), none of which exists.
fn look_alike(business: &str, email: &str, role: &str) -> Value {
    let mut token = [0u8; 32];
    rand::fill(&mut token);
    json!({
        "userId": uuid::Uuid::new_v4().to_string(),
        "businessId": business,
        "email": email,
        "role": role,
        "setupLink": format!("/console/#setup={}", hex::encode(token)),
        "setupExpiresAt": crate::clock::rfc3339(crate::clock::now_ms() + users::SETUP_TTL_MS),
    })
}

/// Copies the business's console users (id, address, role, active) into
/// its own database's `team_members`, writing only when they differ. A
/// failure is logged, not answered: the copy is brought up to date at the
/// next login or page load.
pub fn sync_members(app: &App, business: &str) {
    if let Err(e) = try_sync(app, business) {
        tracing::warn!(businessId = %business, error = %e.message, "console team not copied to the business's database");
    }
}

fn try_sync(app: &App, business: &str) -> Result<(), Failure> {
    let wanted = {
        let c = app.dbs.main().conn().map_err(unavailable)?;
        users::team_wanted(&c, business).map_err(unavailable)?
    };
    let db = app.db_for(business)?;
    let held = {
        let c = db.conn().map_err(unavailable)?;
        users::team_held(&c, business).map_err(unavailable)?
    };
    if held == wanted {
        return Ok(());
    }
    let (_gate, db) = super::business_writer(app, business)?;
    let c = db.conn().map_err(unavailable)?;
    crate::db::in_transaction(&c, || users::write_team(&c, business, &wanted)).map_err(unavailable)
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
            let r: RoleChange = serde_json::from_value(b).map_err(|e| Failure::validation("invalid_body", format!("send {{\"role\": \"owner\", \"agent\" or \"viewer\"}}: {e}")))?;
            if !users::ROLES.contains(&r.role.as_str()) {
                return Err(invalid("role", "Choose owner, agent or viewer".into()));
            }
            Some(r.role)
        }
        None => None,
    };
    let done = {
        let (_gate, c) = writer(app)?;
        crate::db::in_transaction(&c, || match &role {
            Some(role) => users::set_role(&c, &s.business_id, user, role),
            None => users::remove(&c, &s.business_id, user),
        })
        .map_err(unavailable)?
    };
    if done == Change::Done {
        sync_members(app, &s.business_id);
    }
    match done {
        Change::Done => Ok((200, json!({"userId": user, "role": role, "removed": role.is_none()}))),
        Change::NotFound => Err(Failure::not_found("user_not_found", "no active console user with this id in this business")),
        Change::LastOwner => Err(Failure::conflict("last_owner", "a business keeps at least one owner: make another user an owner first")),
    }
}
