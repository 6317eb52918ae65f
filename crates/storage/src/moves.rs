//! Moving a business between databases while its clients keep writing
//! (`admin business move`, issue 47).
//!
//! A move runs in phases, each recorded in main's `business_moves`, so
//! that running the command again after a crash (a kill -9 halfway)
//! resumes where it stopped; every phase may run twice:
//!
//! 1. **Fenced** (at the source, one transaction): the business is listed
//!    in the source's `moved_businesses`; its pending and leased jobs there
//!    are set aside (state `moving`: no runner claims them, a step in
//!    flight cannot complete); triggers refuse any write of its rows there
//!    (`switchboard_moved_*`: a node with a stale placement, an admin
//!    command, a provider webhook). The request path checks the list in
//!    each write's own transaction and answers 503 `business_moving`
//!    (retryable), and a read finding it follows the placement again.
//!    From here the source's copy of the business is frozen.
//! 2. **Copied**: the target's leftovers of the business (an earlier run
//!    cut short) are deleted, then every row of the business is copied in
//!    chunks, table by table (tables that triggers update after those whose
//!    triggers update them); set-aside jobs arrive pending, with a new
//!    fence, so a step that was in flight at the source runs again at the
//!    target under the key its effect already carries. No node reads or
//!    writes the target's copy yet: the placement still names the source.
//! 3. **Placed** (main, one transaction): the placement names the target.
//!    Nodes follow at their next request of the business: a write at the
//!    source is refused (503, and the node reads the placement again), a
//!    read there finds the fence and reads the placement again.
//! 4. **Done**: the source's rows of the business are deleted (the
//!    `moved_businesses` row stays: the tombstone that keeps its writes
//!    refused there), and the move's row in main goes.
//!
//! What the business cannot do meanwhile: write between 1 and 3, for as
//! long as its copy takes.

use crate::databases::{Databases, MAIN};
use crate::db::{self, params, query_as, query_one_as, query_rows, Connection, Db, SqlValue};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::json;
use std::collections::BTreeSet;

/// Rows copied per transaction (a sqld primary ends a transaction held
/// past 5 s).
const CHUNK: usize = 2_000;

/// Tables with a `business_id` that are not a business's own rows: what
/// main keeps for every business (keys, console users and sessions, the
/// placement) and what each database keeps for itself. The vectors (those
/// indexed and those waiting for the index) are made again at the target
/// (`after_copy`): they are keyed by the full-text table's rowids, which a
/// copy does not keep.
const NOT_COPIED: [&str; 8] = ["api_keys", "console_users", "console_sessions", "businesses", "moved_businesses", "business_moves", "knowledge_vectors", "knowledge_vectors_pending"];

/// A business's jobs in a move. Their rows and statements are the job
/// runner's (`switchboard_jobs::MovedJobs`), which depends on this crate:
/// the caller hands them in.
pub trait Jobs {
    /// At the source, in the fence's transaction: the business's pending
    /// and leased jobs are set aside (no runner claims them, a step in
    /// flight cannot complete).
    fn set_aside(&self, c: &Connection, business: &str) -> Result<u64>;
    /// At the target, in the copy's last transaction: the set-aside and
    /// leased jobs are pending again, under a new fence.
    fn take_up(&self, c: &Connection, business: &str) -> Result<u64>;
    /// The tables of a job's own rows, which have no `business_id`.
    fn row_tables(&self) -> &'static [&'static str];
    /// The condition that selects the business's rows of such a table
    /// (`?1` is the business).
    fn rows_of_business(&self) -> &'static str;
}

/// What a move does at the target once the rows are there, in the copy's
/// last transaction (the host: the business's passages are embedded again
/// there).
pub type AfterCopy<'a> = &'a dyn Fn(&Connection, &str) -> Result<()>;

