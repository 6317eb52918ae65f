//! Rate limits of requests the edge runs at the primary, kept at the
//! primary so every edge instance (a fresh one per request) shares them.
//!
//! The same buckets a node keeps in memory (crates/ops/src/limits.rs): one per
//! API key (`SWITCHBOARD_RATE_LIMIT_KEY`, 100 a second) and one per
//! business (`SWITCHBOARD_RATE_LIMIT_BUSINESS`, 200 a second), bursts of
//! twice the rate, 0 turning one off; the same 429 envelope and
//! `RateLimit-*` headers (the gateway's `rate_limit`). Each bucket is one row of `edge_rate_limits`
//! holding its GCRA state (the theoretical arrival time, what `governor`
//! keeps in a node's memory), updated by one statement that also finds the
//! key: it travels in the pipeline of the request's first statement, so it
//! costs no round trip of its own. Only a live key takes a token. Time is
//! the primary's clock (`julianday('now')`), so edge clocks may differ.
//!
//! The table is the edge's own, made on first use (a request that finds it
//! missing is not limited and makes it after its answer). Requests the
//! edge forwards to its write node are limited there, by the node.

use std::time::Duration;
use switchboard_gateway::rate_limit::{self, Whose};
use switchboard_gateway::storage::Value;
use switchboard_gateway::Failure;
use switchboard_guest::{params, FromRow};

/// The table, made by the first request that finds it missing.
pub const TABLE: &str = "CREATE TABLE IF NOT EXISTS edge_rate_limits (bucket TEXT PRIMARY KEY, tat_us INTEGER NOT NULL, tau_us INTEGER NOT NULL, refused INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID";

/// The primary's clock in microseconds (constant within one statement).
const NOW: &str = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)";

#[derive(Clone, Copy, Debug)]
pub struct Rates {
    pub per_key: u32,
    pub per_business: u32,
}

impl Rates {
    /// From the environment (a node's defaults); `None` when both are off.
    pub fn from_env() -> Option<Rates> {
        let read = |name: &str, default: u32| std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default);
        let rates = Rates { per_key: read("SWITCHBOARD_RATE_LIMIT_KEY", 100), per_business: read("SWITCHBOARD_RATE_LIMIT_BUSINESS", 200) };
        (rates.per_key > 0 || rates.per_business > 0).then_some(rates)
    }

    /// The statement that takes a token from the key's and the business's
    /// buckets of the key behind `key_hash`, and its parameters. Its rows:
    /// bucket, tat_us, tau_us, refused, now_us.
    pub fn statement(&self, key_hash: &str) -> (String, Vec<Value>) {
        let mut arms = Vec::new();
        let mut params = params![key_hash];
        for (kind, column, rate) in [("key:", "id", self.per_key), ("business:", "business_id", self.per_business)] {
            if rate == 0 {
                continue;
            }
            let t = 1_000_000 / i64::from(rate);
            let burst = i64::from(rate_limit::burst(rate));
            params.push(t.max(1).into());
            params.push((t.max(1) * burst).into());
            let (tp, taup) = (params.len() - 1, params.len());
            arms.push(format!("SELECT '{kind}' || {column} AS bucket, ?{tp} AS t, ?{taup} AS tau FROM api_keys WHERE key_hash = ?1 AND revoked_at IS NULL"));
        }
        let sql = format!(
            "INSERT INTO edge_rate_limits (bucket, tat_us, tau_us, refused) SELECT bucket, {NOW} + t, tau, 0 FROM ({}) WHERE true \
             ON CONFLICT (bucket) DO UPDATE SET \
             refused = max(tat_us, {NOW}) + (excluded.tat_us - {NOW}) - {NOW} > excluded.tau_us, \
             tat_us = CASE WHEN max(tat_us, {NOW}) + (excluded.tat_us - {NOW}) - {NOW} > excluded.tau_us THEN tat_us ELSE max(tat_us, {NOW}) + (excluded.tat_us - {NOW}) END, \
             tau_us = excluded.tau_us \
             RETURNING bucket, tat_us, tau_us, refused, {NOW}",
            arms.join(" UNION ALL ")
        );
        (sql, params)
    }

    fn rate_of(&self, bucket: &str) -> u32 {
        if bucket.starts_with("key:") {
            self.per_key
        } else {
            self.per_business
        }
    }

    fn whose(bucket: &str) -> Whose {
        if bucket.starts_with("key:") {
            Whose::Key
        } else {
            Whose::Business
        }
    }

    /// What the statement's rows say: the answer's `RateLimit-*` headers
    /// (for the tighter bucket), or the 429.
    pub fn outcome(&self, rows: Vec<Vec<Value>>) -> Result<Vec<(&'static str, String)>, Failure> {
        let mut tightest: Option<(u32, u32)> = None;
        for row in rows {
            // The statement's RETURNING: bucket, tat_us, tau_us, refused, now.
            let Ok((bucket, tat, tau, refused, now)) = <(String, i64, i64, bool, i64)>::from_row(row) else { continue };
            let rate = self.rate_of(&bucket).max(1);
            let burst = rate_limit::burst(rate);
            let t = (1_000_000 / i64::from(rate)).max(1);
            if refused {
                // A token is back when the bucket's arrival time, one more
                // emission later, fits the burst window again.
                let wait = Duration::from_micros((tat + t - tau - now).max(0) as u64);
                return Err(rate_limit::refusal(Self::whose(&bucket), rate, wait));
            }
            let left = ((now + tau - tat) / t).clamp(0, i64::from(burst)) as u32;
            if tightest.is_none_or(|(_, l)| left < l) {
                tightest = Some((rate, left));
            }
        }
        Ok(tightest.map_or_else(Vec::new, |(rate, left)| rate_limit::headers(rate, left)))
    }
}

/// True when the statement failed because the table is not there yet.
pub fn table_missing(message: &str) -> bool {
    message.contains("no such table") && message.contains("edge_rate_limits")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bucket: &str, tat: i64, tau: i64, refused: i64, now: i64) -> Vec<Value> {
        vec![Value::Text(bucket.into()), Value::Integer(tat), Value::Integer(tau), Value::Integer(refused), Value::Integer(now)]
    }

    #[test]
    fn the_tighter_bucket_names_the_headers_and_an_empty_one_refuses() {
        let rates = Rates { per_key: 100, per_business: 5 };
        let now = 1_000_000_000;
        // The first request: 199 left of the key's 200, 9 of the business's 10.
        let ok = rates.outcome(vec![row("key:k", now + 10_000, 2_000_000, 0, now), row("business:b", now + 200_000, 2_000_000, 0, now)]).unwrap();
        assert_eq!(ok[0], ("RateLimit-Limit", "10".to_string()));
        assert_eq!(ok[1], ("RateLimit-Remaining", "9".to_string()));
        assert_eq!(ok[2], ("RateLimit-Reset", "1".to_string()));
        let refused = rates.outcome(vec![row("business:b", now + 2_000_000, 2_000_000, 1, now)]).unwrap_err();
        assert_eq!((refused.status, refused.category, refused.code.as_str()), (429, "rate_limit", "rate_limited"));
        assert!(refused.headers.iter().any(|(n, v)| *n == "Retry-After" && v == "1"));
        // A statement for the key alone when the business's limit is off.
        let (sql, params) = Rates { per_key: 100, per_business: 0 }.statement("h");
        assert!(!sql.contains("business_id") && params.len() == 3, "{sql}");
    }
}
