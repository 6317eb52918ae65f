//! The console's daily voice and credit figures (ours, operations 68 and
//! 69): calls per day of the period with the period's calls by status, and
//! credits granted and charged per day with the balance at each day's end.
//! Calls and ledger rows have time-ordered ids (uuid v7), so a period is a
//! range of the business's primary key or ledger index.

use switchboard_guest::db;
use switchboard_guest::{params, stats, HResult, Request, Success};

pub fn calls(r: &Request) -> HResult<Success> {
    let p = stats::period(r)?;
    let biz = r.business_id.as_str();
    let days: Vec<(String, i64, i64, i64, i64)> = db::query_as(
        &format!(
            "{} , c AS (SELECT substr(created_at, 1, 10) AS day, count(*) AS n, sum(status = 'completed') AS done, sum(connected_ms) / 1000 AS secs, sum(charged) AS charged \
               FROM calls WHERE business_id = ?1 AND id >= ?4 GROUP BY 1) \
             SELECT d.day, coalesce(c.n, 0), coalesce(c.done, 0), coalesce(c.secs, 0), coalesce(c.charged, 0) FROM d LEFT JOIN c USING (day) ORDER BY d.day",
            stats::days_cte(2, 3)
        ),
        &params![biz, &p.from, &p.to, &p.first_id],
    )?;
    let outcomes: Vec<(String, i64)> =
        db::query_as("SELECT status, count(*) FROM calls WHERE business_id = ?1 AND id >= ?2 GROUP BY status ORDER BY count(*) DESC, status", &params![biz, &p.first_id])?;
    switchboard_guest::ok(&serde_json::json!({
        "from": p.from, "to": p.to,
        "days": days.iter().map(|(date, calls, completed, seconds, charged)| serde_json::json!({
            "date": date, "calls": calls, "completed": completed, "connectedSeconds": seconds, "chargedMicrocredits": charged,
        })).collect::<Vec<_>>(),
        "outcomes": outcomes.iter().map(|(status, count)| serde_json::json!({"status": status, "count": count})).collect::<Vec<_>>(),
    }))
}

pub fn credits(r: &Request) -> HResult<Success> {
    let p = stats::period(r)?;
    let biz = r.business_id.as_str();
    // Grants minus charges before the period: where the balance starts.
    let before = db::query_one_as::<i64>(
        "SELECT coalesce(sum(CASE kind WHEN 'grant' THEN amount WHEN 'charge' THEN -amount ELSE 0 END), 0) FROM credit_ledger WHERE business_id = ?1 AND id < ?2",
        &params![biz, &p.first_id],
    )?
    .unwrap_or(0);
    let days: Vec<(String, i64, i64)> = db::query_as(
        &format!(
            "{} , l AS (SELECT substr(created_at, 1, 10) AS day, sum(CASE kind WHEN 'grant' THEN amount ELSE 0 END) AS granted, \
                      sum(CASE kind WHEN 'charge' THEN amount ELSE 0 END) AS charged \
               FROM credit_ledger WHERE business_id = ?1 AND id >= ?4 GROUP BY 1) \
             SELECT d.day, coalesce(l.granted, 0), coalesce(l.charged, 0) FROM d LEFT JOIN l USING (day) ORDER BY d.day",
            stats::days_cte(2, 3)
        ),
        &params![biz, &p.from, &p.to, &p.first_id],
    )?;
    let mut balance = before;
    let days: Vec<_> = days
        .iter()
        .map(|(date, granted, charged)| {
            balance += granted - charged;
            serde_json::json!({"date": date, "grantedMicrocredits": granted, "chargedMicrocredits": charged, "balanceMicrocredits": balance})
        })
        .collect();
    switchboard_guest::ok(&serde_json::json!({"from": p.from, "to": p.to, "days": days}))
}
