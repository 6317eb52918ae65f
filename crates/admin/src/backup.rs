//! `admin backup`, `admin restore` and `admin check`: a consistent copy of
//! a data dir's databases taken while a server runs on it, laid out again
//! as a data dir, and an integrity check that knows libSQL's vector index.
//!
//! A data dir's data is its databases: `main` (`switchboard.db`) and each
//! registered one (`databases/<name>/switchboard.db`); the rest of the dir
//! (the component cache, the served URL) is made again by `serve`. Beside
//! a libSQL server the files copied are this command's replicas, pulled
//! first, so the copy is the primary's as of the pull.
//!
//! Each database is copied with SQLite's online backup in one step: one
//! read transaction, so the copy is that database at one commit, and a
//! server's writers are not held (WAL). Main is copied first and says
//! which databases to copy (its registry) and where each business lives;
//! a business's rows are written at its database before main places it,
//! so every business of main's copy has its rows in the later copies. A
//! move (`admin business move`) that advances meanwhile could leave a
//! business's rows in neither copy: the placements and moves of main are
//! read again after the copies, and the whole copy is taken again when
//! they changed. A move under way in both readings is in the backup as it
//! was, and `admin business move` finishes it after a restore.
//!
//! The backup is one tar file: `backup.json` (what it holds, with each
//! file's SHA-256) and the database files at their data dir paths.
//!
//! Never: HTTP, wasmtime, the runner. The copies are plain SQLite
//! connections (libsql's own build of SQLite, so the vector index's
//! functions are known) on the files, beside the server's.

use anyhow::{anyhow, bail, Context, Result};
use rusqlite::{Connection as Lite, OpenFlags};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use switchboard_storage::databases::{Databases, LOCAL, MAIN};

/// The backup's description, first in the tar file.
pub const MANIFEST: &str = "backup.json";

/// The layout of the backup file this build writes and reads.
const FORMAT: u64 = 1;

/// Copies taken again when businesses moved meanwhile, at most.
const ATTEMPTS: usize = 3;

/// How long one database's copy waits for a lock it needs.
const LOCK_WAIT: Duration = Duration::from_secs(60);

/// Problems of one database that `check` lists, at most.
const MAX_PROBLEMS: usize = 100;

/// The database files of a data dir: main's and each registered one's,
/// or this process's replicas of them (`replica`: the replica folder's
/// name, `replica-<role>`).
pub struct Files<'a> {
    pub data_dir: &'a Path,
    pub replica: Option<String>,
}

impl Files<'_> {
    /// The data dir path of database `name`'s file (as a backup and a
    /// restored data dir hold it).
    pub fn relative(name: &str) -> PathBuf {
        if name == MAIN {
            PathBuf::from("switchboard.db")
        } else {
            Path::new("databases").join(name).join("switchboard.db")
        }
    }

    /// The file this process reads database `name` from.
    pub fn of(&self, name: &str) -> PathBuf {
        let dir = if name == MAIN { self.data_dir.to_path_buf() } else { self.data_dir.join("databases").join(name) };
        match &self.replica {
            Some(folder) => dir.join(folder).join("switchboard.db"),
            None => dir.join("switchboard.db"),
        }
    }
}

/// Where businesses live and what moves are under way, as main says.
#[derive(PartialEq, Eq, Debug)]
struct Layout {
    registry: Vec<(String, String)>,
    placed: BTreeSet<(String, String)>,
    moves: Vec<Vec<String>>,
}

fn layout(c: &Lite) -> Result<Layout> {
    let pairs = |sql: &str| -> Result<Vec<(String, String)>> {
        let mut s = c.prepare(sql)?;
        let rows = s.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    let mut s = c.prepare("SELECT * FROM business_moves ORDER BY 1")?;
    let width = s.column_count();
    let moves = s.query_map([], |r| (0..width).map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}"))).collect::<rusqlite::Result<Vec<_>>>())?.collect::<rusqlite::Result<_>>()?;
    Ok(Layout { registry: pairs("SELECT name, url FROM databases ORDER BY name")?, placed: pairs("SELECT id, database FROM businesses")?.into_iter().collect(), moves })
}

fn open(path: &Path) -> Result<Lite> {
    // Read-write without create: a missing file is an error, and a WAL
    // database needs its shared-memory file, which a reader may make.
    let c = Lite::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX).with_context(|| format!("opening {}", path.display()))?;
    c.busy_timeout(LOCK_WAIT)?;
    Ok(c)
}