/// `admin business move --business ID --to NAME`: moves the business, or
/// finishes the move under way. `say` hears each phase as it ends.
pub fn move_business(dbs: &Databases, business: &str, to: &str, jobs: &dyn Jobs, after_copy: AfterCopy, say: &dyn Fn(&str)) -> Result<serde_json::Value> {
    let business = business.to_ascii_lowercase();
    let main = dbs.main();
    let control = business_row(main, &business)?.ok_or_else(|| anyhow!("no business {business} in this data dir"))?;
    let (from, mut phase) = match under_way(main, &business)? {
        Some((_, target, _)) if target != to => {
            bail!("a move of {business} to {target} is under way; run `admin business move --business {business} --to {target}` to finish it first")
        }
        Some((from, _, phase)) => {
            say(&format!("resuming the move from {from} to {to} (phase {phase})"));
            (from, phase)
        }
        None => {
            let from = control.database.clone();
            if from == to {
                return Ok(json!({"businessId": business, "database": to, "moved": false}));
            }
            dbs.named(to).with_context(|| format!("--to {to}"))?;
            let c = main.conn()?;
            db::in_transaction(&c, || {
                db::execute(
                    &c,
                    "INSERT INTO business_moves (business_id, from_database, to_database, phase, started_at) VALUES (?1, ?2, ?3, 'fencing', ?4)",
                    params![&business, &from, to, switchboard_ops::clock::now_rfc3339()],
                )
            })?;
            (from, "fencing".to_string())
        }
    };
    let (source, target) = (dbs.named(&from)?, dbs.named(to)?);
    let started = std::time::Instant::now();
    if phase == "fencing" {
        fence(&source, &business, to, jobs)?;
        phase = set_phase(main, &business, "fenced")?;
        say(&format!("fenced at {from}: the business's writes wait until the move ends"));
    }
    let fenced_at = std::time::Instant::now();
    if phase == "fenced" {
        let rows = copy(&source, &target, &business, &control, to, jobs, after_copy)?;
        phase = set_phase(main, &business, "copied")?;
        say(&format!("copied {rows} rows to {to}"));
    }
    if phase == "copied" {
        let c = main.conn()?;
        db::in_transaction(&c, || {
            db::execute(&c, "UPDATE businesses SET database = ?2 WHERE id = ?1", params![&business, to])?;
            db::execute(&c, "UPDATE business_moves SET phase = 'placed' WHERE business_id = ?1", params![&business])
        })?;
        dbs.forget(&business);
        phase = "placed".into();
        say(&format!("placed at {to}"));
    }
    let writes_waited_ms = fenced_at.elapsed().as_millis() as u64;
    if phase == "placed" {
        clean(&source, &business, jobs)?;
        let c = main.conn()?;
        db::in_transaction(&c, || db::execute(&c, "DELETE FROM business_moves WHERE business_id = ?1", params![&business]))?;
        say(&format!("removed the business's rows from {from}"));
    }
    Ok(json!({"businessId": business, "from": from, "database": to, "moved": true, "tookMs": started.elapsed().as_millis() as u64, "writesRefusedMs": writes_waited_ms}))
}

/// The control row of a business in main.
pub struct Control {
    pub name: String,
    pub created_at: String,
    pub database: String,
}

fn business_row(main: &Db, business: &str) -> Result<Option<Control>> {
    let c = main.conn()?;
    let row = query_one_as::<(String, String, String)>(&c, "SELECT name, created_at, database FROM businesses WHERE id = ?1", params![business])?;
    Ok(row.map(|(name, created_at, database)| Control { name, created_at, database }))
}

/// The move of `business` under way: (from, to, phase).
fn under_way(main: &Db, business: &str) -> Result<Option<(String, String, String)>> {
    let c = main.conn()?;
    query_one_as(&c, "SELECT from_database, to_database, phase FROM business_moves WHERE business_id = ?1", params![business])
}

fn set_phase(main: &Db, business: &str, phase: &str) -> Result<String> {
    let c = main.conn()?;
    db::in_transaction(&c, || db::execute(&c, "UPDATE business_moves SET phase = ?2 WHERE business_id = ?1", params![business, phase]))?;
    Ok(phase.to_string())
}

