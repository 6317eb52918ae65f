//! The voice area's kinds (`components/voice/src/jobs/`).

use serde::{Deserialize, Serialize};

use crate::{JobKind, JobOptions};

/// Every job kind of the voice area: the serde name is the kind, the
/// content the payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "payload")]
pub enum VoiceJob {
    /// One call from its start to its end: a line, the carrier, the
    /// conversation, the charge (calls the `carrier` and `ai` imports).
    #[serde(rename = "voice.call")]
    Call(CallRef),
}

impl JobKind for VoiceJob {
    fn options(&self) -> JobOptions {
        JobOptions { calls_out: true, lane: None, delay_ms: 0 }
    }
}

/// The payload of a job about one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallRef {
    pub call_id: String,
}