/// Copies the database file `from` to the new file `to`, in one read
/// transaction of `from`.
fn copy(from: &Path, to: &Path) -> Result<u64> {
    use rusqlite::backup::{Backup, StepResult};
    let src = open(from)?;
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut dst = Lite::open(to).with_context(|| format!("creating {}", to.display()))?;
    {
        let backup = Backup::new(&src, &mut dst)?;
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            // Every page in one step: one snapshot of the source.
            match backup.step(-1).with_context(|| format!("copying {}", from.display()))? {
                StepResult::Done => break,
                StepResult::More => {}
                StepResult::Busy | StepResult::Locked if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                StepResult::Busy | StepResult::Locked => bail!("copying {}: still locked after {} s", from.display(), LOCK_WAIT.as_secs()),
                _ => bail!("copying {}: an unknown step result", from.display()),
            }
        }
    }
    // The copy is one self-contained file (no WAL beside it).
    dst.pragma_update(None, "journal_mode", "DELETE")?;
    drop(dst);
    Ok(std::fs::metadata(to)?.len())
}

/// What is wrong with the database file `path`: SQLite's integrity check
/// (with libsql's SQL functions, so the schema of a vector index reads),
/// and for each libSQL vector index, one entry per indexed row.
pub fn problems(path: &Path) -> Result<Vec<String>> {
    let c = open(path)?;
    let mut out = Vec::new();
    {
        let mut s = c.prepare(&format!("PRAGMA integrity_check({MAX_PROBLEMS})"))?;
        let rows = s.query_map([], |r| r.get::<_, String>(0))?;
        for row in rows {
            let row = row?;
            if row != "ok" {
                out.push(row);
            }
        }
    }
    let indexes: Vec<(String, String, String)> = {
        let mut s = c.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '%libsql_vector_idx%'")?;
        let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (index, table, sql) in indexes {
        let Some(column) = vector_column(&sql) else {
            out.push(format!("vector index {index}: its column cannot be read from {sql}"));
            continue;
        };
        let count = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0));
        let rows = count(&format!("SELECT count(*) FROM \"{table}\" WHERE \"{column}\" IS NOT NULL"))?;
        match count(&format!("SELECT count(*) FROM \"{index}_shadow\"")) {
            Ok(entries) if entries == rows => {}
            Ok(entries) => out.push(format!("vector index {index}: {entries} entries for {rows} rows of {table} with a {column}")),
            Err(e) => out.push(format!("vector index {index}: its entries cannot be read: {e}")),
        }
    }
    Ok(out)
}

