//! The durable job runner: leadership, claiming with fencing tokens, running
//! each job through the dispatcher component, and fenced completion.
//!
//! A job's writes and its new state commit in one transaction, and only while
//! the fence taken at claim time is still the job's fence. Work left leased by
//! a crashed or stalled node is reclaimed once its lease expires, with a new
//! fence, so the stalled node's late completion is refused.
//!
//! Never: HTTP, admission, domain rules (a step is the dispatcher
//! component's; the runner only claims, runs and completes).
//!
//! Entry point: `Runner::tick`, called by the host's job loop with a
//! `JobHost` (the database and the components).

mod claims;
mod moving;
mod runner;
mod step;
#[cfg(test)]
mod tests;
mod upkeep;
mod wake;

pub use claims::*;
pub use moving::MovedJobs;
pub use runner::*;
pub use step::*;
pub use upkeep::*;
pub use wake::*;

// What the modules here share.
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use switchboard_ops::{clock, logging, metrics};
use switchboard_runtime::engine::{CallError, Components, Job, Outcome};
use switchboard_storage::db::{self, Db};

/// How long a claimed job stays ours without completing.
pub const JOB_LEASE: Duration = Duration::from_secs(60);
/// How long a node stays leader without renewing.
pub const LEADER_LEASE: Duration = Duration::from_secs(10);
/// Failed attempts before a job is declared dead.
pub const MAX_ATTEMPTS: i64 = 25;
/// Steps that do not call out, claimed per round (run one after another).
pub(crate) const LOCAL_BATCH: i64 = 8;

/// A claimed job and the fence that proves the claim.
#[derive(Debug, Clone)]
pub struct Claim {
    pub id: String,
    pub kind: String,
    pub business_id: String,
    pub payload: String,
    pub attempts: i64,
    pub fence: i64,
    /// The job declared that its steps call out (see `run_one`).
    pub calls_out: bool,
    /// The job's lane, if any (see `PICK_FAIR`).
    pub lane: Option<String>,
}
