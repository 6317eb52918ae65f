//! Businesses over several databases (issue 47).
//!
//! A deployment's data lives in one or more databases. The one a node is
//! started on (the local `switchboard.db`, or the `--primary-url` primary)
//! is named `main`, and is also the control database: it keeps what spans
//! businesses (the businesses and their placement, API keys, console users
//! and sessions) and the registry of the other databases (`databases`:
//! a name and a URL). Every database has the same schema; a business's own
//! rows live in exactly one of them, its placement, where a copy of its
//! `businesses` row sits too.
//!
//! A database's URL is a libSQL server's (sqld, or one of its namespaces),
//! or `local` (a file of its own under the data dir). Databases are all
//! local (main is this machine's file) or all remote (main is a primary),
//! never mixed: a local file would be seen by one node only.
//!
//! Each database is an ordinary `Db` with its own replica, writer and write
//! gate: one business's long write never queues another database's. A node
//! opens every registered database at start and any registered later when
//! a business placed there is first asked for.
//!
//! Never: HTTP, wasmtime, domain rules.

use crate::db::{self, params, query_as, query_one_as, Db, OpenOptions, Storage};
use anyhow::{anyhow, bail, Context, Result};
use parking_lot::{Mutex, RwLock};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The name of the database the node was started on.
pub const MAIN: &str = "main";

/// `url` of a database that is a file of its own under the data dir.
pub const LOCAL: &str = "local";

/// What the host does to a database once it is open (its vector table,
/// its runtime settings), before anything runs on it.
pub type Prepare = Box<dyn Fn(&str, &Db) -> Result<()> + Send + Sync>;

/// Every database of the deployment this process has opened, and where
/// each business lives.
pub struct Databases {
    main: Arc<Db>,
    dir: PathBuf,
    options: OpenOptions,
    storage: Storage,
    prepare: Prepare,
    opened: RwLock<BTreeMap<String, Arc<Db>>>,
    /// Business id → the name of its database. A business never moves
    /// without its placement changing in main, read again on a miss.
    placement: RwLock<HashMap<String, String>>,
    /// One database opens at a time (an open syncs a replica, migrates).
    opening: Mutex<()>,
}

/// A registered database, as `admin database list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub name: String,
    pub url: String,
}

impl Databases {
    /// Opens main (`storage` says where) and prepares it. The other
    /// databases open when first named (an admin command opens only those
    /// it works on); a server opens them all (`open_registered`).
    pub fn open(dir: &Path, options: OpenOptions, storage: Storage, prepare: Prepare) -> Result<Databases> {
        let main = Arc::new(Db::open_storage(dir, options, &storage)?);
        prepare(MAIN, &main)?;
        let dbs = Databases {
            main: main.clone(),
            dir: dir.to_path_buf(),
            options,
            storage,
            prepare,
            opened: RwLock::new(BTreeMap::from([(MAIN.to_string(), main)])),
            placement: RwLock::new(HashMap::new()),
            opening: Mutex::new(()),
        };
        Ok(dbs)
    }

    /// Opens every registered database not open yet; the names it opened.
    /// One that cannot be opened now is logged and tried again when a
    /// business placed there is asked for.
    pub fn open_registered(&self) -> Vec<String> {
        let Ok(registered) = self.registry() else { return Vec::new() };
        let mut opened = Vec::new();
        for r in registered {
            if self.opened.read().contains_key(&r.name) {
                continue;
            }
            match self.open_one(&r) {
                Ok(_) => opened.push(r.name),
                Err(e) => tracing::warn!(database = %r.name, error = %format_args!("{e:#}"), "database could not be opened yet"),
            }
        }
        opened
    }

    /// The control database (and the database of the businesses placed on
    /// `main`).
    pub fn main(&self) -> &Arc<Db> {
        &self.main
    }

    /// Every open database, main first.
    pub fn all(&self) -> Vec<(String, Arc<Db>)> {
        let opened = self.opened.read();
        let mut all: Vec<_> = opened.iter().map(|(n, d)| (n.clone(), d.clone())).collect();
        all.sort_by_key(|(n, _)| n != MAIN);
        all
    }

    /// The database named `name`, opened now if it is registered but not
    /// open yet.
    pub fn named(&self, name: &str) -> Result<Arc<Db>> {
        if let Some(db) = self.opened.read().get(name) {
            return Ok(db.clone());
        }
        let mut found = self.registry()?.into_iter().find(|r| r.name == name);
        if found.is_none() && self.main.pull_for_missing_key() {
            found = self.registry()?.into_iter().find(|r| r.name == name);
        }
        let r = found.ok_or_else(|| anyhow!("no database named {name}"))?;
        self.open_one(&r)
    }

