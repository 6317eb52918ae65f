//! Storage: the one database every node works on. A local libSQL file, or
//! an embedded replica of a libSQL primary whose writes are shipped to the
//! primary as guarded batches (`ship`); the migrations; connections that
//! keep their prepared statements; the write gate and its writer
//! connection; read-your-writes (`freshness`); the key cache's change
//! signal; the planner's statistics; the job rows the host writes itself,
//! from a typed kind of `switchboard-job-kinds` (`jobs`).
//!
//! Never: HTTP, wasmtime, domain rules. Nothing here knows what a contact is
//! or what a job does; callers hand it SQL, or a typed job to enqueue.
//!
//! Entry point: `db::Db::open`.

pub mod databases;
pub mod db;
pub mod freshness;
pub mod jobs;
pub mod key_cache;
pub mod moves;
pub mod planner_stats;
pub mod ship;
pub mod sql_literals;

/// Storage could not take the request, in the API's terms: busy, or (on a
/// node of a primary) the primary cannot be reached. Both retryable;
/// nothing was written.
pub fn unavailable() -> switchboard_gateway::Failure {
    use switchboard_gateway::Failure;
    if db::primary_unreachable() {
        return Failure::new(503, "upstream", "primary_unavailable", "the database primary cannot be reached; nothing was written, retry shortly");
    }
    Failure::new(503, "capacity", "storage_unavailable", "storage is busy; retry shortly")
}
