//! Which plugin serves a business's provider interface, and with which
//! settings: one `provider_choices` row per business and interface (none:
//! the embedded sandbox adapter). Set with `switchboard admin provider use`
//! (checked against the plugin's manifest: every required setting given,
//! no setting it does not declare), cleared with `… reset`, shown with
//! `… show` (a secret setting's value never: only that it is set). A
//! business's choice is read at every call into its adapter, so a change
//! takes effect at the next call, and never touches another business.
//! Secret settings are stored sealed (`secret_settings_json`, see
//! [`super::sealed`]) and opened only for a call into the plugin.

use super::sealed::{self, Binding, Keys};
use super::{Interface, Manifest};
use crate::db::in_transaction;
use crate::db::{self, params, require_business, Db};
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;

/// A business's choice for one interface, as stored.
pub struct Choice {
    pub business: String,
    pub interface: Interface,
    pub plugin: String,
    /// The settings stored in clear (and, in a row older than sealing, its
    /// secrets).
    pub settings: HashMap<String, String>,
    /// The secret settings, sealed: name to sealed value.
    pub sealed: HashMap<String, String>,
    /// An `ai` plugin that declares embeddings: the model its vectors are
    /// stored under (`plugin:<name>/<model>`); none: the server's.
    pub embeddings_model: Option<String>,
}

impl Choice {
    /// Every setting in clear, for a call into the plugin: the sealed ones
    /// opened with `keys` (an error without the key that sealed them).
    pub fn open(&self, keys: &Keys) -> Result<HashMap<String, String>> {
        let mut all = self.settings.clone();
        for (name, token) in &self.sealed {
            all.insert(name.clone(), keys.open(token, &self.binding(name))?);
        }
        Ok(all)
    }

    /// The settings as they may be shown: a sealed one as `(set)`.
    pub fn shown(&self) -> HashMap<String, String> {
        let mut out = self.settings.clone();
        out.extend(self.sealed.keys().map(|k| (k.clone(), "(set)".to_string())));
        out
    }

    fn binding<'a>(&'a self, setting: &'a str) -> Binding<'a> {
        Binding { business: &self.business, interface: self.interface.name(), plugin: &self.plugin, setting }
    }
}

/// The choice of `business` for `interface`, if it made one.
pub fn read(conn: &db::Connection, business: &str, interface: Interface) -> Result<Option<Choice>> {
    let row = db::query_one_as::<(String, String, String, Option<String>)>(
        conn,
        "SELECT plugin, settings_json, secret_settings_json, embeddings_model FROM provider_choices WHERE business_id = ?1 AND interface = ?2",
        params![business, interface.name()],
    )?;
    Ok(row.map(|(plugin, settings, sealed, embeddings_model)| Choice {
        business: business.to_string(),
        interface,
        plugin,
        settings: serde_json::from_str(&settings).unwrap_or_default(),
        sealed: serde_json::from_str(&sealed).unwrap_or_default(),
        embeddings_model,
    }))
}

/// `admin provider use`: `business`'s `interface` is served by the plugin in
/// `plugin_dir/<plugin>` with `settings`.
pub fn choose(db: &Db, keys: &Keys, business: &str, interface: Interface, plugin_dir: &Path, plugin: &str, settings: &[(String, String)]) -> Result<serde_json::Value> {
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
    let chosen = sealed_choice(keys, &business, interface, plugin, &settings, &manifest)?;
    let c = db.conn()?;
    in_transaction(&c, || {
        require_business(&c, &business)?;
        fits_the_index(&c, &manifest)?;
        write(&c, &chosen)
    })?;
    Ok(describe(&business, interface, Some((plugin, &settings, Some(&manifest)))))
}

/// `business`'s choice of `plugin` for `interface`, ready to write: the
/// settings `manifest` marks secret sealed, the others in clear. Refused
/// when a secret is given and the server has no settings key, so nothing
/// secret is ever written in clear.
pub fn sealed_choice(keys: &Keys, business: &str, interface: Interface, plugin: &str, settings: &HashMap<String, String>, manifest: &Manifest) -> Result<Choice> {
    let embeddings_model = manifest.embeddings.as_ref().map(|e| e.stored_model(plugin));
    let mut choice = Choice { business: business.into(), interface, plugin: plugin.into(), settings: HashMap::new(), sealed: HashMap::new(), embeddings_model };
    // In name order, so a refusal names the same setting every time.
    let mut named: Vec<(&String, &String)> = settings.iter().collect();
    named.sort();
    for (name, value) in named {
        if manifest.settings.get(name).is_some_and(|s| s.secret) {
            let token = keys.seal(value, &choice.binding(name))?;
            choice.sealed.insert(name.clone(), token);
        } else {
            choice.settings.insert(name.clone(), value.clone());
        }
    }
    Ok(choice)
}

