//! API keys: their format, their hash, and the scope check.

use sha2::{Digest, Sha256};

/// Every scope an API key can hold (the contract's Authentication section).
pub const SCOPES: &[&str] = &[
    "channels:read",
    "channels:write",
    "chatapp:read",
    "chatapp:write",
    "chatapp:media",
    "contacts:read",
    "contacts:write",
    "communications:read",
    "communications:write",
    "webhooks:read",
    "webhooks:write",
    "agents:read",
    "agents:write",
    "data_sources:read",
    "data_sources:write",
    "voice:read",
    "voice:write",
    "campaigns:read",
    "campaigns:write",
    "photoapp:read",
    "photoapp:write",
    "credits:read",
];

/// Keys look like `sbk_<64 hex chars>` (256 bits of entropy). The prefix
/// lets secret scanners recognise them.
pub const KEY_PREFIX: &str = "sbk_";

/// The stored form of a key: SHA-256 of the whole key, hex. A fast hash is
/// right here because keys are high-entropy random, not passwords.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Cheap syntactic check so garbage never reaches the database.
pub fn looks_like_key(key: &str) -> bool {
    key.strip_prefix(KEY_PREFIX).is_some_and(looks_like_session_token)
}

/// A console session token (and a key after its prefix): 64 hex
/// characters, 256 bits.
pub fn looks_like_session_token(token: &str) -> bool {
    token.len() == 64 && token.bytes().all(|c| c.is_ascii_hexdigit())
}

/// Compares two secrets in time independent of where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// What a support agent may change beside reading: conversations (replies,
/// takeovers, assignment, notes, state, saved replies) and their media.
/// Nothing that configures the business (agents, channels, webhooks,
/// contacts, data sources, calls, campaigns, keys, users, credits).
pub const AGENT_WRITE_SCOPES: &[&str] = &["communications:write", "chatapp:write", "chatapp:media", "photoapp:write"];

/// The scopes a console role holds: an owner every scope, a support agent
/// the read scopes and [`AGENT_WRITE_SCOPES`], a viewer the read scopes.
pub fn role_scopes(role: &str) -> Vec<String> {
    SCOPES.iter().filter(|s| role == "owner" || s.ends_with(":read") || (role == "agent" && AGENT_WRITE_SCOPES.contains(s))).map(|s| s.to_string()).collect()
}

pub fn format_key(random: &[u8; 32]) -> String {
    format!("{KEY_PREFIX}{}", hex::encode(random))
}

/// Parses `a,b,c` or `all` into a sorted scope list; rejects unknown scopes.
pub fn parse_scopes(list: &str) -> Result<Vec<String>, String> {
    if list.trim() == "all" {
        return Ok(SCOPES.iter().map(|s| s.to_string()).collect());
    }
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !SCOPES.contains(&s) {
            return Err(format!("unknown scope `{s}`; known scopes: {}", SCOPES.join(", ")));
        }
        if !out.iter().any(|x: &String| x == s) {
            out.push(s.to_string());
        }
    }
    if out.is_empty() {
        return Err("at least one scope is required (or `all`)".into());
    }
    out.sort();
    Ok(out)
}

/// Extracts the token of an `Authorization: Bearer <token>` header.
pub fn bearer_token(header: Option<&str>) -> Option<&str> {
    let h = header?.trim();
    let (scheme, token) = h.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse() {
        assert_eq!(parse_scopes("contacts:read, contacts:read").unwrap(), vec!["contacts:read"]);
        assert_eq!(parse_scopes("all").unwrap().len(), SCOPES.len());
        assert!(parse_scopes("contacts:admin").is_err());
        assert!(parse_scopes("").is_err());
    }

    #[test]
    fn bearer() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(Some("Basic abc")), None);
        assert_eq!(bearer_token(None), None);
        let k = format_key(&[7; 32]);
        assert!(looks_like_key(&k));
        assert!(!looks_like_key("sbk_zz"));
    }
}
