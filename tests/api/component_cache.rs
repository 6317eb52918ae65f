//! The component cache (`serve --component-cache`): the native code of the
//! components is compiled once per binary, so a server on a fresh data dir
//! loads what an earlier start compiled, and a damaged artifact is compiled
//! again instead of stopping the server. Observed through the start's log
//! line, never timed.

use crate::harness::*;
use std::path::{Path, PathBuf};

/// The start's `components loaded` event: how many came from the cache
/// (`fromCache`) and how many were compiled.
fn loaded_and_compiled(log: &Path) -> (usize, usize) {
    let event = log_event(log, "components loaded", |_| true).unwrap_or_else(|| panic!("no components event: {}", std::fs::read_to_string(log).unwrap_or_default()));
    let number = |field: &str| event[field].as_u64().unwrap_or_else(|| panic!("{field} in {event}")) as usize;
    (number("fromCache"), number("compiled"))
}

fn artifacts(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "cwasm")).collect();
    found.sort();
    found
}

fn artifact_of(dir: &Path, name: &str) -> PathBuf {
    artifacts(dir).into_iter().find(|p| p.file_name().unwrap().to_string_lossy().strip_suffix(".cwasm").and_then(|f| f.rsplit_once('-')).is_some_and(|(n, _)| n == name)).unwrap()
}

/// Starts a server on a fresh data dir with `cache`; returns it, its data
/// dir and what its start loaded and compiled.
fn start(cache: &Path) -> (Server, DataDir, (usize, usize)) {
    let data = DataDir::new();
    let log = data.0.join("serve.log");
    let s = Server::start_logged(&data.0, &["--component-cache", cache.to_str().unwrap()], &log);
    let counts = loaded_and_compiled(&log);
    (s, data, counts)
}

/// A contact list answered by the contacts component: the server runs it.
fn contacts_answer(s: &Server) {
    let t = tenant(&s.data_dir, "all");
    s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&limit=1", t.business)).assert_ok(200);
}

#[test]
fn a_fresh_data_dir_loads_the_components_an_earlier_start_compiled_and_a_damaged_one_is_compiled_again() {
    // A cache of its own: the other tests share the default one.
    let folder = DataDir::new();
    let cache = folder.0.join("components");

    // A cold cache: every component is compiled and kept.
    let (mut s, _first, (loaded, compiled)) = start(&cache);
    assert_eq!(loaded, 0, "a cold cache has nothing to load");
    assert!(compiled > 1, "{compiled} compiled");
    contacts_answer(&s);
    s.terminate();
    assert_eq!(artifacts(&cache).len(), compiled, "one artifact per component: {:?}", artifacts(&cache));
    // The folder holds native code the server runs: only its user may write there.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&cache).unwrap().permissions().mode() & 0o077, 0);
    }

    // Another fresh data dir on the same cache compiles nothing.
    let (mut s, _second, (loaded, again)) = start(&cache);
    assert_eq!((loaded, again), (compiled, 0), "every component loaded from the cache");
    contacts_answer(&s);
    s.terminate();

    // One artifact overwritten with garbage, another cut short: both are
    // compiled again (the rest still loaded), and the server answers.
    let contacts = artifact_of(&cache, "contacts");
    let size = std::fs::metadata(&contacts).unwrap().len();
    std::fs::write(&contacts, vec![0x5a; size as usize]).unwrap();
    let webhooks = artifact_of(&cache, "webhooks");
    let bytes = std::fs::read(&webhooks).unwrap();
    std::fs::write(&webhooks, &bytes[..bytes.len() / 2]).unwrap();
    let (mut s, _third, (loaded, recompiled)) = start(&cache);
    assert_eq!((loaded, recompiled), (compiled - 2, 2));
    contacts_answer(&s);
    s.terminate();
    // Written whole again: the next start loads everything.
    assert_eq!(std::fs::read(&webhooks).unwrap().len(), bytes.len());
    let (mut s, _fourth, counts) = start(&cache);
    assert_eq!(counts, (compiled, 0));
    s.terminate();
}

/// A cache folder that cannot be made falls back to the data dir's
/// `cache/` (with a warning), which is also where `off` keeps them: a second
/// start on that data dir loads them.
#[test]
fn an_unusable_cache_falls_back_to_the_data_dir_where_off_keeps_them() {
    let data = DataDir::new();
    let file = data.0.join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let log = data.0.join("first.log");
    let mut s = Server::start_logged(&data.0, &["--component-cache", file.join("components").to_str().unwrap()], &log);
    let (_, compiled) = loaded_and_compiled(&log);
    assert!(logged(&log, "component cache unusable: using the data dir's", &[("cacheDir", &file.join("components").display().to_string())]));
    contacts_answer(&s);
    s.terminate();
    assert_eq!(artifacts(&data.0.join("cache")).len(), compiled);

    let log = data.0.join("second.log");
    let mut s = Server::start_logged(&data.0, &["--component-cache", "off"], &log);
    assert_eq!(loaded_and_compiled(&log), (compiled, 0));
    s.terminate();
}
