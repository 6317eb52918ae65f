//! The plugins of this process: every folder under `serve --plugin-dir`
//! that passes its checks, compiled once and linked into its interface's
//! provider world with the limits its manifest asked for. Loaded at start
//! and again on SIGHUP ([`Registry::reload`]).
//!
//! A call takes the plugin it needs out of the current set (an `Arc`), so a
//! reload never drops work in flight: a call that started on the old
//! version finishes on it, the next one gets the new version. A plugin that
//! fails its checks on reload is refused with a logged reason; if an
//! earlier version of it was loaded, that version stays.
//!
//! Plugins run on an engine of their own that counts fuel (the embedded
//! components' engine does not pay for counting), with its own epoch ticker
//! for their time limits and its own instance pool (a fresh instance per
//! call reuses a slot's pages: with the on-demand allocator a plugin call
//! cost 8.5 times an embedded one, with the pool 1.09; bench/plugins.py).

use super::http;
use super::manifest::{self, Manifest};
use crate::engine::providers::adapter::{Adapter, CallLimits};
use anyhow::{Context, Result};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// One loaded plugin.
pub struct Loaded {
    pub manifest: Manifest,
    /// Its adapter, of the [`Provider`](crate::engine::providers::adapter::Provider)
    /// type of its manifest's interface.
    pub provider: Adapter,
}

/// The plugins of this process.
pub struct Registry {
    /// None without `--plugin-dir`: no plugin engine, pool or ticker is made.
    source: Option<Source>,
    /// The outbound address rules of `serve`: public addresses only, unless
    /// `--webhook-allow-private`.
    public_only: bool,
    current: RwLock<Arc<HashMap<String, Arc<Loaded>>>>,
}

/// Where plugins come from and what compiles them.
struct Source {
    dir: PathBuf,
    engine: Engine,
    cache_dir: PathBuf,
}

/// The engine plugins run on (also `plugin check`'s, so a check compiles
/// exactly what `serve` would).
pub fn engine() -> Result<Engine> {
    let mut config = Config::new();
    config
        // Its own pool: a fresh instance per call reuses a slot's pages.
        .allocation_strategy(crate::compiled::pooling(PLUGIN_INSTANCES, (manifest::MAX_MEMORY_MIB as usize) << 20))
        .wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(true);
    Ok(Engine::new(&config)?)
}

/// Plugin calls in flight at once across the process (job steps that call
/// out are fewer: `serve --job-concurrency`, at most 256).
const PLUGIN_INSTANCES: u32 = 256;

/// Links `component` into `manifest`'s interface world with its limits.
pub fn link(engine: &Engine, manifest: &Manifest, component: &Component, public_only: bool) -> Result<Adapter> {
    let limits = CallLimits {
        name: format!("plugin:{}", manifest.name).into(),
        memory_bytes: (manifest.limits.memory_mib as usize) << 20,
        deadline: Duration::from_millis(manifest.limits.timeout_ms.into()),
        fuel: Some(u64::from(manifest.limits.fuel_millions) * 1_000_000),
        http: Some(Arc::new(http::Grant::new(&manifest.allowed_hosts, public_only)?)),
        plugin: true,
    };
    manifest.interface.link(engine, component, limits).map_err(|e| anyhow::anyhow!("does not implement world `{}` of interface `{}` ({:#})", manifest.interface.world(), manifest.interface.name(), e))
}

impl Registry {
    /// Loads every plugin under `dir` (none without one).
    pub fn start(dir: Option<PathBuf>, cache_dir: &Path, public_only: bool) -> Result<Registry> {
        let source = match dir {
            None => None,
            Some(dir) => {
                if !dir.is_dir() {
                    anyhow::bail!("--plugin-dir {}: not a folder", dir.display());
                }
                let engine = engine()?;
                let ticker = engine.clone();
                std::thread::Builder::new().name("plugin-epoch".into()).spawn(move || loop {
                    std::thread::sleep(crate::compiled::EPOCH_TICK);
                    ticker.increment_epoch();
                })?;
                std::fs::create_dir_all(cache_dir)?;
                Some(Source { dir, engine, cache_dir: cache_dir.to_path_buf() })
            }
        };
        let registry = Registry { source, public_only, current: RwLock::new(Arc::new(HashMap::new())) };
        registry.reload();
        Ok(registry)
    }

    /// The loaded plugin named `name`, as of now.
    pub fn get(&self, name: &str) -> Option<Arc<Loaded>> {
        self.current.read().get(name).cloned()
    }

    /// Every loaded plugin, by name.
    pub fn all(&self) -> Vec<Arc<Loaded>> {
        let mut v: Vec<Arc<Loaded>> = self.current.read().values().cloned().collect();
        v.sort_by(|a, b| a.manifest.name.cmp(&b.manifest.name));
        v
    }

    /// Reads the plugin folder again and swaps the new set in. Every
    /// plugin is logged as loaded or refused (with why).
    pub fn reload(&self) {
        let Some(source) = &self.source else { return };
        let dir = &source.dir;
        let previous = self.current.read().clone();
        let mut next: HashMap<String, Arc<Loaded>> = HashMap::new();
        let mut folders: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect(),
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %e, "plugin folder unreadable: keeping the loaded plugins");
                return;
            }
        };
        folders.sort();
        for folder in folders {
            match self.load_one(source, &folder) {
                Ok(loaded) if next.contains_key(&loaded.manifest.name) => {
                    tracing::error!(folder = %folder.display(), name = %loaded.manifest.name, error = "another folder already loaded a plugin of this name", "plugin refused");
                }
                Ok(loaded) => {
                    let m = &loaded.manifest;
                    tracing::info!(name = %m.name, version = %m.version, interface = m.interface.name(), folder = %folder.display(), "plugin loaded");
                    next.insert(m.name.clone(), Arc::new(loaded));
                }
                Err(e) => {
                    let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                    tracing::error!(folder = %folder.display(), error = %format!("{e:#}"), "plugin refused");
                    // A broken update does not take a working version away.
                    if let Some(old) = previous.get(&name).filter(|_| !next.contains_key(&name)) {
                        tracing::warn!(name = %old.manifest.name, version = %old.manifest.version, "plugin kept: the folder's new contents were refused");
                        next.insert(name, old.clone());
                    }
                }
            }
        }
        tracing::info!(loaded = next.len(), dir = %dir.display(), "plugins loaded");
        *self.current.write() = Arc::new(next);
    }

    fn load_one(&self, source: &Source, folder: &Path) -> Result<Loaded> {
        let (manifest, wasm) = manifest::read(folder)?;
        let component = crate::compiled::compile_cached(&source.engine, &source.cache_dir, &format!("plugin-{}", manifest.name), &wasm)
            .with_context(|| format!("{}: not a WebAssembly component this build can compile", folder.join(manifest::COMPONENT).display()))?;
        let provider = link(&source.engine, &manifest, &component, self.public_only)?;
        Ok(Loaded { manifest, provider })
    }
}