/// Phase 1, at the source.
fn fence(source: &Db, business: &str, to: &str, jobs: &dyn Jobs) -> Result<()> {
    let c = source.conn()?;
    db::in_transaction(&c, || {
        db::execute(
            &c,
            "INSERT INTO moved_businesses (business_id, to_database, moved_at, cleaning) VALUES (?1, ?2, ?3, 0) \
             ON CONFLICT (business_id) DO UPDATE SET to_database = excluded.to_database, moved_at = excluded.moved_at, cleaning = 0",
            params![business, to, switchboard_ops::clock::now_rfc3339()],
        )?;
        jobs.set_aside(&c, business)?;
        guard(&c)
    })
}

/// Makes the triggers that refuse writes of the businesses in
/// `moved_businesses` again, for every table of a business's rows: an
/// insert or update always, a delete until the move's cleaning. The
/// businesses are literals in each trigger's condition, so a write of
/// any other business pays a lookup in a short constant list.
pub fn guard(c: &Connection) -> Result<()> {
    for old in query_as::<String>(c, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'switchboard\\_moved\\_%' ESCAPE '\\'", params![])? {
        db::execute(c, &format!("DROP TRIGGER IF EXISTS \"{old}\""), vec![])?;
    }
    let list = |sql: &str| -> Result<String> { Ok(query_as::<String>(c, sql, params![])?.iter().map(|b| format!("'{}'", b.replace('\'', "''"))).collect::<Vec<_>>().join(", ")) };
    let fenced = list("SELECT business_id FROM moved_businesses ORDER BY business_id")?;
    let uncleaned = list("SELECT business_id FROM moved_businesses WHERE cleaning = 0 ORDER BY business_id")?;
    for table in business_tables(c, None)?.into_iter().filter(|t| t.has_business_id && !t.is_virtual) {
        let t = &table.name;
        for (event, row, list) in [("INSERT", "NEW", &fenced), ("UPDATE", "OLD", &fenced), ("DELETE", "OLD", &uncleaned)] {
            if list.is_empty() {
                continue;
            }
            let name = format!("switchboard_moved_{t}_{}", event.to_ascii_lowercase());
            db::execute(c, &format!("CREATE TRIGGER \"{name}\" BEFORE {event} ON \"{t}\" WHEN {row}.business_id IN ({list}) BEGIN SELECT RAISE(ABORT, 'business_moving'); END"), vec![])?;
        }
    }
    Ok(())
}

/// A table of a business's rows.
#[derive(Debug, Clone)]
struct Table {
    name: String,
    columns: Vec<String>,
    /// What orders its rows for chunked reads: its primary key's columns
    /// (a table without rowid), else `rowid`.
    key: Vec<String>,
    has_business_id: bool,
    is_virtual: bool,
    /// The condition that selects the business's rows (`?1`).
    rows_of_business: &'static str,
}

