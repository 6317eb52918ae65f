//! The placement of a call: what the carrier is asked with, built here
//! once from the call's row. The step that finds the carrier has the call
//! stores it (`calls.placement_json`, [`to_json`]); the recording links of
//! the host read it back from there (host/src/recordings.rs) instead of
//! building it again.

use super::*;
use switchboard_guest::carrier::{Placement, VoiceProfile};

/// The call's placement, from its destination, caller line and voice settings.
pub(super) fn of(c: &Call) -> Placement {
    let s = &c.settings;
    let text = |k: &str| s.get(k).and_then(Value::as_str).map(String::from);
    Placement {
        call_id: c.id.clone(),
        destination: c.callee.clone(),
        caller_number: c.caller.clone(),
        voice: VoiceProfile {
            live_voice_id: text("liveVoiceId"),
            language: text("language"),
            agent_gender: text("agentGender"),
            background_noise_key: text("backgroundNoiseKey"),
            background_noise_level_percent: s.get("backgroundNoiseLevelPercent").and_then(Value::as_u64).map(|n| n.min(u64::from(u32::MAX)) as u32),
        },
        max_duration_seconds: c.max_duration_s.clamp(1, i64::from(u32::MAX)) as u32,
        requested_at_ms: c.requested_at_ms.unwrap_or_else(clock::now_ms),
    }
}

/// The placement as stored: the WIT record's fields by their names.
pub(super) fn to_json(p: &Placement) -> String {
    let v = &p.voice;
    json!({
        "call_id": p.call_id, "destination": p.destination, "caller_number": p.caller_number,
        "voice": {"live_voice_id": v.live_voice_id, "language": v.language, "agent_gender": v.agent_gender,
                  "background_noise_key": v.background_noise_key, "background_noise_level_percent": v.background_noise_level_percent},
        "max_duration_seconds": p.max_duration_seconds, "requested_at_ms": p.requested_at_ms,
    })
    .to_string()
}