    /// The name of the database `business` (lowercase) lives in; `None`
    /// when main has no such business.
    pub fn placement(&self, business: &str) -> Result<Option<String>> {
        if let Some(name) = self.placement.read().get(business) {
            return Ok(Some(name.clone()));
        }
        let read = || -> Result<Option<String>> {
            let c = self.main.read_conn()?;
            query_one_as::<String>(&c, "SELECT database FROM businesses WHERE id = ?1", params![business])
        };
        let mut found = read()?;
        if found.is_none() && self.main.pull_for_missing_key() {
            found = read()?;
        }
        if let Some(name) = &found {
            self.placement.write().insert(business.to_string(), name.clone());
        }
        Ok(found)
    }

    /// The database `business` lives in, with its name; `None` when there
    /// is no such business.
    pub fn home(&self, business: &str) -> Result<Option<(String, Arc<Db>)>> {
        match self.placement(business)? {
            Some(name) => {
                let db = self.named(&name)?;
                Ok(Some((name, db)))
            }
            None => Ok(None),
        }
    }

    /// [`Self::home`]'s database.
    pub fn for_business(&self, business: &str) -> Result<Option<Arc<Db>>> {
        Ok(self.home(business)?.map(|(_, db)| db))
    }

    /// [`Self::for_business`], refusing an unknown business with the
    /// message every admin command gives.
    pub fn of_business(&self, business: &str) -> Result<Arc<Db>> {
        self.for_business(&business.to_ascii_lowercase())?.ok_or_else(|| anyhow!("no business {business} in this data dir"))
    }

    /// Drops what this process knows of `business`'s placement: the next
    /// request reads it from main again (a move placed it elsewhere).
    pub fn forget(&self, business: &str) {
        self.placement.write().remove(business);
    }

    /// The registered databases (main not among them), by name.
    pub fn registry(&self) -> Result<Vec<Registered>> {
        let c = self.main.read_conn()?;
        let rows: Vec<(String, String)> = query_as(&c, "SELECT name, url FROM databases ORDER BY name", params![])?;
        Ok(rows.into_iter().map(|(name, url)| Registered { name, url }).collect())
    }

