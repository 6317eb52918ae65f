//! How a stored call reads: the call summary (VoiceCallSummary) and the
//! transcript turns, each written once and used by the list, the report,
//! the transcript download and the contact's timeline.

use serde_json::{json, Map, Value};
use switchboard_guest::db;
use switchboard_guest::row_struct;
use switchboard_guest::{fail, params, Failure, HResult};
use switchboard_sql::{FromRow, Mismatch, Row};

/// The columns [`summary`] reads, in order (prefix `c.` is the calls table).
pub const SUMMARY_COLUMNS: &str = "c.id, c.status, c.agent_name, c.contact_id, c.contact_name, c.source, c.call_data_json, c.callee_number, \
     c.connected_ms, c.started_at, c.ended_at, c.created_at, c.charged, c.ended_by, c.end_reason, \
     EXISTS (SELECT 1 FROM call_turns t WHERE t.business_id = c.business_id AND t.call_id = c.id), c.recording_ext, \
     (SELECT k.name FROM campaigns k WHERE k.business_id = c.business_id AND k.id = c.campaign_id)";

row_struct! {
    /// A row of [`SUMMARY_COLUMNS`].
    pub struct SummaryRow {
        id: String,
        status: String,
        agent_name: String,
        contact_id: Option<String>,
        contact_name: Option<String>,
        source: String,
        call_data_json: String,
        callee_number: String,
        connected_ms: i64,
        started_at: Option<String>,
        ended_at: Option<String>,
        created_at: String,
        charged: i64,
        ended_by: Option<String>,
        end_reason: Option<String>,
        has_turns: bool,
        recording_ext: Option<String>,
        campaign_name: Option<String>,
    }
}

/// A call's status and the terminal ones, declared once beside the voice
/// job's kind (`switchboard_job_kinds::voice`), where the host's recording
/// links read them too.
pub use switchboard_guest::job_kinds::voice::{is_terminal, terminal_sql_list, CallStatus};

/// Where a call stands with the carrier (`calls.carrier_state`), which
/// decides what the call's next step does ([`crate::jobs::call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarrierState {
    /// Waiting for a line.
    None,
    /// A line is held; the call is to be placed.
    Placing,
    /// A placement timed out or was interrupted: the carrier may have it.
    Unknown,
    /// The carrier has the call.
    Placed,
}

impl CarrierState {
    pub const ALL: [CarrierState; 4] = [Self::None, Self::Placing, Self::Unknown, Self::Placed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Placing => "placing",
            Self::Unknown => "unknown",
            Self::Placed => "placed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// Why a call is to end, stored in `calls.end_intent` before the carrier
/// hears of it, so the end is classified by who asked ([`crate::jobs::call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndIntent {
    /// An operator's cancel (operation 43, a cancelled campaign iteration).
    Operator,
    /// The agent said goodbye (`end_call`).
    Agent,
    /// The customer stayed silent past the nudge.
    Silence,
    /// The call reached its maximum duration.
    MaxDuration,
}

impl EndIntent {
    pub const ALL: [EndIntent; 4] = [Self::Operator, Self::Agent, Self::Silence, Self::MaxDuration];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Agent => "agent",
            Self::Silence => "silence",
            Self::MaxDuration => "max_duration",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// Whole seconds of connected time, rounded up (so a duration's started
/// 20-second blocks are exactly what was charged).
pub fn duration_seconds(connected_ms: i64) -> i64 {
    (connected_ms.max(0) + 999) / 1000
}

/// Where a call came from, as `sourceName` shows it.
fn source_name(source: &str) -> &'static str {
    match source {
        "batch" => "Batch start",
        "campaign" => "Campaign",
        _ => "API",
    }
}

/// A row of [`SUMMARY_COLUMNS`] as a call summary.
pub fn summary(r: &SummaryRow) -> Value {
    let call_data: Map<String, Value> = serde_json::from_str(&r.call_data_json).unwrap_or_default();
    json!({
        "id": r.id,
        "status": r.status,
        "agentName": r.agent_name,
        "campaignName": r.campaign_name,
        "contactId": r.contact_id,
        "contactName": r.contact_name,
        "sourceName": source_name(&r.source),
        "callData": call_data,
        "calleeNumber": r.callee_number,
        "durationSeconds": duration_seconds(r.connected_ms),
        "startedAt": r.started_at,
        "endedAt": r.ended_at,
        "recordingAvailable": recording_file(r).is_some(),
        "transcriptAvailable": r.has_turns,
        "createdAt": r.created_at,
        "chargedMicrocredits": r.charged,
        "endedBy": r.ended_by,
        "endReason": r.end_reason,
    })
}

/// The recording's file name (`call-<id>.wav`), once the carrier has one
/// for the ended call; a safe name by construction (a uuid and a known
/// extension).
pub fn recording_file(r: &SummaryRow) -> Option<String> {
    let ext = r.recording_ext.as_deref().filter(|e| *e == "wav" || *e == "opus")?;
    is_terminal(&r.status).then(|| format!("call-{}.{ext}", r.id))
}

pub fn call_not_found(id: &str) -> Failure {
    fail::not_found("call_not_found", format!("call `{id}` not found"))
}

/// The summary row of one call of this business.
pub fn one(biz: &str, call_id: &str) -> HResult<SummaryRow> {
    db::query_one_as(&format!("SELECT {SUMMARY_COLUMNS} FROM calls c WHERE c.business_id = ?1 AND c.id = ?2"), &params![biz, call_id])?.ok_or_else(|| call_not_found(call_id))
}

/// One transcript turn.
pub struct Turn {
    pub speaker: String,
    pub text: String,
    pub created_at: String,
    pub offset_ms: Option<i64>,
    pub end_offset_ms: Option<i64>,
}

/// The canonical order of a call's turns: by their place in the call's
/// audio (a reply held back until the greeting had played comes after the
/// greeting even if the customer spoke over it), turns without one (an
/// utterance that never played) last, then in the order they were recorded.
const TURN_ORDER: &str = "ORDER BY audio_offset_ms IS NULL, audio_offset_ms, seq";

/// The call's canonical transcript, in order: all of it, or `limit` turns
/// after the first `skip` (a download's piece).
pub fn transcript(biz: &str, call_id: &str, page: Option<(i64, i64)>) -> Result<Vec<Turn>, Failure> {
    let window = page.map_or(String::new(), |(skip, limit)| format!(" LIMIT {limit} OFFSET {skip}"));
    db::query_as(
        &format!("SELECT speaker, text, created_at, audio_offset_ms, audio_end_offset_ms FROM call_turns WHERE business_id = ?1 AND call_id = ?2 {TURN_ORDER}{window}"),
        &params![biz, call_id],
    )
}

/// Read from `speaker, text, created_at, audio_offset_ms, audio_end_offset_ms`.
impl FromRow for Turn {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let (speaker, text, created_at, offset_ms, end_offset_ms) = FromRow::from_row(row)?;
        Ok(Turn { speaker, text, created_at, offset_ms, end_offset_ms })
    }
}

