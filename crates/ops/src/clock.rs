//! Wall-clock helpers (UTC, RFC 3339 with milliseconds, through chrono).

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

pub fn now_rfc3339() -> String {
    rfc3339(now_ms())
}

/// Formats Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ` (an instant
/// chrono cannot represent, past the year 262,143, reads as the epoch).
pub fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(super::rfc3339(1_795_305_600_000), "2026-11-22T00:00:00.000Z");
        assert_eq!(super::rfc3339(-1), "1969-12-31T23:59:59.999Z");
    }
}
