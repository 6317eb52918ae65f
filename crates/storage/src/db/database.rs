//! The database: opening it (local or replica), its pools, migrations
//! and pulls; its checkpoint is `database/checkpoint.rs`.

use super::*;

mod checkpoint;

/// The WAL size at which the checkpoint starts it over (a test fills past it).
#[cfg(test)]
pub(crate) use checkpoint::WAL_RESTART_FRAMES;

pub struct Db {
    /// Opens this database's connections (the pool's and the writer's).
    pub(crate) opener: Opener,
    /// Replica mode: writes go to the primary, and the file, its WAL and
    /// its statistics are the primary's business, not ours.
    pub(crate) replica: Option<ReplicaFiles>,
    pub(crate) idle: Mutex<Vec<Connection>>,
    /// One writer at a time inside this process: write transactions queue
    /// here (requests' before background work, each in arrival order, so
    /// no writer starves under load; `Gate`) instead of spinning in
    /// SQLite's busy handler. Other processes (the admin CLI, a second
    /// node) are covered by the busy timeout.
    pub(crate) write_gate: Gate,
    /// API keys by hash (`key_cache.rs`): authentication without a query.
    pub(crate) keys: crate::key_cache::KeyCache,
    /// What this node wrote at the primary and its replica has yet to pull.
    pub(crate) fresh: Arc<crate::freshness::Freshness>,
}

/// What a replica keeps beside libsql's own handle.
pub(crate) struct ReplicaFiles {
    /// Plain local connections on the replica's file, for reads only
    /// (`read_conn`): they keep their prepared statements and skip libsql's
    /// per-statement routing, which a replica's connections pay on every
    /// call. The writer's shipping connection is one too, not read-only.
    pub(crate) reader: Arc<libsql::Database>,
    pub(crate) idle_readers: Mutex<Vec<Connection>>,
    /// Ships the writer's transactions to the primary; `None` when the
    /// node writes interactively (SWITCHBOARD_SHIP_WRITES=0).
    pub(crate) shipper: Option<Arc<crate::ship::Shipper>>,
    /// When the last pull for a missing key or connection began
    /// (`pull_for_missing_key`).
    pub(crate) key_pull: Mutex<Option<std::time::Instant>>,
    /// The lock on the replica's folder, held while open.
    pub(crate) _lock: std::fs::File,
}

/// Opens a connection set up for this database (pragmas, busy timeout).
#[derive(Clone)]
pub(crate) struct Opener {
    pub(crate) database: Arc<libsql::Database>,
    /// Replica mode: the replica's handle (pragmas are the primary's).
    pub(crate) replica: Option<Arc<libsql::Database>>,
    /// What a commit survives, and whether the shipping writer carries.
    pub(crate) options: OpenOptions,
    /// The writer's opener of a replica that ships its transactions: the
    /// replica's file, opened as a plain database, and the shipper.
    pub(crate) ship: Option<(Arc<libsql::Database>, Arc<crate::ship::Shipper>, Arc<crate::freshness::Freshness>)>,
}

