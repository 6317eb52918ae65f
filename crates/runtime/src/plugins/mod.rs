//! Plugins (issue 18): a provider adapter that comes from outside the
//! binary, as a folder holding `plugin.toml` (its manifest) and
//! `plugin.wasm` (the component).
//!
//! * this file: `switchboard plugin check DIR` (would it load?) and
//!   `switchboard plugin template` (a working one to start from);
//! * [`manifest`]: the manifest and its rules, a plugin folder read from
//!   disk;
//! * [`registry`]: the plugins `serve --plugin-dir` loaded, reloaded on
//!   SIGHUP, each linked with the limits its manifest asked for;
//! * [`choice`]: which plugin serves a business's interface, with that
//!   business's settings (`switchboard admin provider`);
//! * [`sealed`]: secret settings encrypted at rest under the server's key;
//! * [`http`]: a plugin's only way out, to the hosts its manifest names;
//! * [`pushed`]: what a provider pushes to us, read by the business's
//!   messenger plugin.
//!
//! A plugin is linked into its interface's provider world only (see
//! `engine::providers`): clock, ids, log, its own settings and outbound HTTP
//! to its manifest's hosts; no store, no filesystem, no environment.

pub mod choice;
pub mod http;
pub mod manifest;
pub mod pushed;
pub mod registry;
pub mod sealed;

pub use crate::engine::providers::adapter::Interface;
pub use manifest::{
    component_path, read, read_manifest, EmbeddingsDeclared, Limits, Manifest, Setting, COMPONENT, DEFAULT_FUEL_MILLIONS, DEFAULT_MEMORY_MIB, DEFAULT_TIMEOUT_MS, MANIFEST, MAX_COMPONENT_BYTES,
    MAX_FUEL_MILLIONS, MAX_HOSTS, MAX_MEMORY_MIB, MAX_SETTINGS, MAX_TIMEOUT_MS,
};
pub use registry::Registry;

use anyhow::{bail, Context, Result};
use std::path::Path;

/// A plugin folder that passed every check.
pub struct Checked {
    pub manifest: Manifest,
    pub bytes: u64,
}

/// Reads and checks the plugin in `dir`: the manifest's rules, then the
/// component compiles and links into its interface's provider world (the
/// imports it asks for are all that world gives, and it exports the
/// interface).
pub fn check(dir: &Path) -> Result<Checked> {
    let (manifest, wasm) = read(dir)?;
    let engine = registry::engine()?;
    let component = wasmtime::component::Component::new(&engine, &wasm).map_err(|e| anyhow::anyhow!("{}: not a WebAssembly component this build can compile: {e}", dir.join(COMPONENT).display()))?;
    registry::link(&engine, &manifest, &component, false).map_err(|e| anyhow::anyhow!("{}: {e:#}", dir.join(COMPONENT).display()))?;
    Ok(Checked { bytes: wasm.len() as u64, manifest })
}

/// `plugin check`'s answer.
pub fn describe(c: &Checked) -> serde_json::Value {
    let m = &c.manifest;
    serde_json::json!({
        "ok": true,
        "name": m.name,
        "version": m.version,
        "interface": m.interface,
        "world": m.interface.world(),
        "allowedHosts": m.allowed_hosts,
        "settings": m.settings.iter().map(|(k, s)| serde_json::json!({"name": k, "secret": s.secret, "required": s.required})).collect::<Vec<_>>(),
        "limits": {"memoryMib": m.limits.memory_mib, "timeoutMs": m.limits.timeout_ms, "fuelMillions": m.limits.fuel_millions},
        "embeddings": m.embeddings.as_ref().map(|e| serde_json::json!({"model": e.model, "dimensions": e.dimensions})),
        "componentBytes": c.bytes,
    })
}

/// `plugin template`: a plugin folder that loads as it is (the embedded
/// sandbox adapter of `interface`) with a manifest to edit.
pub fn template(interface: Interface, name: &str, out: &Path) -> Result<serde_json::Value> {
    if out.exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} exists and is not empty", out.display());
    }
    let manifest = Manifest {
        name: name.to_string(),
        version: "0.1.0".into(),
        interface,
        allowed_hosts: Vec::new(),
        settings: interface.template_settings().iter().map(|s| (s.to_string(), Setting::default())).collect(),
        limits: Limits::default(),
        embeddings: None,
    };
    manifest.validate().context("--name")?;
    let embedded = interface.component();
    let wasm = crate::engine::embedded::COMPONENTS.iter().find(|(n, _)| *n == embedded).map(|(_, w)| *w).context("the embedded adapter is missing from this build")?;
    std::fs::create_dir_all(out)?;
    let header = "# A Switchboard plugin (see docs/plugins.md). `switchboard plugin check DIR`\n# says whether it loads.\n";
    std::fs::write(out.join(MANIFEST), format!("{header}{}", toml::to_string(&manifest)?))?;
    std::fs::write(out.join(COMPONENT), wasm)?;
    Ok(serde_json::json!({"dir": out.display().to_string(), "name": name, "interface": interface, "files": [MANIFEST, COMPONENT]}))
}
