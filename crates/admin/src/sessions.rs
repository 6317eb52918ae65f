//! Console sessions: a random 256-bit token in an `HttpOnly`,
//! `SameSite=Strict` cookie (`Secure` when the service's public URL is
//! https) that names no business or user; the row keeps its SHA-256 hash.
//! A session ends at logout, after [`ABSOLUTE_MS`], after [`IDLE_MS`]
//! without a request, when its user is disabled or sets a new password,
//! and on `admin user revoke-sessions`. Its CSRF token is returned by
//! `GET /console/api/session` and must come back in `X-CSRF-Token` on every
//! state-changing request.

use crate::db::{self, Db};
use crate::users::{random_hex, LoginUser};
use anyhow::Result;
use switchboard_gateway::{auth, SessionRecord};

pub const COOKIE: &str = "sb_session";
/// A session lasts at most this long, however busy.
pub const ABSOLUTE_MS: i64 = 12 * 3600 * 1000;
/// A session unused for this long has ended (judged on use times written
/// every `usage::FLUSH_EVERY`).
pub const IDLE_MS: i64 = 2 * 3600 * 1000;

/// A new session of a user who just logged in: (its cookie token, the
/// session as a later request will find it).
pub fn create(c: &db::Connection, user: &LoginUser) -> Result<(String, SessionRecord)> {
    let token = random_hex();
    let record = SessionRecord {
        session_id: uuid::Uuid::new_v4().to_string(),
        user_id: user.id.clone(),
        business_id: user.business_id.clone(),
        role: user.role.clone(),
        scopes: auth::role_scopes(&user.role),
        csrf_token: random_hex(),
    };
    let now = crate::clock::now_ms();
    db::execute(
        c,
        "INSERT INTO console_sessions (id, token_hash, user_id, business_id, csrf_token, created_at_ms, last_seen_at_ms, expires_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)",
        db::params![&record.session_id, auth::hash_key(&token), &record.user_id, &record.business_id, &record.csrf_token, now, now + ABSOLUTE_MS],
    )?;
    // Ended sessions of this user are cleared as new ones begin.
    db::execute(c, "DELETE FROM console_sessions WHERE user_id = ?1 AND (revoked_at_ms IS NOT NULL OR expires_at_ms < ?2 OR last_seen_at_ms < ?3)", db::params![&record.user_id, now, now - IDLE_MS])?;
    Ok((token, record))
}

/// The live session of a cookie token's hash, with its user's role scopes.
pub fn find(db: &Db, token_hash: &str) -> Result<Option<SessionRecord>> {
    let now = crate::clock::now_ms();
    let c = db.read_conn()?;
    let rows = db::query_as::<(String, String, String, String, String)>(
        &c,
        "SELECT s.id, s.user_id, s.business_id, s.csrf_token, u.role FROM console_sessions s \
         JOIN console_users u ON u.id = s.user_id \
         WHERE s.token_hash = ?1 AND s.revoked_at_ms IS NULL AND s.expires_at_ms > ?2 AND s.last_seen_at_ms > ?3 AND u.disabled_at IS NULL",
        db::params![token_hash, now, now - IDLE_MS],
    )?;
    Ok(rows.into_iter().next().map(|(session_id, user_id, business_id, csrf_token, role)| SessionRecord { session_id, user_id, business_id, csrf_token, scopes: auth::role_scopes(&role), role }))
}

pub fn revoke(c: &db::Connection, session_id: &str) -> Result<()> {
    db::execute(c, "UPDATE console_sessions SET revoked_at_ms = ?2 WHERE id = ?1 AND revoked_at_ms IS NULL", db::params![session_id, crate::clock::now_ms()])?;
    Ok(())
}

/// Ends every session of a user; how many were live.
pub fn revoke_all_of(c: &db::Connection, user_id: &str) -> Result<u64> {
    db::execute(c, "UPDATE console_sessions SET revoked_at_ms = ?2 WHERE user_id = ?1 AND revoked_at_ms IS NULL", db::params![user_id, crate::clock::now_ms()])
}

/// The session token of a `Cookie` header, if it has ours.
pub fn from_cookie_header(header: &str) -> Option<&str> {
    header.split(';').filter_map(|p| p.trim().split_once('=')).find(|(k, _)| *k == COOKIE).map(|(_, v)| v.trim())
}

/// `Set-Cookie` for a new session (`secure` when served over https).
pub fn set_cookie(token: &str, secure: bool) -> String {
    format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}", ABSOLUTE_MS / 1000, if secure { "; Secure" } else { "" })
}

/// `Set-Cookie` that removes it.
pub fn clear_cookie(secure: bool) -> String {
    format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{}", if secure { "; Secure" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_name_only_the_token() {
        assert_eq!(from_cookie_header("a=1; sb_session=abc ; b=2"), Some("abc"));
        assert_eq!(from_cookie_header("sb_sessionx=1"), None);
        let c = set_cookie("t", true);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict") && c.ends_with("; Secure"), "{c}");
        assert!(!set_cookie("t", false).contains("Secure"));
    }
}