/// `embedding` of `CREATE INDEX … ON t (libsql_vector_idx(embedding, …))`.
fn vector_column(sql: &str) -> Option<String> {
    // sqld keeps a statement as it normalised it: `libsql_vector_idx (…`.
    let after = sql[sql.find("libsql_vector_idx")? + "libsql_vector_idx".len()..].trim_start().strip_prefix('(')?;
    let column = after[..after.find([',', ')'])?].trim().trim_matches(['"', '`', '[', ']']);
    (!column.is_empty() && column.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then(|| column.to_string())
}

fn sha256(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hash = Sha256::new();
    std::io::copy(&mut file, &mut hash)?;
    Ok(hex::encode(hash.finalize()))
}

/// `admin check`: every database of the data dir; `ok` is false when any
/// has a problem. Local files are read as they are, without opening them
/// for serving (which would migrate them first, and stop at a damaged
/// one); beside a libSQL server (`dbs`), this command's replicas, pulled
/// first.
pub fn check(dbs: Option<&Databases>, files: &Files) -> Result<Value> {
    let mut names = vec![MAIN.to_string()];
    match dbs {
        Some(dbs) => names.extend(dbs.registry()?.into_iter().map(|r| r.name)),
        None => {
            // Main's registry, if main can be read at all.
            let registry = open(&files.of(MAIN)).and_then(|c| {
                let mut s = c.prepare("SELECT name FROM databases ORDER BY name")?;
                let rows = s.query_map([], |r| r.get::<_, String>(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            });
            names.extend(registry.unwrap_or_default());
        }
    }
    let mut all_ok = true;
    let mut out = Vec::new();
    for name in names {
        let pulled = match dbs {
            Some(dbs) => dbs.named(&name).and_then(|db| db.pull()),
            None => Ok(()),
        };
        let found = match pulled.and_then(|_| problems(&files.of(&name))) {
            Ok(found) => found,
            Err(e) => vec![format!("it cannot be read: {e:#}")],
        };
        all_ok &= found.is_empty();
        out.push(json!({"name": name, "ok": found.is_empty(), "problems": found}));
    }
    Ok(json!({"ok": all_ok, "databases": out}))
}

/// `admin backup --to FILE`: see the module's comment. `say` hears what
/// happens.
pub fn backup(dbs: &Databases, files: &Files, to: &Path, say: &dyn Fn(&str)) -> Result<Value> {
    if to.is_dir() {
        bail!("--to {} is a directory; name the backup file to write", to.display());
    }
    let name = to.file_name().ok_or_else(|| anyhow!("--to {} names no file", to.display()))?.to_string_lossy().to_string();
    let parent = match to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        bail!("--to {}: the directory {} does not exist", to.display(), parent.display());
    }
    let work = parent.join(format!(".{name}.partial-{}", std::process::id()));
    let packed = parent.join(format!(".{name}.partial-{}.tar", std::process::id()));
    let result = take(dbs, files, &work, say).and_then(|(manifest, copied)| {
        pack(&work, &packed, &manifest, &copied)?;
        std::fs::rename(&packed, to).with_context(|| format!("renaming {} to {}", packed.display(), to.display()))?;
        Ok(manifest)
    });
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_file(&packed);
    let manifest = result?;
    Ok(json!({
        "backup": to.display().to_string(),
        "createdAt": manifest["createdAt"],
        "businesses": manifest["businesses"],
        "attempts": manifest["attempts"],
        "databases": manifest["databases"]
    }))
}

/// `SWITCHBOARD_BACKUP_HOLD=FILE`, for the tests only: the first attempt
/// writes FILE once main is copied and waits (at most a minute) until it
/// is removed before it copies the others, so a test can move a business
/// meanwhile (the backup then copies again).
fn hold_for_tests() {
    let Some(file) = std::env::var_os("SWITCHBOARD_BACKUP_HOLD") else { return };
    if std::fs::write(&file, "main copied").is_err() {
        return;
    }
    let until = Instant::now() + Duration::from_secs(60);
    while Path::new(&file).exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Copies every database into `work` until main's layout held still
/// around the copies; the manifest and the relative paths copied.
fn take(dbs: &Databases, files: &Files, work: &Path, say: &dyn Fn(&str)) -> Result<(Value, Vec<PathBuf>)> {
    let main = dbs.main();
    let live = || -> Result<Layout> {
        main.pull()?;
        layout(&open(&files.of(MAIN))?)
    };
    for attempt in 1..=ATTEMPTS {
        let _ = std::fs::remove_dir_all(work);
        std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
        let created_at = switchboard_ops::clock::now_rfc3339();
        main.pull()?;
        let mut copied = vec![Files::relative(MAIN)];
        let mut described = vec![];
        let bytes = copy(&files.of(MAIN), &work.join(&copied[0]))?;
        described.push(json!({"name": MAIN, "url": LOCAL, "file": copied[0], "bytes": bytes}));
        let at_copy = layout(&open(&work.join(&copied[0]))?)?;
        if attempt == 1 {
            hold_for_tests();
        }
        for (name, url) in &at_copy.registry {
            dbs.named(name)?.pull()?;
            let relative = Files::relative(name);
            let bytes = copy(&files.of(name), &work.join(&relative))?;
            described.push(json!({"name": name, "url": url, "file": relative, "bytes": bytes}));
            copied.push(relative);
        }
        let after = live()?;
        let held = after.moves == at_copy.moves && at_copy.placed.is_subset(&after.placed) && at_copy.registry.iter().all(|r| after.registry.contains(r));
        if !held {
            say(&format!("a business moved while the databases were copied; copying again ({attempt} of {ATTEMPTS})"));
            continue;
        }
        for (relative, d) in copied.iter().zip(described.iter_mut()) {
            let found = problems(&work.join(relative))?;
            if !found.is_empty() {
                bail!("the copy of database {} fails its integrity check: {}", d["name"], found.join("; "));
            }
            d["sha256"] = json!(sha256(&work.join(relative))?);
        }
        if files.replica.is_some() {
            // Main's own URL is the primary's; the manifest says so, the
            // token never.
            described[0]["url"] = json!("primary");
        }
        let manifest = json!({
            "format": FORMAT,
            "switchboard": env!("CARGO_PKG_VERSION"),
            "createdAt": created_at,
            "source": if files.replica.is_some() { "libsql-server" } else { "local" },
            "businesses": at_copy.placed.len(),
            "movesUnderWay": at_copy.moves.len(),
            "attempts": attempt,
            "databases": described,
        });
        return Ok((manifest, copied));
    }
    bail!("businesses kept moving while the databases were copied ({ATTEMPTS} attempts); run the backup again when no move is under way")
}

fn pack(work: &Path, packed: &Path, manifest: &Value, copied: &[PathBuf]) -> Result<()> {
    let file = std::fs::File::create(packed).with_context(|| format!("creating {}", packed.display()))?;
    let mut tar = tar::Builder::new(file);
    let text = serde_json::to_vec_pretty(manifest)?;
    let mut header = tar::Header::new_gnu();
    header.set_size(text.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0));
    header.set_cksum();
    tar.append_data(&mut header, MANIFEST, text.as_slice())?;
    for relative in copied {
        tar.append_path_with_name(work.join(relative), relative)?;
    }
    let file = tar.into_inner()?;
    file.sync_all()?;
    Ok(())
}

/// `admin restore --from FILE --data-dir DIR`: lays the backup out as the
/// data dir DIR, which must not exist or be empty. A backup taken beside
/// a libSQL server becomes a local data dir: its databases' URLs become
/// `local` (files of their own in DIR).
pub fn restore(from: &Path, data_dir: &Path) -> Result<Value> {
    if data_dir.exists() {
        let empty = std::fs::read_dir(data_dir).with_context(|| format!("--data-dir {}", data_dir.display()))?.next().is_none();
        if !empty {
            bail!("--data-dir {} is not empty; restore into a new data dir (then serve it, or swap it for the old one while no server runs)", data_dir.display());
        }
    }
    let parent = match data_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let name = data_dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "data".into());
    let work = parent.join(format!(".{name}.restoring-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let result = unpack(from, &work).and_then(|manifest| {
        if data_dir.exists() {
            std::fs::remove_dir(data_dir)?;
        }
        std::fs::rename(&work, data_dir).with_context(|| format!("renaming {} to {}", work.display(), data_dir.display()))?;
        Ok(manifest)
    });
    let _ = std::fs::remove_dir_all(&work);
    let manifest = result?;
    let names: Vec<Value> = manifest["databases"].as_array().map(|d| d.iter().map(|d| d["name"].clone()).collect()).unwrap_or_default();
    Ok(json!({"dataDir": data_dir.display().to_string(), "createdAt": manifest["createdAt"], "businesses": manifest["businesses"], "databases": names}))
}

fn unpack(from: &Path, work: &Path) -> Result<Value> {
    let bad = |why: &str| anyhow!("{} is not a switchboard backup: {why}", from.display());
    let file = std::fs::File::open(from).with_context(|| format!("--from {}", from.display()))?;
    let mut archive = tar::Archive::new(file);
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let mut manifest = None;
    let mut found = BTreeSet::new();
    for entry in archive.entries().map_err(|e| bad(&e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(&e.to_string()))?;
        let path = entry.path().map_err(|e| bad(&e.to_string()))?.to_string_lossy().to_string();
        if path == MANIFEST {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut entry, &mut text)?;
            manifest = Some(serde_json::from_str::<Value>(&text).map_err(|e| bad(&format!("{MANIFEST}: {e}")))?);
            continue;
        }
        // Only database files at their data dir paths, as plain files:
        // nothing else, nothing outside DIR, no link to elsewhere.
        if !entry.header().entry_type().is_file() {
            return Err(bad(&format!("{path} is not a plain file")));
        }
        let database = match path.split('/').collect::<Vec<_>>()[..] {
            ["switchboard.db"] => MAIN.to_string(),
            ["databases", db, "switchboard.db"] if !db.is_empty() && db.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') => db.to_string(),
            _ => return Err(bad(&format!("it holds {path}"))),
        };
        let target = work.join(Files::relative(&database));
        std::fs::create_dir_all(target.parent().expect("a file in a folder"))?;
        entry.unpack(&target).with_context(|| format!("writing {}", target.display()))?;
        found.insert(database);
    }
    let manifest = manifest.ok_or_else(|| bad(&format!("no {MANIFEST}")))?;
    if manifest["format"].as_u64() != Some(FORMAT) {
        bail!("{} is a backup of format {} and this build reads format {FORMAT}", from.display(), manifest["format"]);
    }
    let listed = manifest["databases"].as_array().ok_or_else(|| bad("no databases listed"))?;
    for d in listed {
        let name = d["name"].as_str().ok_or_else(|| bad("a database without a name"))?;
        if !found.remove(name) {
            return Err(bad(&format!("database {name} is listed but not there")));
        }
        let path = work.join(Files::relative(name));
        if d["sha256"].as_str() != Some(sha256(&path)?.as_str()) {
            bail!("{}: database {name}'s file is not the one backed up (its SHA-256 differs)", from.display());
        }
        let found = problems(&path)?;
        if !found.is_empty() {
            bail!("{}: database {name} fails its integrity check: {}", from.display(), found.join("; "));
        }
    }
    if let Some(extra) = found.into_iter().next() {
        return Err(bad(&format!("database {extra} is there but not listed")));
    }
    // A backup of a libSQL server deployment: its databases are files of
    // this data dir now.
    let main = open(&work.join(Files::relative(MAIN)))?;
    main.execute("UPDATE databases SET url = ?1 WHERE url <> ?1", [LOCAL])?;
    drop(main);
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_index_names_its_column() {
        let sql = "CREATE INDEX knowledge_vectors_ann ON knowledge_vectors (libsql_vector_idx(embedding, 'metric=cosine'))";
        assert_eq!(vector_column(sql).as_deref(), Some("embedding"));
        assert_eq!(vector_column("CREATE INDEX i ON t (libsql_vector_idx(\"e\"))").as_deref(), Some("e"));
        assert_eq!(vector_column("CREATE INDEX i ON t (libsql_vector_idx (embedding, 'metric=cosine'))").as_deref(), Some("embedding"));
        assert_eq!(vector_column("CREATE INDEX i ON t (x)"), None);
    }

    #[test]
    fn a_restore_takes_plain_database_files_only() {
        let dir = std::env::temp_dir().join(format!("sb-restore-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("b.tar");
        let mut tar = tar::Builder::new(std::fs::File::create(&file).unwrap());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        tar.append_link(&mut header, "switchboard.db", "/etc/passwd").unwrap();
        tar.into_inner().unwrap();
        let err = restore(&file, &dir.join("data")).unwrap_err().to_string();
        assert!(err.contains("switchboard.db is not a plain file"), "{err}");
        assert!(!dir.join("data").exists(), "nothing is left of a refused restore");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn relative_paths_are_the_data_dirs() {
        assert_eq!(Files::relative(MAIN), PathBuf::from("switchboard.db"));
        assert_eq!(Files::relative("b-1"), PathBuf::from("databases/b-1/switchboard.db"));
        let files = Files { data_dir: Path::new("/d"), replica: Some("replica-admin".into()) };
        assert_eq!(files.of("x"), PathBuf::from("/d/databases/x/replica-admin/switchboard.db"));
    }
}
