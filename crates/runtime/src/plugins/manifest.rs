//! A plugin's folder as read from disk: `plugin.toml` (its [`Manifest`])
//! and the rules it must keep, and `plugin.wasm` (its component), read and
//! size-checked; the limits a plugin may ask for.

use crate::engine::providers::adapter::Interface;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const MANIFEST: &str = "plugin.toml";
pub const COMPONENT: &str = "plugin.wasm";
/// The largest component file a plugin may ship.
pub const MAX_COMPONENT_BYTES: u64 = 32 << 20;
/// Outbound hosts one plugin may name.
pub const MAX_HOSTS: usize = 8;
pub const MAX_SETTINGS: usize = 32;
/// What a plugin may ask for at most, and what it gets when it asks nothing.
pub const MAX_MEMORY_MIB: u32 = 256;
pub const DEFAULT_MEMORY_MIB: u32 = 64;
pub const MAX_TIMEOUT_MS: u32 = 30_000;
pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;
/// Fuel of one call, in millions of wasmtime's units (counted as wasm runs;
/// host calls cost none). Measured here: a tight loop spends the maximum in
/// well under a second, so fuel stops busy loops and the time limit stops
/// everything else.
pub const MAX_FUEL_MILLIONS: u32 = 10_000;
pub const DEFAULT_FUEL_MILLIONS: u32 = 1_000;

/// `plugin.toml`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Lowercase letters, digits and dashes, 2 to 64, starting with a letter.
    pub name: String,
    /// `MAJOR.MINOR.PATCH`, optionally with a pre-release or build suffix.
    pub version: String,
    pub interface: Interface,
    /// The only hosts (`name` or `name:port`) the plugin may reach.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// The settings it reads, by name; a secret one is never shown or logged.
    #[serde(default)]
    pub settings: BTreeMap<String, Setting>,
    #[serde(default)]
    pub limits: Limits,
    /// An `ai` plugin that makes embeddings declares them: its `embed` is
    /// then asked for the vectors of its businesses' passages and questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbeddingsDeclared>,
}

/// `[embeddings]` of an `ai` plugin's manifest.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsDeclared {
    /// The model's name (a change of name re-embeds the business's passages).
    pub model: String,
    /// Floats per vector: must be the dimension of the server's vector index
    /// (`serve --ai-embeddings-dimensions`, 1536 by default).
    pub dimensions: u32,
}

impl EmbeddingsDeclared {
    /// The name its vectors are stored under (`data_sources.embedded_model`).
    pub fn stored_model(&self, plugin: &str) -> String {
        format!("plugin:{plugin}/{}", self.model)
    }
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    #[serde(default)]
    pub secret: bool,
    #[serde(default)]
    pub required: bool,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    #[serde(default = "default_memory")]
    pub memory_mib: u32,
    #[serde(default = "default_timeout")]
    pub timeout_ms: u32,
    #[serde(default = "default_fuel")]
    pub fuel_millions: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { memory_mib: DEFAULT_MEMORY_MIB, timeout_ms: DEFAULT_TIMEOUT_MS, fuel_millions: DEFAULT_FUEL_MILLIONS }
    }
}

fn default_fuel() -> u32 {
    DEFAULT_FUEL_MILLIONS
}

fn default_memory() -> u32 {
    DEFAULT_MEMORY_MIB
}

fn default_timeout() -> u32 {
    DEFAULT_TIMEOUT_MS
}

impl Manifest {
    /// Every rule of the manifest, each refusal naming its field.
    pub fn validate(&self) -> Result<()> {
        let name_ok =
            (2..=64).contains(&self.name.len()) && self.name.starts_with(|c: char| c.is_ascii_lowercase()) && self.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !name_ok {
            bail!("`name` must be 2 to 64 lowercase letters, digits and dashes, starting with a letter");
        }
        if !version_ok(&self.version) {
            bail!("`version` must look like 1.2.3 (optionally 1.2.3-beta.1 or 1.2.3+build)");
        }
        if self.allowed_hosts.len() > MAX_HOSTS {
            bail!("`allowed_hosts` names {} hosts; a plugin may name at most {MAX_HOSTS}", self.allowed_hosts.len());
        }
        for h in &self.allowed_hosts {
            if !host_ok(h) {
                bail!("`allowed_hosts`: `{}` is not a host name or name:port (no scheme, path, wildcard or address range)", h.escape_debug());
            }
        }
        if self.settings.len() > MAX_SETTINGS {
            bail!("`settings` declares {} settings; at most {MAX_SETTINGS}", self.settings.len());
        }
        for name in self.settings.keys() {
            let ok = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !ok {
                bail!("`settings`: `{}` must be 1 to 64 letters, digits, dashes or underscores", name.escape_debug());
            }
        }
        if !(1..=MAX_MEMORY_MIB).contains(&self.limits.memory_mib) {
            bail!("`limits.memory_mib` must be 1 to {MAX_MEMORY_MIB}");
        }
        if !(1..=MAX_TIMEOUT_MS).contains(&self.limits.timeout_ms) {
            bail!("`limits.timeout_ms` must be 1 to {MAX_TIMEOUT_MS}");
        }
        if !(1..=MAX_FUEL_MILLIONS).contains(&self.limits.fuel_millions) {
            bail!("`limits.fuel_millions` must be 1 to {MAX_FUEL_MILLIONS}");
        }
        if let Some(e) = &self.embeddings {
            if self.interface.name() != "ai" {
                bail!("`embeddings`: only an `ai` plugin makes embeddings");
            }
            if !(1..=64).contains(&e.model.len()) || !e.model.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
                bail!("`embeddings.model` must be 1 to 64 letters, digits, dots, dashes or underscores");
            }
            if !(1..=8192).contains(&e.dimensions) {
                bail!("`embeddings.dimensions` must be 1 to 8192");
            }
        }
        Ok(())
    }
}

