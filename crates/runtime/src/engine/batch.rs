//! Several job steps in one dispatcher call (`job-handler.run-batch`): the
//! runner hands over claims of one kind and one business together when the
//! dispatcher names the kind in `batched-kinds` (webhook deliveries: their
//! POSTs go out at once, `http-out.post-many`). One instance, one call, one
//! lazily begun write transaction for all of them, as [`Components::run_job`]
//! gives one step (`steps.rs`, which keeps the instance warm for the
//! business's next step or batch).

use super::steps::StepEnd;
use super::{CallError, Components, Job, Outcome, JOB_DEADLINE};

impl Components {
    /// The job kinds the dispatcher runs several at a time (`run-batch`);
    /// none when it has none or cannot say (every job then runs alone).
    pub fn batched_kinds(&self) -> Vec<String> {
        let Some(pre) = &self.dispatcher else { return Vec::new() };
        let mut store = self.store(None, "component=dispatcher batched-kinds".into(), "", JOB_DEADLINE);
        let kinds = pre.instantiate(&mut store).and_then(|inst| inst.switchboard_platform_job_handler().call_batched_kinds(&mut store));
        kinds.unwrap_or_else(|e| {
            tracing::warn!(error = %format!("{e:#}"), "the dispatcher did not name its batched job kinds; every job runs alone");
            Vec::new()
        })
    }

    /// Runs the steps of `jobs` (one kind named by [`Self::batched_kinds`],
    /// one business, each claimed with its own fence) in one dispatcher
    /// call on `conn`, as [`Self::run_job`] runs one step that calls out:
    /// the first write of any of them takes `lazy_gate` and begins the one
    /// transaction on the gate's writer connection. Their outcomes come back
    /// in the order of `jobs`, with the call's connection and write parts
    /// as `run_job` hands them back.
    pub fn run_batch(&self, conn: crate::db::Connection, jobs: &[Job], lazy_gate: crate::db::Gate) -> StepEnd<Vec<Outcome>> {
        let business = jobs.first().map_or("", |j| j.business_id.as_str());
        let kind = jobs.first().map_or("", |j| j.kind.as_str());
        let log_context = format!("component=dispatcher jobs={} kind={kind}", jobs.len());
        match self.run_step(conn, log_context, business, Some(lazy_gate), None, |instance, store| instance.switchboard_platform_job_handler().call_run_batch(store, jobs)) {
            Ok((conn, parts, result)) => (conn, parts, result.and_then(|outcomes| one_each(outcomes, jobs.len()))),
            Err((conn, gate)) => self.run_batch(conn, jobs, gate.expect("a batch always has its gate")),
        }
    }
}

/// The batch's outcomes when there is one for each of its `jobs` steps.
fn one_each(outcomes: Vec<Outcome>, jobs: usize) -> Result<Vec<Outcome>, CallError> {
    if outcomes.len() == jobs {
        Ok(outcomes)
    } else {
        Err(CallError::Trap(format!("run-batch answered {} outcomes for {jobs} jobs", outcomes.len())))
    }
}
