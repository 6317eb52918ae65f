//! Console users: one business each, a role (owner, agent or viewer), a password
//! kept as an argon2id hash (the `argon2` crate's defaults: 19 MiB, two
//! passes). A user is created by `switchboard admin user create`, which
//! either takes the password on standard input or prints a one-time setup
//! link (its token is stored as a SHA-256 hash and lasts [`SETUP_TTL_MS`]).
//!
//! Main keeps the users (logins span databases); the business's own
//! database keeps its team (`team_members`, migration 0038: id, address,
//! role, active), which the inbox reads for names and assignees. The
//! commands that change a user ([`create_in_team`], [`disable`])
//! write the team with the user: in the same transaction when the
//! business lives in main, else in its database right after main's
//! commit (two databases have no common transaction; a copy that failed
//! is made again at the business's next console login or page load).

use crate::db::{self, params, Db};
use crate::{in_transaction, require_business};
use anyhow::{bail, Result};
use argon2::password_hash::{rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use serde_json::json;
use std::sync::{Arc, LazyLock};
use switchboard_gateway::auth;
use switchboard_storage::databases::Databases;

/// How long a setup link works.
pub const SETUP_TTL_MS: i64 = 24 * 3600 * 1000;
pub const MIN_PASSWORD_CHARS: usize = 10;
pub const MAX_PASSWORD_CHARS: usize = 1024;
/// The console roles, most able first: an owner changes everything, a
/// support agent answers conversations (replies, takes over, assigns,
/// notes, resolves) and configures nothing, a viewer reads.
pub const ROLES: &[&str] = &["owner", "agent", "viewer"];

pub fn hash_password(password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| anyhow::anyhow!("password hash: {e}"))
}

/// A hash to verify against when the account does not exist, so that a
/// login for an unknown address takes as long as one with a wrong password.
/// Its password is random and never known.
static DECOY: LazyLock<String> = LazyLock::new(|| hash_password(&random_hex()).unwrap_or_default());

pub fn verify_password(password: &str, stored: Option<&str>) -> bool {
    let stored = stored.unwrap_or(DECOY.as_str());
    let Ok(parsed) = PasswordHash::new(stored) else { return false };
    Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok()
}

/// A password's rules, as a message for the person choosing it.
pub fn check_password(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_CHARS {
        return Err(format!("the password must be at least {MIN_PASSWORD_CHARS} characters"));
    }
    if n > MAX_PASSWORD_CHARS {
        return Err(format!("the password must be at most {MAX_PASSWORD_CHARS} characters"));
    }
    Ok(())
}

/// A plausible address: something@something, no spaces, at most 254 bytes.
pub fn normalize_email(email: &str) -> Option<String> {
    let e = email.trim().to_lowercase();
    let (local, domain) = e.split_once('@')?;
    let ok = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && e.len() <= 254
        && !e.chars().any(|c| c.is_whitespace() || c.is_control())
        && !domain.contains('@');
    ok.then_some(e)
}

pub(crate) fn random_hex() -> String {
    let mut random = [0u8; 32];
    rand::fill(&mut random);
    hex::encode(random)
}

/// The file in a data dir where `serve` notes the URL it serves at (its
/// `--public-url`, else `http://LISTEN`), for the setup links `admin user
/// create` prints.
pub const SERVED_URL_FILE: &str = "served-url";

/// The URL the server on `data_dir` last said it serves at, else
/// `http://127.0.0.1:8080` (the default `--listen`).
pub fn served_url(data_dir: &std::path::Path) -> String {
    std::fs::read_to_string(data_dir.join(SERVED_URL_FILE)).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).unwrap_or_else(|| "http://127.0.0.1:8080".into())
}

/// `admin user create`: with `password` set, the user can log in at once;
/// without it, the answer carries a one-time setup link under `console_url`.
/// The user is written in main only (the console's invitation copies the
/// team itself); [`create_in_team`] makes them a team member too.
pub fn create(db: &Db, business: &str, email: &str, role: &str, password: Option<&str>, console_url: &str) -> Result<serde_json::Value> {
    let new = NewUser::checked(business, email, role, password)?;
    let c = db.conn()?;
    in_transaction(&c, || new.insert(&c))?;
    Ok(new.answer(console_url))
}

