//! Every job kind, declared once: its name (the `jobs.kind` column), its
//! payload type (the `jobs.payload` JSON) and its options (whether a step
//! calls out, its lane, its delay). Each area's kinds are one serde enum
//! tagged `kind` with content `payload`, in this crate's module of that area:
//!
//! ```ignore
//! #[derive(Serialize, Deserialize)]
//! #[serde(tag = "kind", content = "payload")]
//! pub enum MessagingJob {
//!     #[serde(rename = "messaging.deliver")]
//!     Deliver(MessageRef),
//!     …
//! }
//! impl JobKind for MessagingJob {
//!     fn options(&self) -> JobOptions { … }
//! }
//! ```
//!
//! The serde `rename` of a variant is the kind, its content the payload, so
//! a kind can only be written with its own payload type and read back typed.
//! The areas enqueue and run these enums (`switchboard_guest::job`, each
//! area's `jobs::run`); the host writes the few rows it enqueues itself
//! (inbound messages, a pushed status's delivery wake-up, the embeddings
//! backfill) through `switchboard_storage::jobs::enqueue`, with the same
//! types. A stored row must keep running: a kind's name and its payload's
//! JSON never change shape (the tests below pin them).
//!
//! Beside the kinds, the few facts of an area's rows that the host needs to
//! find or serve an area's jobs, written once here for both: voice's call
//! statuses and a call's job ([`voice::CallStatus`], [`voice::call_job`],
//! [`voice::recording_source`]), and the message a provider's status is
//! about ([`messaging::outbound_by_provider_id`]). Their statements are
//! written against `switchboard_sql::Sql`, run in the caller's transaction.
//!
//! Never: WIT bindings or host calls (this crate builds natively for the
//! host and for wasm32-wasip2 for the areas, on serde alone), storage of
//! its own, or what a job does (the areas' `jobs/` modules run them).
//!
//! Entry point: [`JobKind`], implemented by [`messaging::MessagingJob`],
//! [`data_sources::DataSourcesJob`], [`webhooks::WebhooksJob`],
//! [`voice::VoiceJob`] and [`campaigns::CampaignsJob`].

pub mod campaigns;
pub mod data_sources;
pub mod messaging;
pub mod voice;
pub mod webhooks;

#[cfg(test)]
mod tests;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// Every kind's name, read off the areas' enums themselves (serde lists the
/// variants a tagged enum knows when it refuses one it does not), for what
/// names every kind up front: the host's job metrics, at 0 from the start.
pub fn all_kinds() -> Vec<String> {
    fn of<J: JobKind>() -> Vec<String> {
        // "unknown variant ``, expected one of `a`, `b`" (or "expected `a`").
        let refused = J::from_row("", "null").err().map(|e| e.to_string()).unwrap_or_default();
        let listed = refused.split_once("expected").map(|(_, l)| l).unwrap_or_default();
        listed.split('`').skip(1).step_by(2).map(str::to_string).collect()
    }
    [of::<messaging::MessagingJob>(), of::<data_sources::DataSourcesJob>(), of::<webhooks::WebhooksJob>(), of::<voice::VoiceJob>(), of::<campaigns::CampaignsJob>()].concat()
}

/// Makes the pending job of `lane` due by `now_ms` (never later than it
/// was); how many were woken (0 when the lane has none pending). A job
/// that is running or done is left alone: its next step reads what
/// changed. The one statement for the host's wake-ups (crates/jobs) and an
/// area's (a campaign call's end wakes its iteration's dispatch).
pub fn wake_lane<S: switchboard_sql::Statements>(s: &S, lane: &str, now_ms: i64) -> Result<u64, S::Error> {
    s.execute("UPDATE jobs SET due_at_ms = MIN(due_at_ms, ?2) WHERE lane = ?1 AND state = 'pending'", &[lane.into(), now_ms.into()])
}

/// How the runner treats a job's steps; each kind declares its own
/// ([`JobKind::options`]). The guest library turns it into the `jobs`
/// import's options, the host's enqueue writes it into the row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobOptions {
    /// A step calls a provider or the network: the runner runs it without
    /// holding the write lock, and it writes after its call.
    pub calls_out: bool,
    /// Jobs of one lane run one at a time, oldest first.
    pub lane: Option<String>,
    /// Due this long after it is enqueued.
    pub delay_ms: u64,
}

/// The job kinds of one area: a serde enum tagged `kind` with content
/// `payload` (see the crate documentation).
pub trait JobKind: Serialize + DeserializeOwned {
    /// How the runner treats this job's steps.
    fn options(&self) -> JobOptions;

    /// The kind name and the payload JSON, as stored in the `jobs` row.
    fn to_row(&self) -> (String, String) {
        const SHAPE: &str = "a job kind must be an enum tagged `kind` with content `payload`";
        let Value::Object(mut tagged) = serde_json::to_value(self).expect("a job kind serialises") else { panic!("{SHAPE}") };
        let Some(Value::String(kind)) = tagged.shift_remove("kind") else { panic!("{SHAPE}") };
        let payload = tagged.shift_remove("payload").unwrap_or(Value::Null);
        (kind, payload.to_string())
    }

    /// The kind name (the `jobs.kind` column).
    fn kind(&self) -> String {
        self.to_row().0
    }

    /// The job a stored row holds, typed: an error when the kind is not one
    /// of this enum's or the payload is not its kind's.
    fn from_row(kind: &str, payload_json: &str) -> Result<Self, serde_json::Error> {
        let payload: Value = serde_json::from_str(payload_json)?;
        serde_json::from_value(json!({"kind": kind, "payload": payload}))
    }
}