/// An `ai` plugin's declared embeddings fit the server's vector index (one
/// table, one dimension); refused with both numbers otherwise.
pub fn fits_the_index(c: &db::Connection, manifest: &Manifest) -> Result<()> {
    let Some(e) = &manifest.embeddings else { return Ok(()) };
    if let Some(d) = db::query_one_as::<i64>(c, "SELECT dimensions FROM knowledge_embedding WHERE id = 1", params![])? {
        if d > 0 && d != e.dimensions as i64 {
            bail!("`{}` makes embeddings of {} dimensions; this server's vector index holds {d} (serve --ai-embeddings-dimensions)", manifest.name, e.dimensions);
        }
    }
    Ok(())
}

/// Writes a choice (in the caller's transaction). A change of the model
/// that embeds the business's passages re-embeds them.
pub fn write(c: &db::Connection, choice: &Choice) -> Result<()> {
    let before = read(c, &choice.business, choice.interface)?.and_then(|ch| ch.embeddings_model);
    db::execute(
        c,
        "INSERT INTO provider_choices (business_id, interface, plugin, settings_json, secret_settings_json, embeddings_model, updated_at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (business_id, interface) DO UPDATE SET plugin = excluded.plugin, settings_json = excluded.settings_json, \
         secret_settings_json = excluded.secret_settings_json, embeddings_model = excluded.embeddings_model, updated_at_ms = excluded.updated_at_ms",
        params![
            &choice.business,
            choice.interface.name(),
            &choice.plugin,
            serde_json::to_string(&choice.settings)?,
            serde_json::to_string(&choice.sealed)?,
            choice.embeddings_model.as_deref(),
            crate::clock::now_ms(),
        ],
    )?;
    if before != choice.embeddings_model {
        crate::knowledge::embeddings_changed(c, &choice.business)?;
    }
    Ok(())
}

/// `admin provider reseal`: every stored secret sealed under the current
/// key (after a rotation, with the old key as
/// `SWITCHBOARD_SETTINGS_KEY_PREVIOUS`). With the plugin folder, a row
/// written before sealing has the secrets its manifest names sealed too.
pub fn reseal(db: &Db, keys: &Keys, plugin_dir: Option<&Path>) -> Result<serde_json::Value> {
    if !keys.is_set() {
        bail!("reseal needs the new key in {}", sealed::KEY_VAR);
    }
    let c = db.conn()?;
    let rows: Vec<(String, String)> = db::query_as(&c, "SELECT business_id, interface FROM provider_choices ORDER BY business_id, interface", params![])?;
    let mut resealed = 0u32;
    in_transaction(&c, || {
        for (business, interface) in &rows {
            let Some(interface) = Interface::named(interface) else { continue };
            let Some(mut choice) = read(&c, business, interface)? else { continue };
            let manifest = plugin_dir.and_then(|d| super::read_manifest(&d.join(&choice.plugin)).ok());
            let legacy: Vec<String> = choice.settings.keys().filter(|k| manifest.as_ref().and_then(|m| m.settings.get(*k)).is_some_and(|s| s.secret)).cloned().collect();
            let stale: Vec<String> = choice.sealed.iter().filter(|(_, t)| !keys.is_current(t)).map(|(k, _)| k.clone()).collect();
            if legacy.is_empty() && stale.is_empty() {
                continue;
            }
            for name in stale {
                let value = keys.open(&choice.sealed[&name], &choice.binding(&name))?;
                let token = keys.seal(&value, &choice.binding(&name))?;
                choice.sealed.insert(name, token);
            }
            for name in legacy {
                let value = choice.settings.remove(&name).unwrap_or_default();
                let token = keys.seal(&value, &choice.binding(&name))?;
                choice.sealed.insert(name, token);
            }
            write(&c, &choice)?;
            resealed += 1;
        }
        Ok(())
    })?;
    Ok(json!({"resealed": resealed}))
}

/// Removes `business`'s choice for `interface` (in the caller's
/// transaction); a plugin that made its embeddings hands them back to the
/// server's model.
pub fn clear(c: &db::Connection, business: &str, interface: Interface) -> Result<()> {
    let had_embeddings = read(c, business, interface)?.is_some_and(|ch| ch.embeddings_model.is_some());
    db::execute(c, "DELETE FROM provider_choices WHERE business_id = ?1 AND interface = ?2", params![business, interface.name()])?;
    if had_embeddings {
        crate::knowledge::embeddings_changed(c, business)?;
    }
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
                describe(&business, interface, Some((&ch.plugin, &ch.shown(), manifest.as_ref())))
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