fn version_ok(v: &str) -> bool {
    let core = v.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    let suffix = &v[core.len()..];
    parts.len() == 3
        && parts.iter().all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
        && suffix.len() <= 64
        && suffix.bytes().skip(1).all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'+')
        && (suffix.is_empty() || suffix.len() > 1)
}

/// A DNS name of letters, digits, dashes and dots (at least one dot, or
/// `localhost`), optionally with a port.
fn host_ok(h: &str) -> bool {
    let (name, port) = match h.rsplit_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (h, None),
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
    let labels_ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-') && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    let not_an_address = name.parse::<std::net::IpAddr>().is_err() && !name.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    port_ok && labels_ok && not_an_address && (name.contains('.') || name == "localhost")
}

/// Reads `dir`'s manifest and checks its rules.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let manifest_path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&manifest_path).with_context(|| format!("reading {}", manifest_path.display()))?;
    let manifest: Manifest = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {}", manifest_path.display(), e.to_string().trim_end()))?;
    manifest.validate().with_context(|| format!("{}", manifest_path.display()))?;
    Ok(manifest)
}

/// Reads the plugin in `dir` and checks its manifest's rules; returns the
/// manifest and the component's bytes.
pub fn read(dir: &Path) -> Result<(Manifest, Vec<u8>)> {
    let manifest = read_manifest(dir)?;
    let wasm_path = component_path(dir)?;
    let wasm = std::fs::read(&wasm_path).with_context(|| format!("reading {}", wasm_path.display()))?;
    Ok((manifest, wasm))
}

/// `dir`'s component file, once it is known to exist and not be too large
/// (without reading it).
pub fn component_path(dir: &Path) -> Result<std::path::PathBuf> {
    let wasm_path = dir.join(COMPONENT);
    let bytes = std::fs::metadata(&wasm_path).with_context(|| format!("reading {}", wasm_path.display()))?.len();
    if bytes > MAX_COMPONENT_BYTES {
        bail!("{}: {bytes} bytes; a plugin's component may be at most {MAX_COMPONENT_BYTES}", wasm_path.display());
    }
    Ok(wasm_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_ai_plugin_declares_embeddings_and_within_bounds() {
        let manifest = |interface: &str, dims: u32| -> Manifest {
            toml::from_str(&format!("name = \"p1\"\nversion = \"1.0.0\"\ninterface = \"{interface}\"\n[embeddings]\nmodel = \"m-1\"\ndimensions = {dims}\n")).unwrap()
        };
        assert!(manifest("ai", 1536).validate().is_ok());
        assert!(manifest("messenger", 1536).validate().unwrap_err().to_string().contains("only an `ai` plugin"));
        assert!(manifest("ai", 0).validate().unwrap_err().to_string().contains("embeddings.dimensions"));
        assert_eq!(manifest("ai", 3).embeddings.unwrap().stored_model("p1"), "plugin:p1/m-1");
    }

    #[test]
    fn versions_and_hosts() {
        for ok in ["1.2.3", "0.1.0-beta.1", "10.0.0+build.5"] {
            assert!(version_ok(ok), "{ok}");
        }
        for bad in ["1.2", "1.2.3.4", "v1.2.3", "1.2.3-", "a.b.c", ""] {
            assert!(!version_ok(bad), "{bad}");
        }
        for ok in ["api.example.com", "graph.example.com:443", "localhost:8080"] {
            assert!(host_ok(ok), "{ok}");
        }
        for bad in ["https://api.example.com", "*.example.com", "10.0.0.1", "example", "api.example.com/path", "a..b", "api.example.com:0", "[::1]:80"] {
            assert!(!host_ok(bad), "{bad}");
        }
    }
}
