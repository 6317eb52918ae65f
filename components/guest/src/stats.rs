//! The period of the daily figures (operations 67-69, ours): `days`
//! calendar days in UTC ending today, the same for every area that counts.

use crate::db;
use crate::{fail, params, req, Failure, Request};

/// The period a request asks for.
pub struct Period {
    /// The first and last day, YYYY-MM-DD.
    pub from: String,
    pub to: String,
    /// The lowest uuid v7 of the first day (a time-ordered id's first 48
    /// bits are its millisecond): ids of the period are at least this.
    pub first_id: String,
}

/// Query parameter `days`, 1 to 90 (default 14; the gateway checks the
/// range, this refuses anything else again for a direct caller).
pub fn period(r: &Request) -> Result<Period, Failure> {
    let days: i64 = match req::query_nonempty(r, "days") {
        None => 14,
        Some(v) => v.parse().ok().filter(|n| (1..=90).contains(n)).ok_or_else(|| fail::validation("invalid_query_parameter", "query parameter `days` must be an integer from 1 to 90"))?,
    };
    let (from, to, ms) =
        db::query_one_as::<(String, String, i64)>("SELECT date(?1, ?2), date(?1), CAST(strftime('%s', date(?1, ?2)) AS INTEGER) * 1000", &params![crate::now(), format!("-{} days", days - 1)])?
            .ok_or_else(|| fail::internal("internal_error", "the period could not be computed"))?;
    let ms = ms.max(0) as u64;
    Ok(Period { from, to, first_id: format!("{:08x}-{:04x}-0000-0000-000000000000", ms >> 16, ms & 0xffff) })
}

/// The days of the period as a recursive CTE named `d(day)`, for statements
/// that LEFT JOIN their counts to it (every day present, zeros included):
/// `?{from}` and `?{to}` are the placeholders holding the first and last day.
pub fn days_cte(from: usize, to: usize) -> String {
    format!("WITH RECURSIVE d(day) AS (SELECT ?{from} UNION ALL SELECT date(day, '+1 day') FROM d WHERE day < ?{to})")
}
