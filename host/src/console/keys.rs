//! API keys in the console (the contract: "generated in the authenticated
//! console under API, shown once, stored hashed, scoped, revocable and tied
//! to one business"): the same `api_keys` rows the admin commands manage.
//! Listing takes any role; creating and revoking take an owner. A key is
//! in the one answer that creates it and never again: lists show its last
//! four characters. Revocation is immediate (every request looks its key
//! up).

use super::{unavailable, writer};
use crate::pipeline::App;
use serde::Deserialize;
use serde_json::json;
use switchboard_gateway::{auth, Failure, SessionRecord};

/// Keys a business may hold alive at once (revoked ones do not count).
pub const MAX_LIVE_KEYS: i64 = 100;

fn owner_only(s: &SessionRecord) -> Result<(), Failure> {
    if s.role == "owner" {
        Ok(())
    } else {
        Err(Failure::authorization("owner_role_required", "only an owner of the business can create or revoke API keys"))
    }
}

pub fn list(app: &App, s: &SessionRecord) -> Result<serde_json::Value, Failure> {
    let c = app.dbs.main().conn().map_err(unavailable)?;
    let mut keys = crate::admin::key_rows(&c, &s.business_id).map_err(unavailable)?;
    // A use not yet written by the usage flush is already known here.
    for k in &mut keys {
        if let Some(at) = k["keyId"].as_str().and_then(|id| app.usage.pending_key(id)) {
            let newer = k["lastUsedAt"].as_str().is_none_or(|stored| stored < crate::clock::rfc3339(at).as_str());
            if newer {
                k["lastUsedAt"] = json!(crate::clock::rfc3339(at));
            }
        }
    }
    Ok(json!({"keys": keys, "scopes": auth::SCOPES}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    scopes: Vec<String>,
}

pub fn create(app: &App, s: &SessionRecord, body: &[u8]) -> Result<serde_json::Value, Failure> {
    owner_only(s)?;
    let wanted: Create = serde_json::from_slice(body).map_err(|e| Failure::validation("invalid_body", format!("send {{\"scopes\": [\"contacts:read\", …]}}: {e}")))?;
    if wanted.scopes.len() > auth::SCOPES.len() * 2 {
        return Err(Failure::validation("invalid_scopes", "too many scopes listed"));
    }
    let scopes = auth::parse_scopes(&wanted.scopes.join(",")).map_err(|m| Failure::validation("invalid_scopes", m))?;
    let (_gate, c) = writer(app)?;
    let live = crate::db::query_rows(&c, "SELECT COUNT(*) FROM api_keys WHERE business_id = ?1 AND revoked_at IS NULL", vec![crate::db::SqlValue::Text(s.business_id.clone())]).map_err(unavailable)?;
    if matches!(live.first().map(|r| &r[0]), Some(crate::db::SqlValue::Integer(n)) if *n >= MAX_LIVE_KEYS) {
        return Err(Failure::conflict("too_many_keys", format!("the business has {MAX_LIVE_KEYS} live keys; revoke one first")));
    }
    let (id, key) = crate::admin::insert_key(&c, &s.business_id, &scopes, Some(&s.user_id)).map_err(unavailable)?;
    tracing::info!(keyId = %id, businessId = %s.business_id, "console key created");
    Ok(json!({
        "keyId": id,
        "apiKey": key,
        "display": format!("{}…{}", auth::KEY_PREFIX, &key[key.len() - 4..]),
        "scopes": scopes,
        "shownOnce": true,
    }))
}

pub fn revoke(app: &App, s: &SessionRecord, key_id: &str) -> Result<serde_json::Value, Failure> {
    owner_only(s)?;
    let (_gate, c) = writer(app)?;
    if !crate::admin::revoke_key_of(app.dbs.main(), &c, Some(&s.business_id), key_id).map_err(unavailable)? {
        // Another business's key is as unknown as one that never existed.
        return Err(Failure::not_found("key_not_found", "no such API key in this business"));
    }
    Ok(json!({"keyId": key_id.to_ascii_lowercase(), "revoked": true}))
}