/// `admin user create` on the command line: [`create`], and the user is a
/// member of the business's team at once (see the module's note), so
/// `GET /team-members` and assignment know them before anyone logs in.
pub fn create_in_team(dbs: &Databases, business: &str, email: &str, role: &str, password: Option<&str>, console_url: &str) -> Result<serde_json::Value> {
    let new = NewUser::checked(business, email, role, password)?;
    with_team(dbs, &new.business, |c| new.insert(c))?;
    Ok(new.answer(console_url))
}

/// A user to create, its values checked.
struct NewUser {
    id: String,
    business: String,
    email: String,
    role: String,
    hash: Option<String>,
    token: Option<String>,
}

impl NewUser {
    fn checked(business: &str, email: &str, role: &str, password: Option<&str>) -> Result<NewUser> {
        let Some(email) = normalize_email(email) else { bail!("--email must be an address like name@example.com") };
        if !ROLES.contains(&role) {
            bail!("--role must be owner, agent or viewer");
        }
        let hash = match password {
            Some(p) => {
                check_password(p).map_err(anyhow::Error::msg)?;
                Some(hash_password(p)?)
            }
            None => None,
        };
        let token = hash.is_none().then(random_hex);
        Ok(NewUser { id: uuid::Uuid::new_v4().to_string(), business: business.to_ascii_lowercase(), email, role: role.to_string(), hash, token })
    }

    /// Inside the caller's transaction on main.
    fn insert(&self, c: &db::Connection) -> Result<()> {
        require_business(c, &self.business)?;
        if find_any_by_email(c, &self.email)? {
            bail!("a console user with the email {} exists already", self.email);
        }
        db::execute(
            c,
            "INSERT INTO console_users (id, business_id, email, role, password_hash, setup_token_hash, setup_expires_at_ms, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                &self.id,
                &self.business,
                &self.email,
                &self.role,
                self.hash.as_deref(),
                self.token.as_deref().map(auth::hash_key),
                self.token.as_ref().map(|_| crate::clock::now_ms() + SETUP_TTL_MS),
                crate::clock::now_rfc3339(),
            ],
        )?;
        Ok(())
    }

    fn answer(self, console_url: &str) -> serde_json::Value {
        let mut out = json!({"userId": self.id, "businessId": self.business, "email": self.email, "role": self.role});
        if let Some(t) = self.token {
            // In the fragment: a browser never sends it to a server or a Referer.
            out["setupLink"] = json!(format!("{}/console/#setup={t}", console_url.trim_end_matches('/')));
            out["setupExpiresAt"] = json!(crate::clock::rfc3339(crate::clock::now_ms() + SETUP_TTL_MS));
        }
        out
    }
}

/// A console user as the business's own database knows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub role: String,
    pub active: bool,
}

fn members_of(c: &db::Connection, sql: &str, business: &str) -> Result<Vec<Member>> {
    let rows: Vec<(String, String, String, bool)> = db::query_as(c, sql, params![business])?;
    Ok(rows.into_iter().map(|(user_id, email, role, active)| Member { user_id, email, role, active }).collect())
}

/// The business's console users (disabled ones too) as its team should
/// hold them, read in main, by id.
pub fn team_wanted(c: &db::Connection, business: &str) -> Result<Vec<Member>> {
    members_of(c, "SELECT id, email, role, disabled_at IS NULL FROM console_users WHERE business_id = ?1 ORDER BY id", business)
}

/// The team the business's database holds, by id.
pub fn team_held(c: &db::Connection, business: &str) -> Result<Vec<Member>> {
    members_of(c, "SELECT user_id, email, role, active FROM team_members WHERE business_id = ?1 ORDER BY user_id", business)
}

/// Writes `members` into the business's `team_members` (inside the
/// caller's transaction on the business's database).
pub fn write_team(c: &db::Connection, business: &str, members: &[Member]) -> Result<()> {
    for m in members {
        db::execute(
            c,
            "INSERT INTO team_members (business_id, user_id, email, role, active) VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (business_id, user_id) DO UPDATE SET email = excluded.email, role = excluded.role, active = excluded.active",
            params![business, &m.user_id, &m.email, &m.role, m.active],
        )?;
    }
    Ok(())
}

