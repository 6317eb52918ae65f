//! Rate limits and load shedding (`governor`'s token buckets).
//!
//! * Every authenticated API request takes one token from its API key's
//!   bucket and one from its business's bucket (`--rate-limit-key`,
//!   `--rate-limit-business`: requests per second, a burst of twice that).
//!   An empty bucket answers `429 rate_limit` (`rate_limited`) with
//!   `Retry-After`; every answer to an admitted request carries the IETF
//!   draft's `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`
//!   for the tighter of the two. A business's bucket is its own: one
//!   tenant's flood empties only that tenant's bucket.
//! * At most `--max-in-flight` API requests are in the service at once;
//!   beyond that a request is answered `503 capacity` (`overloaded`,
//!   `Retry-After: 1`) at once instead of queueing without end.
//!
//! Requests refused before authentication (401, 404 …) take no token.
//! The refusal and the headers are the gateway's (`rate_limit`), the
//! edge's too (components/edge/src/limits.rs).

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use switchboard_gateway::rate_limit::{self, Whose};
use switchboard_gateway::Failure;

type Keyed = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// From the command line; 0 turns a limit off.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub per_key_per_second: u32,
    pub per_business_per_second: u32,
    pub max_in_flight: usize,
}

struct Bucket {
    limiter: Keyed,
    rate: u32,
    whose: Whose,
}

impl Bucket {
    fn new(rate: u32, whose: Whose) -> Option<Bucket> {
        let per_second = NonZeroU32::new(rate)?;
        let quota = Quota::per_second(per_second).allow_burst(NonZeroU32::new(rate_limit::burst(rate)).expect("twice a positive rate"));
        Some(Bucket { limiter: RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(), rate, whose })
    }

    /// Takes a token: the tokens left, or the time until one is back.
    fn take(&self, key: &str) -> Result<u32, Duration> {
        match self.limiter.check_key(&key.to_string()) {
            Ok(snapshot) => Ok(snapshot.remaining_burst_capacity()),
            Err(not_until) => Err(not_until.wait_time_from(DefaultClock::default().now())),
        }
    }
}

pub struct Limits {
    per_key: Option<Bucket>,
    per_business: Option<Bucket>,
    in_flight: AtomicUsize,
    max_in_flight: usize,
}

/// A request's place among those in flight; given back on drop.
pub struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Limits {
    pub fn new(s: Settings) -> Limits {
        Limits {
            per_key: Bucket::new(s.per_key_per_second, Whose::Key),
            per_business: Bucket::new(s.per_business_per_second, Whose::Business),
            in_flight: AtomicUsize::new(0),
            max_in_flight: s.max_in_flight,
        }
    }

    /// Admits one more API request in flight, or sheds it.
    pub fn enter(&self) -> Result<Slot<'_>, Failure> {
        let before = self.in_flight.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(&self.in_flight);
        if self.max_in_flight > 0 && before >= self.max_in_flight {
            return Err(Failure::new(503, "capacity", "overloaded", format!("the service is at its limit of {} requests in flight; retry shortly", self.max_in_flight))
                .retryable(true)
                .with_header("Retry-After", "1".into()));
        }
        Ok(slot)
    }

    /// Takes a token for an authenticated request: the `RateLimit-*`
    /// headers of its answer, or the 429.
    pub fn admit(&self, key_id: Option<&str>, business_id: Option<&str>) -> Result<Vec<(&'static str, String)>, Failure> {
        let mut tightest: Option<(&Bucket, u32)> = None;
        for (bucket, id) in [(&self.per_business, business_id), (&self.per_key, key_id)] {
            let (Some(bucket), Some(id)) = (bucket, id) else { continue };
            match bucket.take(id) {
                Ok(left) => {
                    if tightest.is_none_or(|(_, l)| left < l) {
                        tightest = Some((bucket, left));
                    }
                }
                Err(wait) => return Err(rate_limit::refusal(bucket.whose, bucket.rate, wait)),
            }
        }
        Ok(match tightest {
            Some((bucket, left)) => rate_limit::headers(bucket.rate, left),
            None => Vec::new(),
        })
    }

    /// Drops the state of keys and businesses whose buckets are full again
    /// (the maintenance loop), so memory follows the active callers.
    pub fn forget_idle(&self) {
        for bucket in [&self.per_key, &self.per_business].into_iter().flatten() {
            bucket.limiter.retain_recent();
            bucket.limiter.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_business_bucket_empties_for_that_business_only() {
        let limits = Limits::new(Settings { per_key_per_second: 0, per_business_per_second: 5, max_in_flight: 0 });
        for left in (0..10).rev() {
            let headers = limits.admit(Some("k1"), Some("a")).unwrap();
            assert_eq!(headers[1], ("RateLimit-Remaining", left.to_string()));
            assert_eq!(headers[0], ("RateLimit-Limit", "10".to_string()));
        }
        let refused = limits.admit(Some("k1"), Some("a")).unwrap_err();
        assert_eq!((refused.status, refused.category, refused.code.as_str()), (429, "rate_limit", "rate_limited"));
        assert!(refused.headers.iter().any(|(n, v)| *n == "Retry-After" && v == "1"));
        assert!(limits.admit(Some("k2"), Some("b")).is_ok(), "another business has its own bucket");
    }

    #[test]
    fn requests_beyond_the_in_flight_bound_are_shed() {
        let limits = Limits::new(Settings { per_key_per_second: 0, per_business_per_second: 0, max_in_flight: 2 });
        let a = limits.enter().unwrap();
        let _b = limits.enter().unwrap();
        assert_eq!(limits.enter().err().map(|f| f.code), Some("overloaded".to_string()));
        drop(a);
        assert!(limits.enter().is_ok(), "a finished request frees its slot");
    }
}