/// Every table of a business's rows in `c`'s database (with the rows of
/// its `jobs`, when given), in the order a copy inserts them: a table whose
/// triggers write another comes before that other (a message's trigger
/// updates its conversation: copied after the messages, the conversation
/// keeps its own values).
fn business_tables(c: &Connection, jobs: Option<&dyn Jobs>) -> Result<Vec<Table>> {
    let rows: Vec<(String, Option<String>)> = query_as(
        c,
        "SELECT t.name, t.sql FROM sqlite_master AS t WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND t.name NOT LIKE 'libsql\\_%' ESCAPE '\\' \
         AND t.name NOT LIKE '%\\_shadow' ESCAPE '\\' \
         AND NOT EXISTS (SELECT 1 FROM sqlite_master AS v WHERE v.type = 'table' AND v.sql LIKE 'CREATE VIRTUAL%' AND t.name LIKE v.name || '\\_%' ESCAPE '\\') \
         ORDER BY t.name",
        params![],
    )?;
    let mut tables = Vec::new();
    for (name, sql) in rows {
        let sql = sql.unwrap_or_default();
        if NOT_COPIED.contains(&name.as_str()) {
            continue;
        }
        let info: Vec<(String, i64)> = query_as(c, &format!("SELECT name, pk FROM pragma_table_info('{name}') ORDER BY cid"), params![])?;
        let columns: Vec<String> = info.iter().map(|(column, _)| column.clone()).collect();
        let has_business_id = columns.iter().any(|c| c == "business_id");
        let rows_of_business = match jobs {
            _ if has_business_id => "business_id = ?1",
            Some(jobs) if jobs.row_tables().contains(&name.as_str()) => jobs.rows_of_business(),
            _ => continue,
        };
        let without_rowid = sql.to_ascii_uppercase().contains("WITHOUT ROWID");
        let mut pk: Vec<(i64, String)> = info.into_iter().filter(|(_, n)| *n > 0).map(|(column, n)| (n, column)).collect();
        pk.sort();
        let key = if without_rowid { pk.into_iter().map(|(_, c)| c).collect() } else { vec!["rowid".to_string()] };
        tables.push(Table { name, columns, key, has_business_id, is_virtual: sql.starts_with("CREATE VIRTUAL"), rows_of_business });
    }
    // Triggers: table → the tables their bodies name.
    let triggers: Vec<(String, Option<String>)> = query_as(c, "SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger' AND name NOT LIKE 'switchboard\\_%' ESCAPE '\\'", params![])?;
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    let mut after: Vec<(String, String)> = Vec::new();
    for (on, body) in &triggers {
        let body = body.as_deref().unwrap_or_default();
        for other in names.iter().filter(|n| *n != on) {
            if names_word(body, other) {
                after.push((on.clone(), other.clone()));
            }
        }
    }
    // A stable topological order (Kahn's), by name among equals.
    let mut ordered = Vec::new();
    let mut left: BTreeSet<String> = names.iter().cloned().collect();
    while !left.is_empty() {
        let ready = left.iter().find(|n| !after.iter().any(|(first, then)| then == *n && left.contains(first) && first != *n)).cloned();
        let next = ready.unwrap_or_else(|| left.iter().next().cloned().expect("not empty"));
        left.remove(&next);
        ordered.push(tables.iter().find(|t| t.name == next).cloned().expect("a known table"));
    }
    Ok(ordered)
}

/// Whether `sql` names `word` as a whole identifier.
fn names_word(sql: &str, word: &str) -> bool {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = sql.as_bytes();
    sql.match_indices(word).any(|(i, _)| {
        let before = i == 0 || !ident(bytes[i - 1]);
        let end = i + word.len();
        let after = end >= bytes.len() || !ident(bytes[end]);
        before && after
    })
}

/// The order rows are deleted in: the rows of jobs while their jobs are
/// there to name them, then the rest, last inserted first.
fn deletion_order(tables: &[Table]) -> Vec<&Table> {
    let (job_rows, rest): (Vec<&Table>, Vec<&Table>) = tables.iter().partition(|t| !t.has_business_id);
    job_rows.into_iter().chain(rest.into_iter().rev()).collect()
}