    fn open_one(&self, r: &Registered) -> Result<Arc<Db>> {
        let _one = self.opening.lock();
        if let Some(db) = self.opened.read().get(&r.name) {
            return Ok(db.clone());
        }
        let dir = self.dir.join("databases").join(&r.name);
        let storage = match (&self.storage, r.url.as_str()) {
            (Storage::Local, LOCAL) => Storage::Local,
            (Storage::Replica(main), url) if url != LOCAL => {
                let (url, namespace) = server_and_namespace(url);
                Storage::Replica(db::Primary { url, namespace, ..main.clone() })
            }
            _ => bail!("database {} ({}) cannot be opened by a node whose main database is {}", r.name, r.url, self.main_kind()),
        };
        let open = || -> Result<Arc<Db>> {
            let db = Arc::new(Db::open_storage(&dir, self.options, &storage).with_context(|| format!("opening database {}", r.name))?);
            (self.prepare)(&r.name, &db).with_context(|| format!("preparing database {}", r.name))?;
            Ok(db)
        };
        // A request that names a business of a database registered a
        // moment ago opens it on its tokio worker (admission routes
        // there): the open syncs a replica over the network and must not
        // hold the worker's other tasks (it hung the request).
        let db = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(open)?,
            _ => open()?,
        };
        self.opened.write().insert(r.name.clone(), db.clone());
        tracing::info!(database = %r.name, "opened database");
        Ok(db)
    }

    fn main_kind(&self) -> &'static str {
        match self.storage {
            Storage::Local => "this machine's file",
            Storage::Replica(_) => "a libSQL server",
        }
    }

    /// `admin database add`: registers a database and opens it (which
    /// applies the migrations there, so it is ready before any business
    /// is placed on it).
    pub fn add(&self, name: &str, url: &str) -> Result<serde_json::Value> {
        let name = name.trim();
        if !valid_name(name) {
            bail!("--name must be 1 to 32 characters of a-z, 0-9, - and _, starting with a letter");
        }
        if name == MAIN {
            bail!("main is the database this node is started on (the data dir's file or --primary-url); choose another name");
        }
        let url = normalise_url(url)?;
        match (&self.storage, url.as_str()) {
            (Storage::Local, u) if u != LOCAL => bail!("this data dir's main database is a local file: add local databases (--url local), or run with --primary-url to add libSQL servers"),
            (Storage::Replica(_), LOCAL) => bail!("main is a libSQL server: a local file would be seen by this node only; give a libSQL server's URL"),
            (Storage::Replica(main), u) if server_and_namespace(u) == (main.url.clone(), main.namespace.clone()) => bail!("{u} is main's own URL"),
            _ => {}
        }
        if let Some(same) = self.registry()?.into_iter().find(|r| r.name == name || (r.url == url && url != LOCAL)) {
            bail!("database {} is registered already with URL {}", same.name, same.url);
        }
        let r = Registered { name: name.to_string(), url: url.clone() };
        // Open (and migrate) first: a database that cannot be reached is
        // never registered.
        self.open_one(&r)?;
        let c = self.main.conn()?;
        db::in_transaction(&c, || db::execute(&c, "INSERT INTO databases (name, url, created_at) VALUES (?1, ?2, ?3)", params![&r.name, &r.url, switchboard_ops::clock::now_rfc3339()]))?;
        Ok(json!({"name": r.name, "url": r.url}))
    }

    /// `admin database list`: main and every registered database, each
    /// with its number of businesses.
    pub fn list(&self) -> Result<serde_json::Value> {
        let counts = self.counts()?;
        let main_url = match &self.storage {
            Storage::Local => LOCAL.to_string(),
            Storage::Replica(p) => p.url.clone(),
        };
        let mut out = vec![json!({"name": MAIN, "url": main_url, "businesses": counts.get(MAIN).copied().unwrap_or(0)})];
        for r in self.registry()? {
            out.push(json!({"name": r.name, "url": r.url, "businesses": counts.get(&r.name).copied().unwrap_or(0)}));
        }
        Ok(json!({"databases": out}))
    }

    fn counts(&self) -> Result<HashMap<String, i64>> {
        let c = self.main.conn()?;
        let rows: Vec<(String, i64)> = query_as(&c, "SELECT database, COUNT(*) FROM businesses GROUP BY database", params![])?;
        Ok(rows.into_iter().collect())
    }

    /// Where the new business `business` goes: `requested` if given (it
    /// must be registered, or main). Else, beside a local main, a database
    /// of its own ([`own_database_name`]), registered and migrated here:
    /// its writer and job runner are its alone, so another business's bulk
    /// write never queues its writes (issue 47). Else (main is a libSQL
    /// server) the database with the fewest businesses (main first among
    /// equals).
    pub fn choose_for_new_business(&self, business: &str, requested: Option<&str>) -> Result<String> {
        let registry = self.registry()?;
        if let Some(name) = requested {
            if name != MAIN && !registry.iter().any(|r| r.name == name) {
                bail!("--database {name} is not registered (see `admin database list`)");
            }
            return Ok(name.to_string());
        }
        if matches!(self.storage, Storage::Local) {
            let name = own_database_name(business);
            self.add(&name, LOCAL)?;
            return Ok(name);
        }
        let counts = self.counts()?;
        let count = |n: &str| counts.get(n).copied().unwrap_or(0);
        let mut best = MAIN.to_string();
        for r in registry {
            if count(&r.name) < count(&best) {
                best = r.name;
            }
        }
        Ok(best)
    }

    /// Records that `business` lives in `database` (main's control row).
    /// The business's own rows are written there first by the caller, so
    /// a business is never placed where its rows are not.
    pub fn place(&self, c: &db::Connection, business: &str, name: &str, created_at: &str, database: &str) -> Result<()> {
        db::execute(c, "INSERT INTO businesses (id, name, created_at, database) VALUES (?1, ?2, ?3, ?4)", params![business, name, created_at, database])?;
        Ok(())
    }
}

/// The name of the database of its own a business gets beside a local
/// main: `b-` and the first 12 hex digits of its id (dashes left out).
pub fn own_database_name(business: &str) -> String {
    let hex: String = business.chars().filter(char::is_ascii_hexdigit).take(12).collect();
    format!("b-{}", hex.to_ascii_lowercase())
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z')) && name.len() <= 32 && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-' | '_'))
}

