//! `switchboard admin …`: businesses and API keys, straight on the data dir,
//! whether or not a server is running on it (SQLite's locking and the busy
//! timeout make the two safe together).

use crate::db::{self, Db, SqlValue};
use anyhow::{bail, Result};
use serde_json::json;
use switchboard_gateway::auth;

pub fn create_business(db: &Db, name: &str) -> Result<serde_json::Value> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        bail!("--name must be 1 to 200 characters");
    }
    let id = uuid::Uuid::new_v4().to_string();
    let now = crate::clock::now_rfc3339();
    let c = db.conn()?;
    // The business and its built-in Contacts data source, together.
    db::execute(&c, "BEGIN IMMEDIATE", vec![])?;
    let created = db::execute(
        &c,
        "INSERT INTO businesses (id, name, created_at) VALUES (?1, ?2, ?3)",
        vec![SqlValue::Text(id.clone()), SqlValue::Text(name.into()), SqlValue::Text(now.clone())],
    )
    .and_then(|_| {
        db::execute(
            &c,
            "INSERT INTO data_sources (id, business_id, name, description, class, kind, built_in, created_at, updated_at) \
             VALUES (?1, ?2, 'Contacts', 'The built-in contacts of this business', 'structured', 'table', 1, ?3, ?3)",
            vec![SqlValue::Text(uuid::Uuid::now_v7().to_string()), SqlValue::Text(id.clone()), SqlValue::Text(now)],
        )
    });
    match created {
        Ok(_) => db::execute(&c, "COMMIT", vec![])?,
        Err(e) => {
            let _ = db::execute(&c, "ROLLBACK", vec![]);
            return Err(e);
        }
    };
    Ok(json!({"businessId": id}))
}

pub fn create_key(db: &Db, business: &str, scopes: &str) -> Result<serde_json::Value> {
    let scopes = auth::parse_scopes(scopes).map_err(anyhow::Error::msg)?;
    let c = db.conn()?;
    if db::query_strings(&c, "SELECT id FROM businesses WHERE id = ?1", vec![SqlValue::Text(business.to_ascii_lowercase())])?.is_empty() {
        bail!("no business {business} in this data dir");
    }
    let mut random = [0u8; 32];
    rand::fill(&mut random);
    let key = auth::format_key(&random);
    let id = uuid::Uuid::new_v4().to_string();
    db::execute(
        &c,
        "INSERT INTO api_keys (id, business_id, key_hash, key_last4, scopes, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        vec![
            SqlValue::Text(id.clone()),
            SqlValue::Text(business.to_ascii_lowercase()),
            SqlValue::Text(auth::hash_key(&key)),
            SqlValue::Text(key[key.len() - 4..].to_string()),
            SqlValue::Text(scopes.join(",")),
            SqlValue::Text(crate::clock::now_rfc3339()),
        ],
    )?;
    Ok(json!({"keyId": id, "apiKey": key, "scopes": scopes}))
}

pub fn list_keys(db: &Db, business: &str) -> Result<serde_json::Value> {
    let c = db.conn()?;
    let rows = db::query_rows(
        &c,
        "SELECT id, key_last4, scopes, created_at, revoked_at FROM api_keys WHERE business_id = ?1 ORDER BY created_at, id",
        vec![SqlValue::Text(business.to_ascii_lowercase())],
    )?;
    let t = |v: &SqlValue| match v {
        SqlValue::Text(s) => json!(s),
        _ => serde_json::Value::Null,
    };
    let keys: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({
                "keyId": t(&r[0]), "last4": t(&r[1]),
                "scopes": match &r[2] { SqlValue::Text(s) => s.split(',').collect::<Vec<_>>(), _ => vec![] },
                "createdAt": t(&r[3]), "revokedAt": t(&r[4]),
            })
        })
        .collect();
    Ok(json!({"keys": keys}))
}

pub fn revoke_key(db: &Db, key_id: &str) -> Result<serde_json::Value> {
    let c = db.conn()?;
    let changed = db::execute(
        &c,
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
        vec![SqlValue::Text(key_id.to_ascii_lowercase()), SqlValue::Text(crate::clock::now_rfc3339())],
    )?;
    if changed == 0 {
        bail!("no key {key_id}");
    }
    Ok(json!({"keyId": key_id, "revoked": true}))
}