/// Phase 2: the target's leftovers go, then every row is copied.
// One argument per part of the move: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
fn copy(source: &Db, target: &Db, business: &str, control: &Control, to: &str, jobs: &dyn Jobs, after_copy: AfterCopy) -> Result<u64> {
    // The source's replica holds the fence and everything before it.
    source.pull()?;
    let tables = {
        let c = source.read_conn()?;
        business_tables(&c, Some(jobs))?
    };
    // The target owns the business from now on (a move back to a database
    // it left drops that database's tombstone), and holds none of its rows
    // yet (an earlier run of this phase may have left some).
    {
        let c = target.conn()?;
        db::in_transaction(&c, || {
            db::execute(&c, "DELETE FROM moved_businesses WHERE business_id = ?1", params![business])?;
            guard(&c)?;
            for t in deletion_order(&tables) {
                db::execute(&c, &format!("DELETE FROM \"{}\" WHERE {}", t.name, t.rows_of_business), params![business])?;
            }
            Ok(())
        })?;
    }
    let mut copied = 0u64;
    let src = source.read_conn()?;
    for t in &tables {
        let cols = t.columns.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
        let keys = t.key.join(", ");
        let n = t.key.len();
        let after_key = format!("({keys}) > ({})", (0..n).map(|i| format!("?{}", i + 2)).collect::<Vec<_>>().join(", "));
        let insert = format!("INSERT INTO \"{}\" ({cols}) VALUES ({})", t.name, (1..=t.columns.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", "));
        let mut last: Option<Vec<SqlValue>> = None;
        loop {
            let (sql, mut params) = match &last {
                None => (format!("SELECT {keys}, {cols} FROM \"{}\" WHERE {} ORDER BY {keys} LIMIT {CHUNK}", t.name, t.rows_of_business), params![business]),
                Some(_) => (format!("SELECT {keys}, {cols} FROM \"{}\" WHERE {} AND {after_key} ORDER BY {keys} LIMIT {CHUNK}", t.name, t.rows_of_business), params![business]),
            };
            if let Some(k) = &last {
                params.extend(k.iter().cloned());
            }
            // Positional: a table's width (its key, then its columns) is
            // read from its schema at run time.
            let rows = query_rows(&src, &sql, params)?;
            let Some(tail) = rows.last() else { break };
            last = Some(tail[..n].to_vec());
            let full = rows.len() == CHUNK;
            let values: Vec<Vec<SqlValue>> = rows.into_iter().map(|mut r| r.split_off(n)).collect();
            copied += values.len() as u64;
            let c = target.conn()?;
            db::in_transaction(&c, || Ok(c.execute_many(&insert, values)?)).with_context(|| format!("copying {}", t.name))?;
            if !full {
                break;
            }
        }
    }
    drop(src);
    // Set-aside and leased jobs run at the target, under a new fence; the
    // business's own row there; then the caller's part.
    let c = target.conn()?;
    db::in_transaction(&c, || {
        jobs.take_up(&c, business)?;
        if to != MAIN {
            db::execute(&c, "INSERT OR REPLACE INTO businesses (id, name, created_at, database) VALUES (?1, ?2, ?3, ?4)", params![business, &control.name, &control.created_at, to])?;
        }
        after_copy(&c, business)
    })?;
    Ok(copied)
}

/// Phase 4, at the source: its rows of the business go; the tombstone
/// stays.
fn clean(source: &Db, business: &str, jobs: &dyn Jobs) -> Result<()> {
    let tables = {
        let c = source.read_conn()?;
        business_tables(&c, Some(jobs))?
    };
    let c = source.conn()?;
    db::in_transaction(&c, || {
        db::execute(&c, "UPDATE moved_businesses SET cleaning = 1 WHERE business_id = ?1", params![business])?;
        guard(&c)
    })?;
    for t in deletion_order(&tables) {
        db::in_transaction(&c, || db::execute(&c, &format!("DELETE FROM \"{}\" WHERE {}", t.name, t.rows_of_business), params![business]))?;
    }
    let vectors = query_one_as::<String>(&c, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'knowledge_vectors'", params![])?.is_some();
    db::in_transaction(&c, || {
        if vectors {
            db::execute(&c, "DELETE FROM knowledge_vectors WHERE business_id = ?1", params![business])?;
        }
        db::execute(&c, "DELETE FROM knowledge_vectors_pending WHERE business_id = ?1", params![business])?;
        // Main keeps the control row (it names the target now).
        db::execute(&c, "DELETE FROM businesses WHERE id = ?1 AND database <> ?2", params![business, to_of(&c, business)?])
    })?;
    Ok(())
}

fn to_of(c: &Connection, business: &str) -> Result<String> {
    Ok(query_one_as::<String>(c, "SELECT to_database FROM moved_businesses WHERE business_id = ?1", params![business])?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_identifiers_only() {
        assert!(names_word("UPDATE conversations SET", "conversations"));
        assert!(!names_word("UPDATE conversations_x SET", "conversations"));
        assert!(!names_word("x.my_messages", "messages"));
        assert!(names_word("ON messages BEGIN", "messages"));
    }
}
