//! Which plugin serves a business's provider interface, and with which
//! settings: one `provider_choices` row per business and interface (none:
//! the embedded sandbox adapter). Set with `switchboard admin provider use`
//! (checked against the plugin's manifest: every required setting given,
//! no setting it does not declare), cleared with `… reset`, shown with
//! `… show` (a secret setting's value never: only that it is set). A
//! business's choice is read at every call into its adapter, so a change
//! takes effect at the next call, and never touches another business.

use super::{Interface, Manifest};
use crate::db::in_transaction;
use crate::db::{self, require_business, Db, SqlValue};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;

/// A business's choice for one interface.
pub struct Choice {
    pub plugin: String,
    pub settings: HashMap<String, String>,
}

/// The choice of `business` for `interface`, if it made one.
pub fn read(conn: &db::Connection, business: &str, interface: Interface) -> Result<Option<Choice>, libsql::Error> {
    let rows = conn.query_rows(
        "SELECT plugin, settings_json FROM provider_choices WHERE business_id = ?1 AND interface = ?2",
        vec![SqlValue::Text(business.to_string()), SqlValue::Text(interface.name().into())],
    )?;
    Ok(rows.into_iter().next().map(|r| Choice { plugin: db::text(&r[0]), settings: serde_json::from_str(&db::text(&r[1])).unwrap_or_default() }))
}

/// `admin provider use`: `business`'s `interface` is served by the plugin in
/// `plugin_dir/<plugin>` with `settings`.
pub fn choose(db: &Db, business: &str, interface: Interface, plugin_dir: &Path, plugin: &str, settings: &[(String, String)]) -> Result<serde_json::Value> {
    let folder = plugin_dir.join(plugin);
    let read = || -> Result<Manifest> {
        let manifest = super::read_manifest(&folder)?;
        super::component_path(&folder)?;
        Ok(manifest)
    };
    let manifest = read().with_context(|| format!("the plugin `{plugin}` in {}", plugin_dir.display()))?;
    if manifest.name != plugin {
        bail!("{} holds the plugin `{}`, not `{plugin}`", folder.display(), manifest.name);
    }
    if manifest.interface != interface {
        bail!("`{plugin}` is a {} plugin, not a {} plugin", manifest.interface.name(), interface.name());
    }
    let settings = checked_settings(&manifest, settings)?;
    let business = business.to_ascii_lowercase();
    let c = db.conn()?;
    in_transaction(&c, || {
        require_business(&c, &business)?;
        store(&c, &business, interface, plugin, &settings)
    })?;
    Ok(describe(&business, interface, Some((plugin, &settings, Some(&manifest)))))
}

/// Writes `business`'s choice of `plugin` for `interface` (in the caller's
/// transaction).
pub fn store(c: &db::Connection, business: &str, interface: Interface, plugin: &str, settings: &HashMap<String, String>) -> Result<()> {
    db::execute(
        c,
        "INSERT INTO provider_choices (business_id, interface, plugin, settings_json, updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (business_id, interface) DO UPDATE SET plugin = excluded.plugin, settings_json = excluded.settings_json, updated_at_ms = excluded.updated_at_ms",
        vec![
            SqlValue::Text(business.into()),
            SqlValue::Text(interface.name().into()),
            SqlValue::Text(plugin.into()),
            SqlValue::Text(serde_json::to_string(settings)?),
            SqlValue::Integer(crate::clock::now_ms()),
        ],
    )?;
    Ok(())
}

/// Removes `business`'s choice for `interface` (in the caller's transaction).
pub fn clear(c: &db::Connection, business: &str, interface: Interface) -> Result<()> {
    db::execute(c, "DELETE FROM provider_choices WHERE business_id = ?1 AND interface = ?2", vec![SqlValue::Text(business.into()), SqlValue::Text(interface.name().into())])?;
    Ok(())
}

/// Every required setting given, none the manifest does not declare.
pub fn checked_settings(manifest: &Manifest, given: &[(String, String)]) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    for (k, v) in given {
        if !manifest.settings.contains_key(k) {
            let declared: Vec<&str> = manifest.settings.keys().map(String::as_str).collect();
            bail!("setting `{k}`: `{}` declares no such setting (it declares: {})", manifest.name, if declared.is_empty() { "none".into() } else { declared.join(", ") });
        }
        if v.len() > 4096 {
            bail!("setting `{k}`: at most 4096 bytes");
        }
        out.insert(k.clone(), v.clone());
    }
    for (k, s) in &manifest.settings {
        if s.required && !out.contains_key(k) {
            bail!("`{}` requires the setting `{k}`", manifest.name);
        }
    }
    Ok(out)
}

/// `admin provider reset`: back to the embedded sandbox adapter.
pub fn reset(db: &Db, business: &str, interface: Interface) -> Result<serde_json::Value> {
    let business = business.to_ascii_lowercase();
    let c = db.conn()?;
    in_transaction(&c, || {
        require_business(&c, &business)?;
        clear(&c, &business, interface)
    })?;
    Ok(describe(&business, interface, None))
}

/// `admin provider show`: the business's adapter of every interface.
pub fn show(db: &Db, business: &str, plugin_dir: Option<&Path>) -> Result<serde_json::Value> {
    let business = business.to_ascii_lowercase();
    let c = db.conn()?;
    require_business(&c, &business)?;
    let mut out = Vec::new();
    for interface in Interface::ALL {
        let choice = read(&c, &business, interface)?;
        out.push(match &choice {
            Some(ch) => {
                let manifest = plugin_dir.and_then(|d| super::read_manifest(&d.join(&ch.plugin)).ok());
                describe(&business, interface, Some((&ch.plugin, &ch.settings, manifest.as_ref())))
            }
            None => describe(&business, interface, None),
        });
    }
    Ok(json!({"businessId": business, "providers": out}))
}

/// A choice as the admin commands print it: a secret setting's value is
/// never shown (without the manifest at hand, no value is).
pub fn describe(business: &str, interface: Interface, plugin: Option<(&str, &HashMap<String, String>, Option<&Manifest>)>) -> serde_json::Value {
    match plugin {
        // The built-in adapter: the embedded sandbox, or the server's own AI.
        None => json!({"businessId": business, "interface": interface.name(), "adapter": interface.built_in()}),
        Some((name, settings, manifest)) => {
            let mut keys: Vec<&String> = settings.keys().collect();
            keys.sort();
            let shown: serde_json::Map<String, serde_json::Value> = keys
                .into_iter()
                .map(|k| {
                    let public = manifest.and_then(|m| m.settings.get(k)).is_some_and(|s| !s.secret);
                    (k.clone(), if public { json!(settings[k]) } else { json!("(set)") })
                })
                .collect();
            json!({"businessId": business, "interface": interface.name(), "adapter": "plugin", "plugin": name, "settings": shown})
        }
    }
}