/// Runs `change` in a transaction on main and writes the business's team
/// as main then has it: in that transaction when the business lives in
/// main, else in one transaction on its own database after main's commit.
fn with_team<T>(dbs: &Databases, business: &str, change: impl FnOnce(&db::Connection) -> Result<T>) -> Result<T> {
    let home = dbs.of_business(business)?;
    let main = dbs.main();
    let c = main.conn()?;
    if Arc::ptr_eq(&home, main) {
        return in_transaction(&c, || {
            let out = change(&c)?;
            write_team(&c, business, &team_wanted(&c, business)?)?;
            Ok(out)
        });
    }
    let out = in_transaction(&c, || change(&c))?;
    let wanted = team_wanted(&c, business)?;
    drop(c);
    let h = home.conn()?;
    in_transaction(&h, || write_team(&h, business, &wanted))
        .map_err(|e| anyhow::anyhow!("the user was changed, but the business's team in its database was not ({e}); it is brought up to date at the business's next console login"))?;
    Ok(out)
}

/// `admin user list`.
pub fn list(db: &Db, business: &str) -> Result<serde_json::Value> {
    let c = db.conn()?;
    let rows: Vec<(String, String, String, bool, String, Option<String>)> = db::query_as(
        &c,
        "SELECT id, email, role, password_hash IS NOT NULL, created_at, disabled_at FROM console_users WHERE business_id = ?1 ORDER BY created_at, id",
        params![business.to_ascii_lowercase()],
    )?;
    let users: Vec<_> = rows
        .into_iter()
        .map(|(id, email, role, password_set, created_at, disabled_at)| {
            json!({"userId": id, "email": email, "role": role, "passwordSet": password_set, "createdAt": created_at, "disabledAt": disabled_at})
        })
        .collect();
    Ok(json!({"users": users}))
}

/// `admin user disable`: the user can no longer log in, every session of
/// theirs ends now, and they are inactive in the business's team at once
/// (no longer an assignee).
pub fn disable(dbs: &Databases, user: &str) -> Result<serde_json::Value> {
    let user = user.to_ascii_lowercase();
    let business = {
        let c = dbs.main().conn()?;
        db::query_one_as::<String>(&c, "SELECT business_id FROM console_users WHERE id = ?1", params![&user])?
    };
    let Some(business) = business else { bail!("no console user {user}") };
    with_team(dbs, &business, |c| disable_on(c, &user))
}

fn disable_on(c: &db::Connection, user: &str) -> Result<serde_json::Value> {
    let n = db::execute(c, "UPDATE console_users SET disabled_at = ?2 WHERE id = ?1 AND disabled_at IS NULL", params![user, crate::clock::now_rfc3339()])?;
    if n == 0 && db::query_one_as::<String>(c, "SELECT id FROM console_users WHERE id = ?1", params![user])?.is_none() {
        bail!("no console user {user}");
    }
    let ended = super::sessions::revoke_all_of(c, user)?;
    Ok(json!({"userId": user, "disabled": true, "sessionsEnded": ended}))
}

/// `admin user revoke-sessions`: logs the user out everywhere.
pub fn revoke_sessions(db: &Db, user: &str) -> Result<serde_json::Value> {
    let user = user.to_ascii_lowercase();
    let c = db.conn()?;
    let ended = in_transaction(&c, || super::sessions::revoke_all_of(&c, &user))?;
    Ok(json!({"userId": user, "sessionsEnded": ended}))
}

/// A user who may log in.
pub struct LoginUser {
    pub id: String,
    pub business_id: String,
    pub role: String,
    pub password_hash: Option<String>,
}

pub fn find_by_email(c: &db::Connection, email: &str) -> Result<Option<LoginUser>> {
    let row =
        db::query_one_as::<(String, String, String, Option<String>)>(c, "SELECT id, business_id, role, password_hash FROM console_users WHERE email = ?1 AND disabled_at IS NULL", params![email])?;
    Ok(row.map(|(id, business_id, role, password_hash)| LoginUser { id, business_id, role, password_hash }))
}

