//! A call waiting for a line is woken when one frees (issue 38). The step
//! that ends a call, and the cancel of a waiting call (it may have been the
//! one woken), bring the `voice.call` job of the business's oldest waiting
//! call forward to now, in their own transaction, while the business has a
//! free line; the runner's next round (at once: a step that calls out rings
//! it when it ends) places that call. It is the same move as a pushed
//! message status's delivery wake-up in the host (`provider_events.rs`):
//! a pending job's due time, never its state or lease.
//!
//! The poll of a waiting call ([`line_poll_ms`], `serve
//! --voice-line-poll-ms`) stays as the safety net: lines an operator adds,
//! a woken call that a newly started call beat to the line and which then
//! waits for the next end, a call started before its job id was kept.

use super::*;

/// The pause of a call waiting for a line until it asks again, unless a
/// line frees first (`serve --voice-line-poll-ms`).
pub const LINE_POLL_MS: u64 = 5_000;

/// Waiting calls looked at, oldest first. When that many are all due or
/// running already, they compete for the line themselves: none is woken.
const CANDIDATES: i64 = 32;

/// The safety-net poll, as `serve` stored it in `runtime_settings`.
pub fn line_poll_ms() -> Result<u64, Failure> {
    Ok(db::query_one_as::<String>("SELECT value FROM runtime_settings WHERE name = 'voice_line_poll_ms'", &params![])?.and_then(|v| v.parse().ok()).unwrap_or(LINE_POLL_MS))
}

/// Makes the job of the oldest waiting call of `biz` whose job is pending
/// and not yet due (one already due or running will try the line anyway)
/// due now, if the business has a free line. One line freed, one call woken.
pub fn next_waiting(biz: &str) -> Result<(), Failure> {
    db::execute(
        "UPDATE jobs SET due_at_ms = ?3 WHERE id = ( \
           SELECT j.id FROM (SELECT id, job_id FROM calls INDEXED BY calls_waiting \
                             WHERE business_id = ?1 AND status = 'queued' AND carrier_state = 'none' ORDER BY id LIMIT ?4) w \
           JOIN jobs j ON j.id = w.job_id \
           WHERE j.state = 'pending' AND j.due_at_ms > ?3 ORDER BY w.id LIMIT 1) \
         AND (SELECT COUNT(*) FROM calls WHERE business_id = ?1 AND holds_line = 1) \
             < IFNULL((SELECT lines FROM voice_accounts WHERE business_id = ?1), ?2)",
        &params![biz, billing::DEFAULT_LINES, clock::now_ms(), CANDIDATES],
    )?;
    Ok(())
}
