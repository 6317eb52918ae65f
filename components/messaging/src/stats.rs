//! The console's daily message figures (ours, operation 67): messages
//! received and sent per day of the period, and the period's outbound
//! messages by their delivery status now. One statement each, counted in
//! SQL over the business's index by time (migration 0035).

use switchboard_guest::db;
use switchboard_guest::{stats, HResult, Request, Success};

pub fn get(r: &Request) -> HResult<Success> {
    let p = stats::period(r)?;
    let biz = r.business_id.as_str();
    let days: Vec<(String, i64, i64)> = db::query_as(
        &format!(
            "{} , m AS (SELECT substr(created_at, 1, 10) AS day, sum(direction = 'inbound') AS i, sum(direction = 'outbound') AS o \
               FROM messages WHERE business_id = ?1 AND created_at >= ?2 GROUP BY 1) \
             SELECT d.day, coalesce(m.i, 0), coalesce(m.o, 0) FROM d LEFT JOIN m USING (day) ORDER BY d.day",
            stats::days_cte(2, 3)
        ),
        &[biz.into(), p.from.as_str().into(), p.to.as_str().into()],
    )?;
    let outcomes: Vec<(String, i64)> = db::query_as(
        "SELECT status, count(*) FROM messages WHERE business_id = ?1 AND created_at >= ?2 AND direction = 'outbound' GROUP BY status ORDER BY count(*) DESC, status",
        &[biz.into(), p.from.as_str().into()],
    )?;
    switchboard_guest::ok(&serde_json::json!({
        "from": p.from, "to": p.to,
        "days": days.iter().map(|(date, inbound, outbound)| serde_json::json!({"date": date, "inbound": inbound, "outbound": outbound})).collect::<Vec<_>>(),
        "outcomes": outcomes.iter().map(|(status, count)| serde_json::json!({"status": status, "count": count})).collect::<Vec<_>>(),
    }))
}
