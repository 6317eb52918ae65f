//! What every wasmtime engine of the process shares (the embedded
//! components' in `engine`, the plugins' in `plugins::Registry`): the
//! pooling allocator and its limits, the epoch tick deadlines are counted
//! in, and the cache of precompiled artifacts, so each component is
//! compiled once per binary (see [`artifact_dir`]).

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Wall-clock tick of the epoch counter.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Epoch ticks for a deadline.
pub fn deadline_ticks(deadline: Duration) -> u64 {
    (deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
}

/// The pooling allocator of an engine: `instances` component instances at
/// once, each memory up to `max_memory` bytes (the embedded components', and
/// the plugins' engine).
pub fn pooling(instances: u32, max_memory: usize) -> InstanceAllocationStrategy {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances * 4)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .max_memory_size(max_memory)
        // Reusing a slot should not page-fault: with PAGEMAP_SCAN (Linux
        // 6.7+) only the pages a call dirtied are reset, by memset, up to
        // this much; without it the low bytes are memset and the rest is
        // returned with madvise. At 4 MiB a fresh instance's GET or list
        // costs what it did at 16 (bench/README.md, issue 52), and a slot a
        // large call grew (an import's prepare and write: such an instance
        // is never kept warm, engine/limits.rs) keeps 4 MiB of it resident,
        // not 16: 13-21 MiB less after a 100k import.
        .linear_memory_keep_resident(4 << 20)
        .table_keep_resident(1 << 16)
        .pagemap_scan(wasmtime::Enabled::Auto);
    InstanceAllocationStrategy::Pooling(pool)
}

/// The lock file of a folder of artifacts: one process compiles while the
/// others starting at the same time wait for its file instead of compiling
/// the same component again.
const LOCK_FILE: &str = ".compile.lock";
/// Artifacts kept per component name (the most recently loaded): a few
/// builds side by side (debug and release, an older commit) each find
/// theirs, and the folder does not grow with every build.
const KEEP_PER_NAME: usize = 4;

/// The folder of precompiled artifacts: `wanted` (`serve
/// --component-cache`), else `switchboard/components` in the user's cache
/// folder, so a fresh data dir reuses what an earlier start of the same
/// binary compiled. Falls back to the data dir's `cache/` when that folder
/// cannot be made, written, or is writable by group or others (an artifact
/// is native code the process runs).
pub fn artifact_dir(wanted: Option<&Path>, data_dir: &Path) -> PathBuf {
    let fallback = data_dir.join("cache");
    let Some(dir) = wanted.map(Path::to_path_buf).or_else(|| dirs::cache_dir().map(|d| d.join("switchboard").join("components"))) else {
        return fallback;
    };
    match private_dir(&dir) {
        Ok(()) => dir,
        Err(e) => {
            tracing::warn!(cacheDir = %dir.display(), error = %e, fallback = %fallback.display(), "component cache unusable: using the data dir's");
            fallback
        }
    }
}

fn private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700).create(dir)?;
        if std::fs::metadata(dir)?.permissions().mode() & 0o022 != 0 {
            return Err(std::io::Error::other("group or others may write to it"));
        }
    }
    #[cfg(not(unix))]
    builder.create(dir)?;
    std::fs::OpenOptions::new().create(true).append(true).open(dir.join(LOCK_FILE)).map(drop)
}

/// Where a component's native code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A precompiled artifact in the cache folder.
    Cache,
    /// Compiled by this process.
    Compiled,
}

/// Compiles a component once per (bytes, engine configuration, version)
/// and keeps the native artifact in `cache_dir`.
pub(crate) fn compile_cached(engine: &Engine, cache_dir: &Path, name: &str, wasm: &[u8]) -> Result<Component> {
    load_or_compile(engine, cache_dir, name, wasm).map(|(c, _)| c)
}

