//! The job kinds of the webhooks area and [`run`], through which the
//! dispatcher runs them. The kinds are declared once, in the shared library
//! ([`WebhooksJob`], `switchboard_guest::events`): every area enqueues them
//! when it emits an event.

pub mod deliver;

use switchboard_guest::events::WebhooksJob;
use switchboard_guest::job::AreaJob;
use switchboard_guest::job_types::{Job, Outcome};

/// The kinds whose jobs the runner may hand over several at a time
/// ([`run_batch`]): deliveries to different subscriptions, their POSTs sent
/// together.
pub const BATCHED_KINDS: &[&str] = &["webhooks.deliver"];

/// One step of a `webhooks.*` job.
pub fn run(job: &Job) -> Outcome {
    match WebhooksJob::from_job(job) {
        Ok(WebhooksJob::Deliver(d)) => deliver::run(job, d),
        Err(dead) => dead,
    }
}

/// Steps of several `webhooks.*` jobs at once (one business's, one lane
/// each): every delivery answered as [`run`] would answer it alone, their
/// POSTs sent together ([`deliver::run_many`]).
pub fn run_batch(jobs: &[Job]) -> Vec<Outcome> {
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(jobs.len());
    let mut deliveries = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        match WebhooksJob::from_job(job) {
            Ok(WebhooksJob::Deliver(d)) => {
                outcomes.push(None);
                deliveries.push((i, d));
            }
            Err(dead) => outcomes.push(Some(dead)),
        }
    }
    let (at, deliveries): (Vec<usize>, Vec<(&Job, _)>) = deliveries.into_iter().map(|(i, d)| (i, (&jobs[i], d))).unzip();
    for (i, outcome) in at.into_iter().zip(deliver::run_many(deliveries)) {
        outcomes[i] = Some(outcome);
    }
    outcomes.into_iter().map(|o| o.expect("every job answered")).collect()
}