/// `local`, or an http(s) root URL without its trailing `/` (a token goes
/// in SWITCHBOARD_PRIMARY_AUTH_TOKEN, never in the URL), optionally naming
/// a namespace of that sqld: `?namespace=NAME`.
fn normalise_url(url: &str) -> Result<String> {
    let url = url.trim();
    if url == LOCAL {
        return Ok(LOCAL.to_string());
    }
    let bad = || {
        anyhow!(
            "--url must be `local` (a file of its own in the data dir) or a libSQL server's http:// or https:// URL without a path, e.g. http://10.0.0.5:8080, \
             optionally with ?namespace=NAME (1 to 64 of a-z, A-Z, 0-9, - and _) for a namespace of a sqld started with --enable-namespaces"
        )
    };
    let (url, namespace) = match url.split_once('?') {
        Some((url, query)) => {
            let name = query.strip_prefix("namespace=").ok_or_else(bad)?;
            if name.is_empty() || name.len() > 64 || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                return Err(bad());
            }
            (url, Some(name))
        }
        None => (url, None),
    };
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let rest = rest.trim_end_matches('/');
    if !matches!(scheme, "http" | "https") || rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(bad());
    }
    Ok(match namespace {
        Some(ns) => format!("{scheme}://{rest}?namespace={ns}"),
        None => format!("{scheme}://{rest}"),
    })
}

/// A registered server URL as the server's root URL and the namespace it
/// names (`default` when it names none).
fn server_and_namespace(url: &str) -> (String, String) {
    match url.split_once("?namespace=") {
        Some((server, ns)) => (server.to_string(), ns.to_string()),
        None => (url.to_string(), "default".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_urls() {
        assert!(valid_name("eu-1") && valid_name("b") && !valid_name("1b") && !valid_name("") && !valid_name("Big") && !valid_name(&"a".repeat(33)));
        assert_eq!(normalise_url("local").unwrap(), "local");
        assert_eq!(normalise_url("http://127.0.0.1:8081/").unwrap(), "http://127.0.0.1:8081");
        assert_eq!(normalise_url("http://127.0.0.1:8081/?namespace=eu-1").unwrap(), "http://127.0.0.1:8081?namespace=eu-1");
        assert_eq!(server_and_namespace("http://h:1?namespace=eu-1"), ("http://h:1".to_string(), "eu-1".to_string()));
        assert_eq!(server_and_namespace("http://h:1"), ("http://h:1".to_string(), "default".to_string()));
        for bad in ["ftp://x", "http://", "http://a/b", "http://u:p@a", "file:x", "http://a?x=1", "http://a?namespace=", "http://a?namespace=a b", "http://a?namespace=x&y=1"] {
            assert!(normalise_url(bad).is_err(), "{bad}");
        }
    }

    fn local(dir: &Path) -> Databases {
        Databases::open(dir, OpenOptions::default(), Storage::Local, Box::new(|_, _| Ok(()))).unwrap()
    }

    #[test]
    fn local_databases_are_registered_placed_and_routed() {
        let dir = std::env::temp_dir().join(format!("sb-dbs-{}", uuid::Uuid::new_v4()));
        let dbs = local(&dir);
        assert!(dbs.add("second", "http://127.0.0.1:1").is_err(), "a server beside a local main is refused");
        dbs.add("second", "local").unwrap();
        assert!(dbs.add("second", "local").is_err(), "a name is registered once");
        assert!(dbs.add("main", "local").is_err());
        assert!(dir.join("databases/second/switchboard.db").exists());
        // A database named is where the business goes; none named, beside
        // a local main, a database of its own, registered then.
        let c = dbs.main().conn().unwrap();
        assert_eq!(dbs.choose_for_new_business("b1", Some(MAIN)).unwrap(), MAIN);
        dbs.place(&c, "b1", "One", "t", MAIN).unwrap();
        assert_eq!(dbs.choose_for_new_business("b2", Some("second")).unwrap(), "second");
        dbs.place(&c, "b2", "Two", "t", "second").unwrap();
        assert!(dbs.choose_for_new_business("b3", Some("third")).is_err());
        let own = dbs.choose_for_new_business("0F1E2D3C-4b5a-4000-8000-000000000000", None).unwrap();
        assert_eq!(own, "b-0f1e2d3c4b5a");
        assert!(valid_name(&own) && dir.join("databases/b-0f1e2d3c4b5a/switchboard.db").exists());
        assert!(Arc::ptr_eq(&dbs.for_business("b2").unwrap().unwrap(), &dbs.named("second").unwrap()));
        assert!(Arc::ptr_eq(&dbs.for_business("b1").unwrap().unwrap(), dbs.main()));
        assert!(dbs.for_business("nobody").unwrap().is_none());
        let list = dbs.list().unwrap();
        assert_eq!(list["databases"][1], json!({"name": "b-0f1e2d3c4b5a", "url": "local", "businesses": 0}));
        assert_eq!(list["databases"][2], json!({"name": "second", "url": "local", "businesses": 1}));
        drop(c);
        drop(dbs);
        // Opened again, the registry brings the second database back.
        let again = local(&dir);
        again.open_registered();
        assert_eq!(again.all().iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), vec![MAIN, "b-0f1e2d3c4b5a", "second"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
