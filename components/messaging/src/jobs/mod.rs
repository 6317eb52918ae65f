//! [`run`], through which the dispatcher runs the messaging area's jobs.
//! Their kinds ([`MessagingJob`]), payloads and options are declared in
//! `switchboard-job-kinds` (`components/job-kinds/src/messaging.rs`): the
//! host enqueues some of them too (inbound messages and photoapp signals,
//! a pushed status's delivery wake-up).

pub mod autoreply;
pub mod comment_reply;
pub mod deliver;
pub mod inbound;
pub mod photoapp_inbound;
pub mod photoapp_signal;
pub mod test_reply;

use switchboard_guest::job::AreaJob;
use switchboard_guest::job_kinds::messaging::MessagingJob;
use switchboard_guest::job_types::{Job, Outcome};

/// One step of a `messaging.*` job.
pub fn run(job: &Job) -> Outcome {
    match MessagingJob::from_job(job) {
        Ok(MessagingJob::Inbound(p)) => inbound::run(job, p),
        Ok(MessagingJob::PhotoappInbound(p)) => photoapp_inbound::run(job, p),
        Ok(MessagingJob::PhotoappReaction(p)) => photoapp_signal::run_reaction(job, p),
        Ok(MessagingJob::PhotoappReferral(p)) => photoapp_signal::run_referral(job, p),
        Ok(MessagingJob::PhotoappComment(p)) => photoapp_signal::run_comment(job, p),
        Ok(MessagingJob::PhotoappCommentReply(c)) => comment_reply::run(job, &c.comment_id),
        Ok(MessagingJob::Autoreply(m)) => autoreply::run(job, &m.message_id),
        Ok(MessagingJob::Deliver(m)) => deliver::run(job, &m.message_id),
        Ok(MessagingJob::AgentTestReply(t)) => test_reply::run(job, &t.turn_id),
        Err(dead) => dead,
    }
}
