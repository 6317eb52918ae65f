//! The console's daily voice and credit figures (ours, operations 68 and
//! 69): calls per day of the period with the period's calls by status, and
//! credits granted and charged per day with the balance at each day's end.
//! Calls and ledger rows have time-ordered ids (uuid v7), so a period is a
//! range of the business's primary key or ledger index.

use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{stats, HResult, Request, Success};

pub fn calls(r: &Request) -> HResult<Success> {
    let p = stats::period(r)?;
    let biz = r.business_id.as_str();
    let days = db::query(
        &format!(
            "{} , c AS (SELECT substr(created_at, 1, 10) AS day, count(*) AS n, sum(status = 'completed') AS done, sum(connected_ms) / 1000 AS secs, sum(charged) AS charged \
               FROM calls WHERE business_id = ?1 AND id >= ?4 GROUP BY 1) \
             SELECT d.day, coalesce(c.n, 0), coalesce(c.done, 0), coalesce(c.secs, 0), coalesce(c.charged, 0) FROM d LEFT JOIN c USING (day) ORDER BY d.day",
            stats::days_cte(2, 3)
        ),
        &[biz.into(), p.from.as_str().into(), p.to.as_str().into(), p.first_id.as_str().into()],
    )?;
    let outcomes = db::query("SELECT status, count(*) FROM calls WHERE business_id = ?1 AND id >= ?2 GROUP BY status ORDER BY count(*) DESC, status", &[biz.into(), p.first_id.as_str().into()])?;
    switchboard_guest::ok(&serde_json::json!({
        "from": p.from, "to": p.to,
        "days": days.iter().map(|d| serde_json::json!({
            "date": d.text(0), "calls": d.int(1), "completed": d.int(2), "connectedSeconds": d.int(3), "chargedMicrocredits": d.int(4),
        })).collect::<Vec<_>>(),
        "outcomes": outcomes.iter().map(|o| serde_json::json!({"status": o.text(0), "count": o.int(1)})).collect::<Vec<_>>(),
    }))
}

pub fn credits(r: &Request) -> HResult<Success> {
    let p = stats::period(r)?;
    let biz = r.business_id.as_str();
    // Grants minus charges before the period: where the balance starts.
    let before = db::query_one(
        "SELECT coalesce(sum(CASE kind WHEN 'grant' THEN amount WHEN 'charge' THEN -amount ELSE 0 END), 0) FROM credit_ledger WHERE business_id = ?1 AND id < ?2",
        &[biz.into(), p.first_id.as_str().into()],
    )?
    .map_or(0, |row| row.int(0));
    let days = db::query(
        &format!(
            "{} , l AS (SELECT substr(created_at, 1, 10) AS day, sum(CASE kind WHEN 'grant' THEN amount ELSE 0 END) AS granted, \
                      sum(CASE kind WHEN 'charge' THEN amount ELSE 0 END) AS charged \
               FROM credit_ledger WHERE business_id = ?1 AND id >= ?4 GROUP BY 1) \
             SELECT d.day, coalesce(l.granted, 0), coalesce(l.charged, 0) FROM d LEFT JOIN l USING (day) ORDER BY d.day",
            stats::days_cte(2, 3)
        ),
        &[biz.into(), p.from.as_str().into(), p.to.as_str().into(), p.first_id.as_str().into()],
    )?;
    let mut balance = before;
    let days: Vec<_> = days
        .iter()
        .map(|d| {
            let (granted, charged) = (d.int(1), d.int(2));
            balance += granted - charged;
            serde_json::json!({"date": d.text(0), "grantedMicrocredits": granted, "chargedMicrocredits": charged, "balanceMicrocredits": balance})
        })
        .collect();
    switchboard_guest::ok(&serde_json::json!({"from": p.from, "to": p.to, "days": days}))
}
