//! Several job steps in one dispatcher call (`job-handler.run-batch`): the
//! runner hands over claims of one kind and one business together when the
//! dispatcher names the kind in `batched-kinds` (webhook deliveries: their
//! POSTs go out at once, `http-out.post-many`). One instance, one call, one
//! lazily begun write transaction for all of them, as [`Components::run_job`]
//! gives one step (`steps.rs`, which keeps the instance warm for the
//! business's next step or batch).

use super::imports::LazyWrite;
use super::steps::StepStore;
use super::{classify, classify_instantiate, CallError, Components, Job, Outcome, JOB_DEADLINE};

/// What [`Components::run_batch`] hands back, as `run_job` does: the call's
/// connection, the gate and the steps' own connection when they wrote, and
/// their outcomes.
pub type BatchEnd = (crate::db::Connection, Option<(crate::db::WriteGuard, crate::db::Connection)>, Result<Vec<Outcome>, CallError>);

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
    /// in the order of `jobs`.
    pub fn run_batch(&self, conn: crate::db::Connection, jobs: &[Job], lazy_gate: crate::db::Gate) -> BatchEnd {
        let Some(pre) = &self.dispatcher else {
            return (conn, None, Err(CallError::Trap("no dispatcher component in this build".into())));
        };
        let business = jobs.first().map_or("", |j| j.business_id.as_str());
        let kind = jobs.first().map_or("", |j| j.kind.as_str());
        let StepStore { mut store, instance } = self.step_store(conn, format!("component=dispatcher jobs={} kind={kind}", jobs.len()), business);
        store.data_mut().lazy = Some(LazyWrite::new(lazy_gate));
        let (instance, uses) = match instance {
            Some(warm) => warm,
            None => match pre.instantiate(&mut store) {
                Ok(instance) => (instance, 0),
                Err(e) => {
                    let e = classify_instantiate(e);
                    // Nothing ran: the same connection and gate go to a fresh store.
                    if self.made_room(&e) {
                        let mut state = store.into_data();
                        let gate = state.lazy.take().map(LazyWrite::into_gate).expect("set above");
                        return self.run_batch(state.take_conn(), jobs, gate);
                    }
                    let (conn, parts) = self.end_step(store, None, business);
                    return (conn, parts, Err(e));
                }
            },
        };
        let result = instance.switchboard_platform_job_handler().call_run_batch(&mut store, jobs).map_err(classify);
        let kept = result.is_ok().then_some((instance, uses));
        let (conn, parts) = self.end_step(store, kept, business);
        let result = result.and_then(
            |outcomes| {
                if outcomes.len() == jobs.len() {
                    Ok(outcomes)
                } else {
                    Err(CallError::Trap(format!("run-batch answered {} outcomes for {} jobs", outcomes.len(), jobs.len())))
                }
            },
        );
        (conn, parts, result)
    }
}