pub(crate) fn load_or_compile(engine: &Engine, cache_dir: &Path, name: &str, wasm: &[u8]) -> Result<(Component, Origin)> {
    let mut h = Sha256::new();
    h.update(wasm);
    let mut compat = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut compat);
    h.update(std::hash::Hasher::finish(&compat).to_le_bytes());
    h.update(env!("CARGO_PKG_VERSION"));
    let key = hex::encode(&h.finalize()[..12]);
    let path = cache_dir.join(format!("{name}-{key}.cwasm"));
    if let Some(c) = load_artifact(engine, &path) {
        return Ok((c, Origin::Cache));
    }
    // Several servers starting at once on a cold cache (the API tests): the
    // first compiles, the others wait here and then load its file. Without
    // a lock file (an unwritable folder) each compiles for itself.
    let lock = std::fs::OpenOptions::new().create(true).append(true).open(cache_dir.join(LOCK_FILE)).ok();
    if let Some(l) = &lock {
        let _ = l.lock();
        if let Some(c) = load_artifact(engine, &path) {
            return Ok((c, Origin::Cache));
        }
    }
    // wasmtime compiles a component's functions in parallel on rayon's
    // pool: here a pool of this compile's own, whose threads end with it,
    // so the memory they worked in can go back to the system (the host's
    // `mi_collect` after the start) instead of staying with idle threads
    // for the life of the server.
    let pool = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("compile-{i}")).build()?;
    let bytes = pool.install(|| engine.precompile_component(wasm)).map_err(anyhow::Error::from).with_context(|| format!("compiling component {name}"))?;
    drop(pool);
    match write_artifact(cache_dir, &path, &bytes) {
        Ok(()) => {
            prune(cache_dir, name);
            drop(bytes);
            // Mapped from the file rather than copied from `bytes`: its
            // pages are the page cache's, shared with every other server
            // of this binary, and only those that run become resident.
            if let Some(c) = load_artifact(engine, &path) {
                return Ok((c, Origin::Compiled));
            }
            anyhow::bail!("component {name}: the artifact just written to {} does not load", path.display())
        }
        Err(e) => {
            tracing::warn!(cacheDir = %cache_dir.display(), error = %e, component = name, "component cache unwritable: compiled in memory");
            // SAFETY: just compiled by this engine.
            Ok((unsafe { Component::deserialize(engine, &bytes)? }, Origin::Compiled))
        }
    }
}

/// The artifact at `path`, if there is one this engine loads. One that does
/// not (truncated, overwritten, another engine's) is removed, to be
/// compiled again.
fn load_artifact(engine: &Engine, path: &Path) -> Option<Component> {
    if !path.exists() {
        return None;
    }
    // SAFETY: the file was written by `precompile_component` of this same
    // engine configuration (its name carries the compatibility hash) into a
    // folder only this user may write to (`artifact_dir`); wasmtime checks
    // its header and its engine settings before it maps the code.
    match unsafe { Component::deserialize_file(engine, path) } {
        Ok(c) => {
            // Marks it used, for `prune`.
            let _ = std::fs::File::options().append(true).open(path).and_then(|f| f.set_modified(std::time::SystemTime::now()));
            Some(c)
        }
        Err(e) => {
            tracing::warn!(artifact = %path.display(), error = %e, "component cache: an artifact does not load; compiling it again");
            let _ = std::fs::remove_file(path);
            None
        }
    }
}

/// Writes `bytes` to `path` whole or not at all: a unique temporary name
/// in the same folder, then a rename, so a reader never maps a partial file.
fn write_artifact(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("artifact");
    let tmp = dir.join(format!(".{file}.{}-{}.tmp", std::process::id(), SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Keeps the [`KEEP_PER_NAME`] most recently loaded artifacts of `name`
/// and removes the older ones (a server that mapped one keeps running it).
fn prune(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            let file = e.file_name();
            let file = file.to_string_lossy();
            // `{name}-{24 hex digits}.cwasm`
            file.strip_suffix(".cwasm").and_then(|f| f.rsplit_once('-')).is_some_and(|(n, key)| n == name && key.len() == 24 && key.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
    for (_, old) in found.into_iter().skip(KEEP_PER_NAME) {
        let _ = std::fs::remove_file(old);
    }
}
