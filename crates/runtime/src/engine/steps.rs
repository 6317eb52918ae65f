//! Job steps in the dispatcher: one step ([`Components::run_job`]; several
//! at once are `batch.rs`), and the dispatcher's instances kept warm
//! between one business's steps, as requests keep theirs (`warm.rs`).
//!
//! A step used to instantiate the dispatcher and drop it (resetting the
//! memory it dirtied) at its end. The dispatcher keeps nothing between
//! calls (every step reads its job and the store), so an instance whose
//! call returned may run the same business's next step; never another
//! business's. Its connection, its lazily taken gate and its job go back to
//! the runner first: a warm instance's state holds none of them.

use super::dispatcher_world::Dispatcher;
use super::imports::{LazyWrite, RequestState, StepContext};
use super::{classify, classify_instantiate, deadline_ticks, warm, CallError, Components, Job, Outcome, DISPATCHER, JOB_DEADLINE};
use wasmtime::Store;

/// Idle dispatcher instances kept in all, across businesses: about a
/// database's job concurrency, so idle ones seldom hold the pool's slots
/// from work (and they are dropped when the pool is full).
pub(super) const MAX_IDLE_STEPS: usize = 8;

/// What a step hands back to the runner: the connection its call ran on,
/// the gate and the step's own connection when it wrote
/// (`LazyWrite::into_parts`), and the call's answer.
pub type StepEnd<T> = (crate::db::Connection, Option<(crate::db::WriteGuard, crate::db::Connection)>, Result<T, CallError>);

/// What a step's call came to (`Ok`); or, when the pool was full and idle
/// instances were dropped before anything ran, the connection and the gate
/// back to run the step again on a fresh store (`Err`).
type Ran<T> = Result<StepEnd<T>, (crate::db::Connection, Option<crate::db::Gate>)>;

impl Components {
    /// Runs one job step in the dispatcher, on `conn`. Without `lazy_gate`
    /// the job runner has opened the transaction already; with it (a step
    /// that calls out) the step's first write takes the gate and begins it
    /// on the gate's writer connection, and the guard comes back with the
    /// step's own connection (the connection returned first is then the
    /// writer's), so the runner commits the completion in the same
    /// transaction.
    pub fn run_job(&self, conn: crate::db::Connection, job: &Job, lazy_gate: Option<crate::db::Gate>) -> StepEnd<Outcome> {
        let log_context = format!("component=dispatcher job={} kind={}", job.id, job.kind);
        let step = StepContext { job_id: job.id.clone(), fence: job.fence as i64 };
        match self.run_step(conn, log_context, &job.business_id, lazy_gate, Some(step), |instance, store| instance.switchboard_platform_job_handler().call_run(store, job)) {
            Ok(ran) => ran,
            Err((conn, gate)) => self.run_job(conn, job, gate),
        }
    }

    /// Calls the dispatcher for a step of `business` (`call`, on an
    /// instance and its store): on the instance the business's last step
    /// left idle, else a new one; the store carries `lazy_gate` and `step`
    /// while the call runs, and hands both back with the connection after
    /// it (`end_step`).
    pub(super) fn run_step<T>(
        &self,
        conn: crate::db::Connection,
        log_context: String,
        business: &str,
        lazy_gate: Option<crate::db::Gate>,
        step: Option<StepContext>,
        call: impl FnOnce(&Dispatcher, &mut Store<RequestState>) -> wasmtime::Result<T>,
    ) -> Ran<T> {
        let Some(pre) = &self.dispatcher else {
            return Ok((conn, None, Err(CallError::Trap("no dispatcher component in this build".into()))));
        };
        // The instance the business's last step left idle, renewed; else a
        // fresh store to instantiate in.
        let (mut store, warm) = match self.warm_steps.take(DISPATCHER, business) {
            Some(warm::Warm { mut store, instance, uses, .. }) => {
                store.data_mut().renew(conn, log_context);
                store.set_epoch_deadline(deadline_ticks(JOB_DEADLINE));
                crate::metrics::job_step_instance("warm");
                (store, Some((instance, uses)))
            }
            None => {
                crate::metrics::job_step_instance("fresh");
                (self.store(Some(conn), log_context, business, JOB_DEADLINE), None)
            }
        };
        store.data_mut().lazy = lazy_gate.map(LazyWrite::new);
        store.data_mut().step = step;
        let (instance, uses) = match warm {
            Some(warm) => warm,
            None => match pre.instantiate(&mut store) {
                Ok(instance) => (instance, 0),
                Err(e) => {
                    let e = classify_instantiate(e);
                    // Nothing of the step ran: the same connection (with
                    // the runner's transaction, if it opened one) and the
                    // same gate go to a fresh store.
                    if self.made_room(&e) {
                        let mut state = store.into_data();
                        let gate = state.lazy.take().map(LazyWrite::into_gate);
                        return Err((state.take_conn(), gate));
                    }
                    return Ok(self.end_step(store, None, business, Err(e)));
                }
            },
        };
        let result = call(&instance, &mut store).map_err(classify);
        let kept = result.is_ok().then_some((instance, uses));
        Ok(self.end_step(store, kept, business, result))
    }

    /// Ends a step: its connection and write parts back to the runner with
    /// `result`, and `kept` (the instance, when its call returned) idle for
    /// the business's next step.
    fn end_step<T>(&self, mut store: Store<RequestState>, kept: Option<(Dispatcher, u32)>, business: &str, result: Result<T, CallError>) -> StepEnd<T> {
        let state = store.data_mut();
        let conn = state.take_conn();
        let parts = state.lazy.take().and_then(LazyWrite::into_parts);
        state.step = None;
        if let Some((instance, uses)) = kept {
            self.warm_steps.put(DISPATCHER, business, warm::Warm::new(store, instance, uses + 1));
        }
        (conn, parts, result)
    }
}
