//! Claims: the fair pick of due jobs, leases with a new fence, and the
//! hand-off of a lane's next job to the worker that finished its last.

use super::*;

/// Claims up to `limit` due jobs of either kind (tests).
#[cfg(test)]
pub fn claim(db: &Db, node: &str, limit: i64) -> anyhow::Result<Vec<Claim>> {
    claim_fair(db, node, limit, limit, i64::MAX)
}

/// Picks the due jobs of one class (`calls_out` 0 or 1) fairly: at most one
/// per lane and none of a lane that has a live step, then round-robin
/// across businesses (every business's oldest job before anyone's second),
/// and no business past `?4` steps of the class at once. `?1` now, `?2` the
/// class, `?3` how many.
///
/// The candidates come from indexes holding only pending or leased jobs
/// (migration 0027): the oldest 2,000 due jobs without a lane, and the head
/// of each lane that has pending work and no live step, found by walking
/// the distinct lanes (`lanes`: one index seek per lane), so a deep backlog
/// in a busy lane is never scanned. A lane holds jobs of one kind, hence
/// one class. `INDEXED BY` because the planner's statistics do not know
/// these partial indexes are small.
///
/// Every parameter is written `+?N`: SQLite (built with STAT4, as libSQL
/// is) lets the values bound to a bare `?N` that meets an indexed column
/// or a `LIMIT` steer the plan, and so re-prepares the statement whenever
/// they change, which `now` does every round (`sqlite3Reprepare` was 6%
/// of the CPU of a delivery backlog). Behind a unary `+` the planner sees
/// an expression, not a value, and the cached statement is prepared once.
pub(crate) const PICK_FAIR: &str = "\
WITH RECURSIVE live_lanes AS (
    SELECT DISTINCT lane FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND lease_until_ms >= +?1 AND lane IS NOT NULL
), lanes(lane) AS (
    SELECT (SELECT lane FROM jobs INDEXED BY jobs_lane_ready WHERE state = 'pending' AND lane IS NOT NULL ORDER BY lane LIMIT 1)
    UNION ALL
    SELECT (SELECT j.lane FROM jobs j INDEXED BY jobs_lane_ready WHERE j.state = 'pending' AND j.lane IS NOT NULL AND j.lane > l.lane ORDER BY j.lane LIMIT 1)
    FROM lanes l WHERE l.lane IS NOT NULL
), heads AS (
    SELECT (SELECT j.id FROM jobs j INDEXED BY jobs_lane_ready WHERE j.state = 'pending' AND j.lane IS NOT NULL AND j.lane = l.lane ORDER BY j.due_at_ms, j.id LIMIT 1) AS id
    FROM lanes l WHERE l.lane IS NOT NULL AND l.lane NOT IN (SELECT lane FROM live_lanes)
), due AS (
    SELECT id, business_id, lane, due_at_ms FROM (
        SELECT * FROM (
            SELECT id, business_id, lane, due_at_ms FROM jobs INDEXED BY jobs_unlaned_ready
            WHERE state = 'pending' AND lane IS NULL AND calls_out = +?2 AND due_at_ms <= +?1 ORDER BY due_at_ms LIMIT 2000
        )
        UNION ALL
        SELECT j.id, j.business_id, j.lane, j.due_at_ms FROM heads h JOIN jobs j ON j.id = h.id WHERE j.calls_out = +?2 AND j.due_at_ms <= +?1
        UNION ALL
        SELECT id, business_id, lane, due_at_ms FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND calls_out = +?2 AND lease_until_ms < +?1
          AND (lane IS NULL OR lane NOT IN (SELECT lane FROM live_lanes))
    )
    ORDER BY due_at_ms LIMIT 2000
), lane_heads AS (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY IFNULL(lane, id) ORDER BY due_at_ms, id) AS lane_rank FROM due
), ranked AS (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY business_id ORDER BY due_at_ms, id) AS turn FROM lane_heads WHERE lane_rank = 1
), busy AS (
    SELECT business_id, COUNT(*) AS running FROM jobs INDEXED BY jobs_leased
    WHERE state = 'leased' AND lease_until_ms >= +?1 AND calls_out = +?2 GROUP BY business_id
)
SELECT r.id FROM ranked r LEFT JOIN busy b ON b.business_id = r.business_id
WHERE r.turn + IFNULL(b.running, 0) <= +?4
ORDER BY r.turn, r.due_at_ms, r.id LIMIT +?3";

