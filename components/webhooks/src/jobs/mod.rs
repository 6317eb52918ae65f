//! The job kinds of the webhooks area and [`run`], through which the
//! dispatcher runs them. The kinds are declared once, in the shared library
//! ([`WebhooksJob`], `switchboard_guest::events`): every area enqueues them
//! when it emits an event.

pub mod deliver;

use switchboard_guest::events::WebhooksJob;
use switchboard_guest::job::AreaJob;
use switchboard_guest::job_types::{Job, Outcome};

/// One step of a `webhooks.*` job.
pub fn run(job: &Job) -> Outcome {
    match WebhooksJob::from_job(job) {
        Ok(WebhooksJob::Deliver(d)) => deliver::run(job, d),
        Err(dead) => dead,
    }
}
