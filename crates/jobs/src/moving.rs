//! A business's jobs while it moves between databases
//! (`switchboard_storage::moves`, `admin business move`): the job rows'
//! side of a move, so every statement on job rows is this crate's. The
//! mover (in the storage crate, which this crate depends on) takes them as
//! its [`Jobs`].

use super::*;
use switchboard_storage::moves::Jobs;

/// The job rows of a moving business.
pub struct MovedJobs;

impl Jobs for MovedJobs {
    fn set_aside(&self, c: &db::Connection, business: &str) -> anyhow::Result<u64> {
        db::execute(c, "UPDATE jobs SET state = 'moving' WHERE business_id = ?1 AND state IN ('pending', 'leased')", db::params![business])
    }

    fn take_up(&self, c: &db::Connection, business: &str) -> anyhow::Result<u64> {
        db::execute(
            c,
            "UPDATE jobs SET state = 'pending', lease_owner = NULL, lease_until_ms = NULL, fence = fence + 1 WHERE business_id = ?1 AND state IN ('moving', 'leased')",
            db::params![business],
        )
    }

    fn row_tables(&self) -> &'static [&'static str] {
        &["job_runs", "job_effects"]
    }

    fn rows_of_business(&self) -> &'static str {
        "job_id IN (SELECT id FROM jobs WHERE business_id = ?1)"
    }
}
