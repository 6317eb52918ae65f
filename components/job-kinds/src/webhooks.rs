//! The webhooks area's kind, the event outbox (`webhooks.deliver`): every
//! area that emits an event enqueues it (`switchboard_guest::events::fan_out`),
//! the webhooks area runs it (`components/webhooks/src/jobs/deliver.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{JobKind, JobOptions};

/// The job kinds of the webhooks area.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum WebhooksJob {
    /// One signed POST of one event to one subscription, retried on the
    /// host's schedule; one job per (subscription, event).
    #[serde(rename = "webhooks.deliver")]
    Deliver(Delivery),
}

impl JobKind for WebhooksJob {
    fn options(&self) -> JobOptions {
        match self {
            // One subscription's deliveries run one at a time, oldest first.
            WebhooksJob::Deliver(d) => JobOptions { calls_out: true, lane: Some(format!("webhooks:{}", d.subscription_id)), delay_ms: 0 },
        }
    }
}

/// The outbox row of one event for one subscription: `payload` is the event
/// without `retryNumber` (each attempt adds it); `attempt` counts the
/// attempts made so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    #[serde(default)]
    pub subscription_id: String,
    #[serde(default)]
    pub event_id: String,
    #[serde(default)]
    pub attempt: u64,
    #[serde(default)]
    pub payload: Value,
    /// The `retryNumber` this delivery started at: 0, or, for a redelivery
    /// on demand, one past the event's last attempt. The retry schedule
    /// counts from here.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_attempt: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
