//! The job rows the host writes itself: the sandbox's and a provider's
//! inbound messages and photoapp signals (`switchboard-admin`), a pushed
//! status's delivery wake-up (`host/src/provider_events.rs`) and the
//! embeddings backfill (`switchboard-runtime`'s `knowledge`). Each is a typed
//! kind of `switchboard-job-kinds`, the crate the areas declare and run their
//! kinds with, so the host never spells a kind or builds a payload by hand;
//! the row is written by the same statement as a component's enqueue
//! (`switchboard_gateway::storage::enqueue_job`), with the kind's options.

use anyhow::Result;
use switchboard_gateway::storage::{enqueue_job, NewJob};
use switchboard_job_kinds::{JobKind, JobOptions};

use crate::db::Connection;

/// Writes `job` for `business` on `c` (inside the caller's transaction when
/// it has one): due now plus its kind's delay, with its kind's lane and
/// calls-out flag. Returns the job's id.
pub fn enqueue<J: JobKind>(c: &Connection, business: &str, job: &J) -> Result<String> {
    let (kind, payload_json) = job.to_row();
    let JobOptions { calls_out, lane, delay_ms } = job.options();
    let id = uuid::Uuid::now_v7().to_string();
    let row = NewJob { id: id.clone(), kind, business_id: business.to_string(), payload_json, calls_out, lane, delay_ms };
    enqueue_job(c, row, switchboard_ops::clock::now_ms()).map_err(|e| anyhow::anyhow!("enqueuing a job: {e}"))?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use switchboard_job_kinds::messaging::{Inbound, MessageRef, MessagingJob};

    use crate::db::{params, query_one_as, Db};

    #[test]
    fn a_typed_job_is_written_with_its_kinds_options() {
        let dir = std::env::temp_dir().join(format!("switchboard-jobs-test-{}", uuid::Uuid::new_v4()));
        let db = Db::open(&dir).expect("open");
        let c = db.conn().expect("conn");
        let deliver = super::enqueue(&c, "b1", &MessagingJob::Deliver(MessageRef { message_id: "m1".into() })).expect("enqueue");
        let inbound = Inbound { phone_number_id: "pn".into(), from: "+14155550123".into(), name: None, text: "hi".into(), provider_message_id: "p1".into() };
        let inbound = super::enqueue(&c, "b1", &MessagingJob::Inbound(inbound)).expect("enqueue");
        type Row = (String, String, String, bool, Option<String>, String, bool);
        let row = |id: &str| -> Row { query_one_as(&c, "SELECT kind, business_id, payload, calls_out, lane, state, due_at_ms = created_at_ms FROM jobs WHERE id = ?1", params![id]).unwrap().unwrap() };
        let s = |s: &str| s.to_string();
        assert_eq!(row(&deliver), (s("messaging.deliver"), s("b1"), s(r#"{"messageId":"m1"}"#), true, Some(s("message:m1")), s("pending"), true));
        let payload = r#"{"phoneNumberId":"pn","from":"+14155550123","name":null,"text":"hi","providerMessageId":"p1"}"#;
        assert_eq!(row(&inbound), (s("messaging.inbound"), s("b1"), s(payload), false, None, s("pending"), true));
        drop(c);
        drop(db);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