/// Claims due jobs, giving each a new fence: up to `local` steps that do not
/// call out and `remote` that do, picked fairly (see `PICK_FAIR`; a business
/// runs at most `per_business` steps that call out at once).
pub fn claim_fair(db: &Db, node: &str, local: i64, remote: i64, per_business: i64) -> anyhow::Result<Vec<Claim>> {
    // The pick is a read, done without the write gate: a round that finds
    // nothing claimable (e.g. a backlog whose lane is busy) must not hold up
    // the steps that are completing.
    let now = crate::clock::now_ms();
    let mut ids = Vec::new();
    {
        let c = db.conn()?;
        for (class, limit, cap) in [(0i64, local, i64::MAX), (1, remote, per_business)] {
            if limit <= 0 {
                continue;
            }
            ids.extend(db::query_as::<String>(&c, PICK_FAIR, db::params![now, class, limit, cap])?);
        }
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let Some(mut gate) = db.background_gate(Duration::from_secs(5)) else { return Ok(Vec::new()) };
    gate.transaction(|c| {
        let mut claims = Vec::new();
        for id in ids {
            // Still claimable? (Only this leader claims, and a hand-off only
            // takes jobs of a lane that is running, which the pick left out.)
            let row = db::query_one_as(
                c,
                "SELECT id, kind, business_id, payload, attempts, fence, calls_out, lane FROM jobs WHERE id = ?1 \
                 AND ((state = 'pending' AND due_at_ms <= ?2) OR (state = 'leased' AND lease_until_ms < ?2))",
                db::params![id, now],
            )?;
            let Some(row) = row else { continue };
            claims.push(lease(c, row, node, now)?);
        }
        Ok(claims)
    })
}

/// A job row as a claim reads it: id, kind, business_id, payload,
/// attempts, fence, calls_out, lane.
pub(crate) type JobRow = (String, String, String, String, i64, i64, bool, Option<String>);

/// Leases the job of `row` to `node` with a new fence.
pub(crate) fn lease(c: &crate::db::Connection, row: JobRow, node: &str, now: i64) -> anyhow::Result<Claim> {
    let (id, kind, business_id, payload, attempts, fence, calls_out, lane) = row;
    let claim = Claim { id, kind, business_id, payload, attempts: attempts + 1, fence: fence + 1, calls_out, lane };
    db::execute(
        c,
        "UPDATE jobs SET state = 'leased', lease_owner = ?2, lease_until_ms = ?3, fence = ?4, attempts = ?5 WHERE id = ?1",
        db::params![&claim.id, node, now + JOB_LEASE.as_millis() as i64, claim.fence, claim.attempts],
    )?;
    Ok(claim)
}

/// Consecutive jobs of one lane a worker takes before its slot goes back to
/// the fair pick (see `run_one`'s hand-off).
pub const LANE_HANDOFFS: u32 = 64;

/// In the completing step's transaction: leases the next due job of the same
/// lane to the same worker (a backlog of one subscription drains without a
/// claim round per delivery; nobody else could run that lane meanwhile).
pub(crate) fn hand_off(c: &crate::db::Connection, lane: &str, node: &str) -> anyhow::Result<Option<Claim>> {
    let now = crate::clock::now_ms();
    let row = db::query_one_as(
        c,
        "SELECT id, kind, business_id, payload, attempts, fence, calls_out, lane FROM jobs INDEXED BY jobs_lane_ready \
         WHERE lane = +?1 AND lane IS NOT NULL AND state = 'pending' AND due_at_ms <= +?2 ORDER BY due_at_ms, id LIMIT 1",
        db::params![lane, now],
    )?;
    match row {
        Some(row) => Ok(Some(lease(c, row, node, now)?)),
        None => Ok(None),
    }
}
