//! The channel page's provider choice: which adapter serves the business's
//! messages and calls (the embedded sandbox, or a plugin this server has
//! loaded), with the business's settings for it. The same
//! `provider_choices` rows as `switchboard admin provider`. Reading takes
//! any role; choosing takes an owner. A secret setting's value never comes
//! back (`"(set)"`); saving the same plugin again keeps the settings it is
//! not given, so an owner need not type a token again to change another
//! setting.

use super::{business_writer, unavailable};
use crate::pipeline::App;
use crate::plugins::{choice, Interface};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use switchboard_gateway::{Failure, SessionRecord};

/// The interface a path names (`/console/api/providers/{interface}`).
pub fn interface_of(path: &str) -> Option<Interface> {
    let name = path.strip_prefix("/console/api/providers/")?;
    Interface::ALL.into_iter().find(|i| i.name() == name)
}

/// The business's adapter of every interface, and the plugins it may choose.
pub fn show(app: &App, s: &SessionRecord) -> Result<serde_json::Value, Failure> {
    let db = app.db_for(&s.business_id)?;
    let c = db.conn().map_err(unavailable)?;
    let registry = &app.components.providers().plugins;
    let mut current = Vec::new();
    for interface in Interface::ALL {
        let chosen = choice::read(&c, &s.business_id, interface).map_err(unavailable)?;
        current.push(match &chosen {
            Some(ch) => {
                let loaded = registry.get(&ch.plugin);
                let mut d = choice::describe(&s.business_id, interface, Some((&ch.plugin, &ch.shown(), loaded.as_ref().map(|l| &l.manifest))));
                d["loaded"] = json!(loaded.is_some());
                d
            }
            None => choice::describe(&s.business_id, interface, None),
        });
    }
    let plugins: Vec<serde_json::Value> = registry
        .all()
        .iter()
        .map(|l| {
            let m = &l.manifest;
            json!({
                "name": m.name,
                "version": m.version,
                "interface": m.interface.name(),
                "settings": m.settings.iter().map(|(k, v)| json!({"name": k, "secret": v.secret, "required": v.required})).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(json!({"providers": current, "plugins": plugins}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Choose {
    /// None: back to the embedded sandbox.
    plugin: Option<String>,
    /// A value sets, null removes; what is not named is kept when the
    /// plugin stays the same.
    #[serde(default)]
    settings: BTreeMap<String, Option<String>>,
}

pub fn set(app: &App, s: &SessionRecord, interface: Interface, body: &[u8]) -> Result<serde_json::Value, Failure> {
    if s.role != "owner" {
        return Err(Failure::authorization("owner_role_required", "only an owner of the business can choose its providers"));
    }
    let wanted: Choose = serde_json::from_slice(body).map_err(|e| Failure::validation("invalid_body", format!("send {{\"plugin\": \"name\" or null, \"settings\": {{…}}}}: {e}")))?;
    let (_gate, db) = business_writer(app, &s.business_id)?;
    let c = db.conn().map_err(unavailable)?;
    let Some(name) = wanted.plugin else {
        crate::db::in_transaction(&c, || choice::clear(&c, &s.business_id, interface)).map_err(unavailable)?;
        return Ok(choice::describe(&s.business_id, interface, None));
    };
    let loaded = app
        .components
        .providers()
        .plugins
        .get(&name)
        .filter(|l| l.manifest.interface == interface)
        .ok_or_else(|| Failure::not_found("plugin_not_found", format!("no {} plugin named `{}` is loaded in this server", interface.name(), name.escape_debug())))?;
    let mut settings = match choice::read(&c, &s.business_id, interface).map_err(unavailable)? {
        Some(ch) if ch.plugin == name => ch.open(&app.components.providers().keys).map_err(|e| Failure::validation("settings_sealed", format!("{e:#}")))?,
        _ => Default::default(),
    };
    for (k, v) in wanted.settings {
        match v {
            Some(v) => settings.insert(k, v),
            None => settings.remove(&k),
        };
    }
    let given: Vec<(String, String)> = settings.into_iter().collect();
    let settings = choice::checked_settings(&loaded.manifest, &given).map_err(|e| Failure::validation("invalid_settings", format!("{e:#}")))?;
    let chosen = choice::sealed_choice(&app.components.providers().keys, &s.business_id, interface, &name, &settings, &loaded.manifest)
        .map_err(|e| Failure::validation("settings_key_missing", format!("{e:#}")))?;
    choice::fits_the_index(&c, &loaded.manifest).map_err(|e| Failure::validation("invalid_plugin", format!("{e:#}")))?;
    crate::db::in_transaction(&c, || choice::write(&c, &chosen)).map_err(unavailable)?;
    tracing::info!(interface = interface.name(), plugin = %name, businessId = %s.business_id, "console plugin chosen");
    Ok(choice::describe(&s.business_id, interface, Some((&name, &settings, Some(&loaded.manifest)))))
}
