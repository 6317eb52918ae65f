//! Wake-ups: what the host does to a job when the world tells it something
//! (a provider's pushed status, a carrier's callback or turn). A pending job
//! is made due now; a job that is running, or done, is left alone (its next
//! step reads what changed).

use super::*;

/// Makes the pending job of `lane` due by `now_ms` (never later than it
/// was). How many jobs were woken: 0 when the lane has no pending job. The
/// statement is the areas' too (`switchboard_job_kinds::wake_lane`).
pub fn wake_lane(c: &db::Connection, lane: &str, now_ms: i64) -> anyhow::Result<u64> {
    switchboard_job_kinds::wake_lane(c, lane, now_ms)
}

/// Makes job `id` due by `now_ms` if it is pending (never later than it
/// was): 1 if it was woken, 0 otherwise.
pub fn wake_job(c: &db::Connection, id: &str, now_ms: i64) -> anyhow::Result<u64> {
    db::execute(c, "UPDATE jobs SET due_at_ms = MIN(due_at_ms, ?2) WHERE state = 'pending' AND id = ?1", db::params![id, now_ms])
}