impl Opener {
    pub(crate) fn open(&self) -> Result<Connection> {
        if let (Some((file, shipper, fresh)), Some(replica)) = (&self.ship, &self.replica) {
            let c = file.connect()?;
            c.busy_timeout(BUSY_TIMEOUT)?;
            let mut c = Connection::new(c, None);
            c.ship = Some(Box::new(Shipping {
                shipper: shipper.clone(),
                replica: replica.clone(),
                fresh: fresh.clone(),
                log: RefCell::new(Vec::new()),
                savepoints: RefCell::default(),
                epoch: std::cell::Cell::new(None),
                locking: std::cell::Cell::new(false),
                locked: RefCell::new(None),
                carry: std::cell::Cell::new(None),
                carry_asked: std::cell::Cell::new(crate::ship::CarryAsk::No),
                carries: self.options.ship_carry,
            }));
            return Ok(c);
        }
        let c = self.database.connect()?;
        if self.replica.is_some() {
            // The primary sets synchronous and foreign keys and checkpoints
            // its WAL; a replica refuses pragmas that set a value.
            return Ok(Connection::new(c, self.replica.clone()));
        }
        c.busy_timeout(BUSY_TIMEOUT)?;
        // Checkpoints run on their own thread (`checkpoint`), never inside a
        // committing request: an automatic checkpoint's fsync would stall
        // whichever writer happened to cross the threshold.
        let synchronous = self.options.durability.pragma();
        // temp_store=MEMORY keeps the sub-journal of a request's savepoint in
        // memory: past 64 KiB SQLite spills it to a temporary file, and a
        // call start (about fifteen B-tree pages) crossed that, so every later
        // savepoint of its group commit wrote its pages with pwrite (a
        // quarter of the writer thread's time under call starts, issue 38).
        block(c.execute_batch(&format!("PRAGMA synchronous={synchronous}; PRAGMA foreign_keys=OFF; PRAGMA wal_autocheckpoint=0; PRAGMA temp_store=MEMORY;")))?;
        Ok(Connection::new(c, None))
    }
}

/// A pooled connection, returned to the pool on drop.
pub struct Conn<'a> {
    pub(crate) db: &'a Db,
    pub(crate) conn: Option<Connection>,
}

impl std::ops::Deref for Conn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until drop")
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            // A connection left inside a transaction (a replica's whose
            // primary went away mid-way) is not handed to the next caller.
            if !c.is_autocommit() {
                return;
            }
            let pool = match &self.db.replica {
                Some(r) if c.reader => &r.idle_readers,
                _ => &self.db.idle,
            };
            let mut idle = pool.lock();
            if idle.len() < 64 {
                idle.push(c);
            }
        }
    }
}

impl<'a> Conn<'a> {
    /// Takes the connection out of the pool for good (e.g. into a wasm store).
    pub fn detach(mut self) -> Connection {
        self.conn.take().expect("present until drop")
    }
}

pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The least time between two pulls made for unknown keys or connected
/// numbers: at most four a second, however many unknown ones arrive.
pub(crate) const KEY_PULL_GAP: Duration = Duration::from_millis(250);

/// Process-wide SQLite settings, made once before any database is opened
/// (SQLite takes them only before it initialises). Memory statistics off:
/// with them on, every allocation SQLite makes takes one global mutex
/// (about 40% of the mutex time of an ingestion step); nothing here reads
/// them.
pub(crate) fn configure_sqlite() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a documented start-time option with an int argument,
        // called before sqlite3_initialize (libsql initialises on the
        // first database it opens, after this).
        let rc = unsafe { libsql::ffi::sqlite3_config(libsql::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::ffi::c_int) };
        if rc != libsql::ffi::SQLITE_OK {
            tracing::warn!(rc, "SQLite was initialised before its memory statistics could be turned off");
        }
    });
}

/// Open flags of our local connections: read-write-create and
/// `SQLITE_OPEN_NOMUTEX`. Each `Connection` is used by one thread at a
/// time (it is not `Sync`: its statement cache is a `RefCell`), so the
/// per-connection mutex SQLite takes in every API call (bind, step, reset)
/// guards nothing.
pub(crate) fn unlocked_connections() -> libsql::OpenFlags {
    libsql::OpenFlags::from_bits_retain(libsql::OpenFlags::default().bits() | libsql::ffi::SQLITE_OPEN_NOMUTEX)
}

impl Db {
    /// Opens (creating if needed) `<dir>/switchboard.db`, switches on WAL,
    /// applies pending migrations and writes the planner's statistics
    /// (`planner_stats.rs`). Refuses a database newer than this binary.
    /// Local, with the default options: the tests' and tools' way in.
    pub fn open(dir: &Path) -> Result<Db> {
        Db::open_storage(dir, OpenOptions::default(), &Storage::Local)
    }

