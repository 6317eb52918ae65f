//! Before the carrier has the call: `none` leases a line, `placing` places
//! the call (at most once per attempt, under its effect key), `unknown`
//! asks the carrier whether it has the call under our id. Once it does, the
//! call is billed at the price of that moment and its progress applied
//! (`progress.rs`).

use super::*;

/// `none` → `placing` once a line is free.
pub(super) fn lease(job: &Job, c: &Call) -> Result<Outcome, Failure> {
    let leased = db::execute(
        "UPDATE calls SET holds_line = 1, carrier_state = 'placing' \
         WHERE business_id = ?1 AND id = ?2 AND carrier_state = 'none' AND status = 'queued' \
           AND (SELECT COUNT(*) FROM calls WHERE business_id = ?1 AND holds_line = 1) \
               < IFNULL((SELECT lines FROM voice_accounts WHERE business_id = ?1), ?3)",
        &params![&job.business_id, &c.id, billing::DEFAULT_LINES],
    )?;
    if leased == 1 {
        // The request time is read only now, after the line is ours: a
        // step's first write may wait (for the write gate, or the primary's
        // lock at a replica) while another call ends and frees the line,
        // and a time read before that wait would date this call's ringing
        // before that call's end.
        db::execute("UPDATE calls SET requested_at_ms = IFNULL(requested_at_ms, ?3) WHERE business_id = ?1 AND id = ?2", &params![&job.business_id, &c.id, clock::now_ms()])?;
        return Ok(again(0, job));
    }
    // Every line is taken: the end of another call wakes this one; the poll
    // is the safety net (`wake.rs`).
    db::execute("UPDATE calls SET line_waits = line_waits + 1 WHERE business_id = ?1 AND id = ?2", &params![&job.business_id, &c.id])?;
    Ok(again(wake::line_poll_ms()?, job))
}

fn set_state(biz: &str, c: &Call, state: CarrierState, placements: i64, memo: Option<&str>) -> Result<(), Failure> {
    db::execute("UPDATE calls SET carrier_state = ?3, placements = ?4, memo = IFNULL(?5, memo) WHERE business_id = ?1 AND id = ?2", &params![biz, &c.id, state.as_str(), placements, memo])?;
    Ok(())
}

/// The carrier has the call: it is billed at the price active now (spec:
/// "the business's active Voice price"), not the one of its start, and the
/// placement it got is kept for its recording (`placement_json`).
fn placed(biz: &str, c: &mut Call) -> Result<(), Failure> {
    (c.price, c.reserved) = billing::price_at_placement(biz, &c.id, c.max_duration_s, c.reserved)?;
    db::execute("UPDATE calls SET placement_json = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, &c.id, placement::to_json(&placement::of(c))])?;
    Ok(())
}

/// `placing`: one placement attempt, made at most once.
pub(super) fn place(job: &Job, mut c: Call) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    let n = c.placements + 1;
    match jobs::begin_effect(&format!("place.{n}")).map_err(db::store_failure)? {
        EffectStart::Fresh => {}
        // An earlier step began this placement and never recorded how it
        // went: find out from the carrier instead of placing again.
        EffectStart::StartedBefore => {
            set_state(biz, &c, CarrierState::Unknown, n, None)?;
            return Ok(again(0, job));
        }
        EffectStart::Superseded => return Ok(Outcome::Dead("superseded: another node runs this call".into())),
    }
    match carrier::place(&placement::of(&c)) {
        Ok(progress) => {
            set_state(biz, &c, CarrierState::Placed, n, Some(&progress.memo))?;
            placed(biz, &mut c)?;
            c.carrier_state = CarrierState::Placed;
            c.placements = n;
            apply_progress(job, c, progress)
        }
        Err(e) if e.code == "placement_timeout" => {
            set_state(biz, &c, CarrierState::Unknown, n, None)?;
            Ok(again(200, job))
        }
        Err(e) if e.retryable => {
            set_state(biz, &c, CarrierState::Placing, n, None)?;
            if c.status == CallStatus::Cancelling {
                finish_unplaced(biz, &c, CallStatus::Cancelled, "operator", "operator_cancelled")
            } else if n >= MAX_PLACEMENTS {
                finish_unplaced(biz, &c, CallStatus::Failed, "provider", "carrier_unavailable")
            } else {
                log::log(log::Level::Warn, &format!("call {}: placement {n} failed ({}); retrying", c.id, e.code));
                Ok(again(placement_retry_ms(n), job))
            }
        }
        Err(e) => {
            set_state(biz, &c, CarrierState::Placing, n, None)?;
            finish_unplaced(biz, &c, CallStatus::Failed, "provider", &format!("carrier_refused_{}", safe_code(&e.code)))
        }
    }
}

/// A carrier's error code as part of an `endReason` (short, `[a-z0-9_]`).
fn safe_code(code: &str) -> String {
    code.chars().take(48).map(|ch| if ch.is_ascii_alphanumeric() { ch.to_ascii_lowercase() } else { '_' }).collect()
}

/// `unknown`: does the carrier have the call under our id?
pub(super) fn reconcile(job: &Job, mut c: Call) -> Result<Outcome, Failure> {
    let biz = job.business_id.as_str();
    match carrier::poll(&placement::of(&c), None) {
        Ok(progress) => {
            set_state(biz, &c, CarrierState::Placed, c.placements, Some(&progress.memo))?;
            placed(biz, &mut c)?;
            c.carrier_state = CarrierState::Placed;
            apply_progress(job, c, progress)
        }
        Err(e) if e.code == "unknown_call" => {
            if c.status == CallStatus::Cancelling {
                return finish_unplaced(biz, &c, CallStatus::Cancelled, "operator", "operator_cancelled");
            }
            if c.placements >= MAX_PLACEMENTS {
                return finish_unplaced(biz, &c, CallStatus::Failed, "provider", "carrier_unavailable");
            }
            // Never placed: the next attempt places it (under a new effect key).
            set_state(biz, &c, CarrierState::Placing, c.placements, None)?;
            Ok(again(placement_retry_ms(c.placements), job))
        }
        Err(e) if e.retryable && job.attempt < MAX_ATTEMPTS => Ok(retry(job.attempt, format!("carrier: {}", e.code))),
        Err(_) => finish_unplaced(biz, &c, CallStatus::Failed, "provider", "carrier_unreachable"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_backoff() {
        assert_eq!(placement_retry_ms(1), 1000);
        assert_eq!(placement_retry_ms(3), 4000);
        assert_eq!(safe_code("Carrier-Down!"), "carrier_down_");
    }
}
