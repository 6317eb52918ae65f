//! The voice area's kinds (`components/voice/src/jobs/`), a call's status
//! (`calls.status`, which the area writes and the host's recording links
//! read) and the host's reads of a call: its job, its recording's source.

use serde::{Deserialize, Serialize};

use crate::{JobKind, JobOptions};
use switchboard_sql::{params, Mismatch, Sql};

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

/// A call's status (`VoiceCallStatus`), as stored in `calls.status` and
/// shown by the API. Steps, cancels and reads compare these, never the
/// strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    Queued,
    Ringing,
    Answered,
    /// An operator asked for the hang-up; the call's job carries it out.
    Cancelling,
    Completed,
    NoAnswer,
    Busy,
    Failed,
    Cancelled,
}

impl CallStatus {
    pub const ALL: [CallStatus; 9] = [Self::Queued, Self::Ringing, Self::Answered, Self::Cancelling, Self::Completed, Self::NoAnswer, Self::Busy, Self::Failed, Self::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Ringing => "ringing",
            Self::Answered => "answered",
            Self::Cancelling => "cancelling",
            Self::Completed => "completed",
            Self::NoAnswer => "no_answer",
            Self::Busy => "busy",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The stored text as a status; None for text no version ever wrote.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Ended: nothing changes the call any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::NoAnswer | Self::Busy | Self::Failed | Self::Cancelled)
    }
}

/// The terminal statuses as an SQL list (`'completed', 'no_answer', …`),
/// for statements that must leave an ended call alone.
pub fn terminal_sql_list() -> String {
    CallStatus::ALL.iter().filter(|s| s.is_terminal()).map(|s| format!("'{}'", s.as_str())).collect::<Vec<_>>().join(", ")
}

/// True when `status` (stored text) is terminal; unknown text is not.
pub fn is_terminal(status: &str) -> bool {
    CallStatus::parse(status).is_some_and(CallStatus::is_terminal)
}

/// True when `business` has a call `call_id`.
pub fn call_exists<S: Sql>(sql: &S, business: &str, call_id: &str) -> Result<bool, S::Error> {
    Ok(sql.query_one("SELECT 1 FROM calls WHERE business_id = ?1 AND id = ?2", &params![business, call_id])?.is_some())
}

/// The job (`voice.call`) of `business`'s call `call_id`, if the call is
/// there: what a carrier's callback or turn makes due.
pub fn call_job<S: Sql>(sql: &S, business: &str, call_id: &str) -> Result<Option<String>, S::Error>
where
    S::Error: From<Mismatch>,
{
    let job: Option<Option<String>> = sql.query_one_as("SELECT job_id FROM calls WHERE business_id = ?1 AND id = ?2", &params![business, call_id])?;
    Ok(job.flatten())
}

/// Where an ended call's recording comes from: the placement as the carrier
/// got it (`calls.placement_json`) and the carrier's memo. None unless the
/// call connected, ended and the carrier left a memo.
pub fn recording_source<S: Sql>(sql: &S, business: &str, call_id: &str) -> Result<Option<(String, String)>, S::Error>
where
    S::Error: From<Mismatch>,
{
    let ended = terminal_sql_list();
    sql.query_one_as(
        &format!(
            "SELECT placement_json, memo FROM calls \
             WHERE business_id = ?1 AND id = ?2 AND connected_ms > 0 AND memo IS NOT NULL AND placement_json IS NOT NULL AND status IN ({ended})"
        ),
        &params![business, call_id],
    )
}

#[cfg(test)]
mod call_tests {
    use super::*;

    #[test]
    fn terminal_statuses() {
        assert_eq!(terminal_sql_list(), "'completed', 'no_answer', 'busy', 'failed', 'cancelled'");
        assert!(is_terminal("busy") && !is_terminal("cancelling") && !is_terminal("nonsense"));
        assert!(CallStatus::ALL.iter().all(|s| CallStatus::parse(s.as_str()) == Some(*s)));
    }
}
