//! The rate limit's rules both builds answer by: a bucket's burst, the 429
//! refusal and the `RateLimit-*` headers of an admitted request. Where the
//! tokens are kept is each build's own: `governor`'s buckets in a node's
//! memory (crates/ops/src/limits.rs), one row per bucket at the primary at
//! the edge (components/edge/src/limits.rs).

use crate::Failure;
use std::time::Duration;

/// Whose bucket: an API key's or a business's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    Key,
    Business,
}

impl Whose {
    fn name(self) -> &'static str {
        match self {
            Whose::Key => "this API key's",
            Whose::Business => "this business's",
        }
    }
}

/// A bucket's burst: twice its rate (requests per second).
pub fn burst(rate: u32) -> u32 {
    rate.saturating_mul(2)
}

/// The answer to a request that found its bucket empty: `429 rate_limit`
/// (`rate_limited`), with `Retry-After` (whole seconds, at least 1, until a
/// token is back) and the bucket's `RateLimit-*` headers.
pub fn refusal(whose: Whose, rate: u32, until_a_token: Duration) -> Failure {
    let wait = until_a_token.as_secs_f64().ceil().max(1.0) as u64;
    let burst = burst(rate);
    Failure::new(429, "rate_limit", "rate_limited", format!("{} limit of {rate} requests per second (bursts of {burst}) is used up; retry after {wait} s", whose.name()))
        .retryable(true)
        .with_header("Retry-After", wait.to_string())
        .with_header("RateLimit-Limit", burst.to_string())
        .with_header("RateLimit-Remaining", "0".into())
        .with_header("RateLimit-Reset", wait.to_string())
}

/// The `RateLimit-*` headers of an admitted request, for the tighter of its
/// buckets: `left` tokens of a bucket refilled at `rate` a second.
/// `RateLimit-Reset` is the seconds until the bucket is full again, from
/// the two numbers beside it: ⌈(Limit − Remaining) / rate⌉.
pub fn headers(rate: u32, left: u32) -> Vec<(&'static str, String)> {
    let burst = burst(rate);
    let rate = rate.max(1);
    vec![("RateLimit-Limit", burst.to_string()), ("RateLimit-Remaining", left.min(burst).to_string()), ("RateLimit-Reset", (burst - left.min(burst)).div_ceil(rate).to_string())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_is_the_seconds_until_the_bucket_is_full() {
        assert_eq!(headers(5, 10), vec![("RateLimit-Limit", "10".into()), ("RateLimit-Remaining", "10".into()), ("RateLimit-Reset", "0".into())]);
        assert_eq!(headers(5, 9)[2].1, "1");
        assert_eq!(headers(5, 5)[2].1, "1");
        assert_eq!(headers(5, 4)[2].1, "2");
        assert_eq!(headers(100, 0)[2].1, "2");
        // Never more tokens left than the burst.
        assert_eq!(headers(2, 9)[1].1, "4");
    }

    #[test]
    fn a_refusal_waits_whole_seconds_and_at_least_one() {
        let f = refusal(Whose::Business, 5, Duration::from_millis(200));
        assert_eq!((f.status, f.category, f.code.as_str(), f.retryable), (429, "rate_limit", "rate_limited", true));
        assert!(f.message.starts_with("this business's limit of 5 requests per second (bursts of 10)"), "{}", f.message);
        let header = |f: &Failure, n: &str| f.headers.iter().find(|(h, _)| *h == n).map(|(_, v)| v.clone());
        assert_eq!(header(&f, "Retry-After").as_deref(), Some("1"));
        assert_eq!(header(&f, "RateLimit-Reset").as_deref(), Some("1"));
        assert_eq!(header(&f, "RateLimit-Remaining").as_deref(), Some("0"));
        assert_eq!(header(&refusal(Whose::Key, 1, Duration::from_millis(1_001)), "Retry-After").as_deref(), Some("2"));
    }
}