    /// Opens the database where `storage` says: the local file, or an
    /// embedded replica of a primary (synced before anything is read).
    /// Then migrations, which on a primary run at the primary, once.
    pub fn open_storage(dir: &Path, options: OpenOptions, storage: &Storage) -> Result<Db> {
        configure_sqlite();
        std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
        let db = match storage {
            Storage::Local => {
                let path = dir.join("switchboard.db");
                let database = block(libsql::Builder::new_local(&path).flags(unlocked_connections()).build()).with_context(|| format!("opening {}", path.display()))?;
                let keys = crate::key_cache::KeyCache::local(dir.join(crate::key_cache::SIGNAL_FILE));
                let db = Db::with_database(database, options, None, keys);
                {
                    let c = db.conn()?;
                    block(c.execute_batch("PRAGMA journal_mode=WAL;"))?;
                }
                db
            }
            Storage::Replica(primary) => Db::open_replica(dir, options, primary)?,
        };
        db.migrate()?;
        if db.ships_writes() {
            crate::ship::install_guard(&db).context("the write guard of shipped transactions")?;
        }
        Ok(db)
    }

    pub(crate) fn with_database(database: libsql::Database, options: OpenOptions, replica: Option<ReplicaFiles>, keys: crate::key_cache::KeyCache) -> Db {
        let database = Arc::new(database);
        let fresh = Arc::new(crate::freshness::Freshness::default());
        let opener = Opener { database: database.clone(), replica: replica.as_ref().map(|_| database), options, ship: None };
        // A replica's writer ships its transactions (`ship.rs`).
        let writer_opener = Opener { ship: replica.as_ref().and_then(|r| Some((r.reader.clone(), r.shipper.clone()?, fresh.clone()))), ..opener.clone() };
        Db { keys, fresh, write_gate: Gate::new(Writer { conn: None, opener: writer_opener, held: Vec::new() }, options.write_priority), opener, replica, idle: Mutex::new(Vec::new()) }
    }

    /// `<dir>/replica-<role>/switchboard.db`, a replica of `primary` kept
    /// by libsql's embedded-replica client; one process at a time (a lock
    /// file), since two clients syncing one file would corrupt it.
    pub(crate) fn open_replica(dir: &Path, options: OpenOptions, primary: &Primary) -> Result<Db> {
        let folder = dir.join(format!("replica-{}", primary.role));
        std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        let lock = std::fs::File::create(folder.join("lock")).with_context(|| format!("creating {}", folder.join("lock").display()))?;
        // Admin commands queue for their replica; a second server on the
        // same data dir is refused.
        let locked = if primary.role == "admin" { lock.lock().map_err(|e| e.to_string()) } else { lock.try_lock().map_err(|e| e.to_string()) };
        if let Err(e) = locked {
            bail!("another switchboard process keeps the replica in {} ({e}); give each server its own --data-dir", folder.display());
        }
        let rt = io_runtime()?;
        // The periodic sync is a task of the IO runtime.
        let _io = rt.enter();
        let path = folder.join("switchboard.db");
        let database = block(
            // libsql's own connector: http:// or https:// (the system's roots).
            libsql::Builder::new_remote_replica(&path, primary.url.clone(), primary.auth_token.clone())
                // sqld serves the default namespace unless told otherwise;
                // libsql would take the namespace from the host name.
                .namespace(&primary.namespace)
                // We pull once per committed write (`after_statement`)
                // instead of after every statement sent to the primary.
                .read_your_writes(false)
                .sync_interval(primary.sync_interval)
                .build(),
        )
        .with_context(|| format!("opening the replica {}", path.display()))?;
        block(database.sync()).map_err(|e| anyhow!("cannot sync with the primary at {}: {e}", primary.url))?;
        // The replica's file is an ordinary SQLite database in WAL mode that
        // libsql's injector writes: readers of their own see each committed
        // frame, and the node's writes reach it by `after_statement`.
        let reader = Arc::new(block(libsql::Builder::new_local(&path).flags(unlocked_connections()).build()).with_context(|| format!("opening {} for reading", path.display()))?);
        let keys = crate::key_cache::KeyCache::replica(primary.sync_interval);
        let shipper = if primary.ship_writes { Some(Arc::new(crate::ship::Shipper::new(&primary.url, &primary.auth_token, &primary.namespace)?)) } else { None };
        Ok(Db::with_database(database, options, Some(ReplicaFiles { reader, idle_readers: Mutex::new(Vec::new()), shipper, key_pull: Mutex::new(None), _lock: lock }), keys))
    }