impl Turn {
    pub fn json(&self) -> Value {
        json!({
            "speaker": self.speaker,
            "text": self.text,
            "createdAt": self.created_at,
            "audioOffsetMs": self.offset_ms,
            "audioEndOffsetMs": self.end_offset_ms,
        })
    }

    /// One line of the downloadable transcript: `[mm:ss] Speaker: text`.
    pub fn line(&self) -> String {
        let at = self.offset_ms.map_or_else(|| "--:--".to_string(), |ms| format!("{:02}:{:02}", ms / 60_000, ms / 1000 % 60));
        let speaker = match self.speaker.as_str() {
            "customer" => "Customer",
            "assistant" => "Assistant",
            _ => "Human",
        };
        // One turn is one line, whatever the text holds.
        let text = self.text.replace(['\r', '\n'], " ");
        format!("[{at}] {speaker}: {text}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_intents_read_back() {
        for s in CallStatus::ALL {
            assert_eq!(CallStatus::parse(s.as_str()), Some(s));
        }
        for i in EndIntent::ALL {
            assert_eq!(EndIntent::parse(i.as_str()), Some(i));
        }
        for c in CarrierState::ALL {
            assert_eq!(CarrierState::parse(c.as_str()), Some(c));
        }
        assert_eq!(terminal_sql_list(), "'completed', 'no_answer', 'busy', 'failed', 'cancelled'");
        assert!(is_terminal("busy") && !is_terminal("cancelling") && !is_terminal("nonsense"));
    }

    #[test]
    fn durations_round_up_to_whole_seconds() {
        assert_eq!(duration_seconds(0), 0);
        assert_eq!(duration_seconds(1), 1);
        assert_eq!(duration_seconds(47_000), 47);
        assert_eq!(duration_seconds(47_001), 48);
    }

    #[test]
    fn transcript_lines() {
        let t = Turn { speaker: "customer".into(), text: "Hi\nthere".into(), created_at: String::new(), offset_ms: Some(65_400), end_offset_ms: None };
        assert_eq!(t.line(), "[01:05] Customer: Hi there\n");
        let t = Turn { speaker: "assistant".into(), text: "Hello".into(), created_at: String::new(), offset_ms: None, end_offset_ms: None };
        assert_eq!(t.line(), "[--:--] Assistant: Hello\n");
    }
}