/// Sets the password of the user whose setup token this is (once; the token
/// ends with it). The user id, or None for an unknown or expired token.
pub fn set_password_with_token(c: &db::Connection, token: &str, password_hash: &str) -> Result<Option<String>> {
    let id = db::query_one_as::<String>(
        c,
        "SELECT id FROM console_users WHERE setup_token_hash = ?1 AND setup_expires_at_ms > ?2 AND disabled_at IS NULL",
        params![auth::hash_key(token), crate::clock::now_ms()],
    )?;
    let Some(id) = id else { return Ok(None) };
    db::execute(c, "UPDATE console_users SET password_hash = ?2, setup_token_hash = NULL, setup_expires_at_ms = NULL WHERE id = ?1", params![&id, password_hash])?;
    // A new password ends the sessions made with the old one.
    super::sessions::revoke_all_of(c, &id)?;
    Ok(Some(id))
}

/// True when any console user (of any business, disabled or not) has this
/// normalized email (emails are unique).
pub fn find_any_by_email(c: &db::Connection, email: &str) -> Result<bool> {
    Ok(db::query_one_as::<String>(c, "SELECT id FROM console_users WHERE email = ?1", params![email])?.is_some())
}

/// What a change of another user of the business came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    Done,
    /// No such active user in this business.
    NotFound,
    /// It would leave the business without an active owner.
    LastOwner,
}

/// The business's active user `user`'s role, if there is one.
fn active_role(c: &db::Connection, business: &str, user: &str) -> Result<Option<String>> {
    db::query_one_as::<String>(c, "SELECT role FROM console_users WHERE id = ?1 AND business_id = ?2 AND disabled_at IS NULL", params![user, business])
}

/// True when `user` is the business's only active owner.
fn only_owner(c: &db::Connection, business: &str, user: &str) -> Result<bool> {
    let other = db::query_one_as::<String>(c, "SELECT id FROM console_users WHERE business_id = ?1 AND role = 'owner' AND disabled_at IS NULL AND id <> ?2 LIMIT 1", params![business, user])?;
    Ok(other.is_none())
}

/// Sets an active user's role (the console's users page; inside the
/// caller's transaction). Their sessions end, so the new role's scopes
/// apply from their next login. A business keeps at least one owner.
pub fn set_role(c: &db::Connection, business: &str, user: &str, role: &str) -> Result<Change> {
    if !ROLES.contains(&role) {
        bail!("role must be owner, agent or viewer");
    }
    let Some(was) = active_role(c, business, user)? else { return Ok(Change::NotFound) };
    if was == "owner" && role != "owner" && only_owner(c, business, user)? {
        return Ok(Change::LastOwner);
    }
    if was != role {
        db::execute(c, "UPDATE console_users SET role = ?2 WHERE id = ?1", params![user, role])?;
        super::sessions::revoke_all_of(c, user)?;
    }
    Ok(Change::Done)
}

/// Removes an active user from the business (as `admin user disable`: they
/// can no longer log in and their sessions end; inside the caller's
/// transaction). A business keeps at least one owner.
pub fn remove(c: &db::Connection, business: &str, user: &str) -> Result<Change> {
    let Some(was) = active_role(c, business, user)? else { return Ok(Change::NotFound) };
    if was == "owner" && only_owner(c, business, user)? {
        return Ok(Change::LastOwner);
    }
    db::execute(c, "UPDATE console_users SET disabled_at = ?2 WHERE id = ?1", params![user, crate::clock::now_rfc3339()])?;
    super::sessions::revoke_all_of(c, user)?;
    Ok(Change::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_and_decoys_never_do() {
        let h = hash_password("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(verify_password("correct horse battery", Some(&h)));
        assert!(!verify_password("wrong horse battery", Some(&h)));
        assert!(!verify_password("correct horse battery", None));
        assert!(!verify_password("x", Some("not a hash")));
    }

    #[test]
    fn emails_and_passwords_are_checked() {
        assert_eq!(normalize_email(" Ana@Example.COM ").as_deref(), Some("ana@example.com"));
        assert!(normalize_email("ana").is_none());
        assert!(normalize_email("ana@localhost").is_none());
        assert!(normalize_email("a na@example.com").is_none());
        assert!(check_password("short").is_err());
        assert!(check_password("long enough!").is_ok());
    }
}