    /// Read your writes of what this node wrote at the primary without its
    /// replica's file (`freshness.rs`).
    pub fn freshness(&self) -> Arc<crate::freshness::Freshness> {
        self.fresh.clone()
    }

    /// Whether this database is a replica of a primary (`--primary-url`).
    pub fn is_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// Whether the writer ships its transactions to the primary (`ship.rs`).
    pub fn ships_writes(&self) -> bool {
        self.replica.as_ref().is_some_and(|r| r.shipper.is_some())
    }

    /// Pulls the primary's committed frames into the replica now (nothing
    /// to do in the local mode). The write node's answer was sent after
    /// its commit, so a pull started after it arrived brings that write.
    pub fn pull(&self) -> Result<()> {
        let Some(replica) = &self.opener.replica else { return Ok(()) };
        match pull_replica(replica) {
            Ok(_) => {
                PRIMARY_UNREACHABLE.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                PRIMARY_UNREACHABLE.store(is_network(&e), Ordering::Relaxed);
                Err(anyhow!("pulling from the primary: {e}"))
            }
        }
    }

    /// A key, or a channel's connected number or account, this replica
    /// does not have may have been made a moment ago at the primary (the
    /// admin CLI, the console of another node): pull once before it is
    /// refused. These pulls are spaced `KEY_PULL_GAP` apart, so unknown
    /// keys or numbers cannot flood the primary; every miss waits for a
    /// pull that started after it arrived (one pull answers all misses
    /// that waited for it). False in the local mode or when the pull
    /// failed: nothing new to look at.
    pub fn pull_for_missing_key(&self) -> bool {
        let Some(replica) = &self.replica else { return false };
        let arrived = std::time::Instant::now();
        let pull = || {
            let mut last = replica.key_pull.lock();
            if last.is_some_and(|t| t > arrived) {
                // A pull that began after this miss has ended meanwhile.
                return true;
            }
            if let Some(wait) = last.map(|t| KEY_PULL_GAP.saturating_sub(t.elapsed())).filter(|w| !w.is_zero()) {
                std::thread::sleep(wait);
            }
            *last = Some(std::time::Instant::now());
            self.pull().is_ok()
        };
        // On a tokio worker (admission runs there) the pull must not hold
        // the worker's other tasks.
        match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(pull),
            _ => pull(),
        }
    }

    /// API keys by hash, kept in memory (`key_cache.rs`).
    pub fn keys(&self) -> &crate::key_cache::KeyCache {
        &self.keys
    }

    /// A pooled connection for reads only: on a replica, a read-only
    /// connection on its file (a write there is refused, so nothing bypasses
    /// the primary); in the local mode, `conn`.
    pub fn read_conn(&self) -> Result<Conn<'_>> {
        let Some(replica) = &self.replica else { return self.conn() };
        if let Some(c) = replica.idle_readers.lock().pop() {
            return Ok(Conn { db: self, conn: Some(c) });
        }
        Ok(Conn { db: self, conn: Some(new_reader(replica)?) })
    }

    /// A new connection for reads outside the pool (closed when dropped).
    pub fn fresh_read_conn(&self) -> Result<Connection> {
        match &self.replica {
            Some(replica) => new_reader(replica),
            None => self.fresh_conn(),
        }
    }

    /// A new connection outside the pool (closed when dropped).
    pub fn fresh_conn(&self) -> Result<Connection> {
        let c = self.opener.database.connect()?;
        c.busy_timeout(BUSY_TIMEOUT)?;
        Ok(Connection::new(c, self.opener.replica.clone()))
    }

    pub fn conn(&self) -> Result<Conn<'_>> {
        if let Some(c) = self.idle.lock().pop() {
            return Ok(Conn { db: self, conn: Some(c) });
        }
        Ok(Conn { db: self, conn: Some(self.opener.open()?) })
    }

    /// Returns a detached connection to the pool.
    pub fn give_back(&self, c: Connection) {
        drop(Conn { db: self, conn: Some(c) });
    }

    /// Holds the in-process write gate as a foreground writer (a request's
    /// write: before any job step that waits); `None` after `wait` (the
    /// caller answers 503, retryable).
    pub fn write_gate(&self, wait: Duration) -> Option<WriteGuard> {
        self.write_gate_as(Priority::Foreground, wait)
    }

    /// `write_gate` for background work (job steps, claims, upkeep): lets
    /// waiting foreground writers go first, within bounds (`Priority`).
    pub fn background_gate(&self, wait: Duration) -> Option<WriteGuard> {
        self.write_gate_as(Priority::Background, wait)
    }

    fn write_gate_as(&self, priority: Priority, wait: Duration) -> Option<WriteGuard> {
        let asked = std::time::Instant::now();
        let guard = self.write_gate.take(priority, wait);
        switchboard_ops::metrics::write_gate_wait(asked, guard.is_some());
        // A group commit of job steps left open commits before anyone else
        // writes (on the writer connection or another).
        guard.map(|mut g| {
            g.flush();
            g
        })
    }

    /// The gate itself, for a job step that takes it only when it first
    /// writes (see `jobs::run_one`).
    pub fn gate(&self) -> Gate {
        self.write_gate.clone()
    }

    /// Applies pending migrations, one transaction each. What is applied
    /// is read inside that write transaction, so when several nodes start
    /// on one primary, the first applies a migration and the others find
    /// it done; a database that has a migration this binary does not know
    /// is refused.
    pub(crate) fn migrate(&self) -> Result<()> {
        let _gate = self.write_gate.lock();
        let c = self.conn()?;
        execute(&c, "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)", vec![])?;
        let known: Vec<&str> = MIGRATIONS.iter().map(|(n, _)| *n).collect();
        let next = || -> Result<Option<&str>> {
            let applied: Vec<String> = query_as(&c, "SELECT name FROM schema_migrations ORDER BY name", params![])?;
            if let Some(unknown) = applied.iter().find(|a| !known.contains(&a.as_str())) {
                bail!(
                    "this database was migrated by a newer Switchboard (it has migration {unknown}, which this binary does not know); \
                     upgrade the binary or use another --data-dir"
                );
            }
            let Some((name, sql)) = MIGRATIONS.iter().find(|(n, _)| !applied.iter().any(|a| a == n)) else { return Ok(None) };
            block(c.execute_batch(sql)).map_err(|e| anyhow!("migration {name} failed: {e}"))?;
            execute(&c, "INSERT INTO schema_migrations(name, applied_at) VALUES (?1, datetime('now'))", params![*name])?;
            Ok(Some(name))
        };
        while let Some(name) = in_transaction(&c, next)? {
            tracing::info!(migration = %name, "applied migration");
        }
        if self.replica.is_some() {
            // The primary refuses ANALYZE, so sqlite_stat1 cannot be made
            // there; a replica plans without our statistics.
            return Ok(());
        }
        crate::planner_stats::seed(&c).context("writing the query planner's statistics")
    }
}

/// A read-only connection on a replica's file (a write there is refused,
/// so nothing bypasses the primary).
pub(crate) fn new_reader(replica: &ReplicaFiles) -> Result<Connection> {
    let c = replica.reader.connect()?;
    c.busy_timeout(BUSY_TIMEOUT)?;
    block(c.execute_batch("PRAGMA query_only=ON;"))?;
    let mut c = Connection::new(c, None);
    c.reader = true;
    Ok(c)
}
