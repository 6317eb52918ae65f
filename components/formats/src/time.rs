//! Times, on `chrono`: the one place components turn epoch milliseconds
//! into the text the API shows, and check and write calendar dates.
//!
//! Every time the API shows is RFC 3339 UTC with milliseconds and a `Z`
//! ([`RFC3339_MS`], `2026-01-01T00:00:00.123Z`), the form of the host's
//! clock (`clock::now_rfc3339`).

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};

/// RFC 3339 UTC with milliseconds: `2026-01-01T00:00:00.123Z`.
pub const RFC3339_MS: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";
/// A calendar date: `2026-01-31`.
pub const DATE: &str = "%Y-%m-%d";
/// A time of day to the second: `13:30:00`.
pub const TIME_OF_DAY: &str = "%H:%M:%S";

/// `ms` (milliseconds since the Unix epoch) as [`RFC3339_MS`]; None outside
/// the years chrono represents (about ±262,000).
pub fn rfc3339_ms_checked(ms: i64) -> Option<String> {
    DateTime::<Utc>::from_timestamp_millis(ms).map(|t| t.format(RFC3339_MS).to_string())
}

/// `ms` as [`RFC3339_MS`], the epoch (`1970-01-01T00:00:00.000Z`) outside
/// the years chrono represents.
pub fn rfc3339_ms(ms: i64) -> String {
    rfc3339_ms_checked(ms).unwrap_or_else(|| DateTime::<Utc>::UNIX_EPOCH.format(RFC3339_MS).to_string())
}

/// The date `days` after 1970-01-01 (proleptic Gregorian) as [`DATE`].
pub fn date_of_unix_days(days: i64) -> Option<String> {
    let days = i32::try_from(days.checked_add(719_163)?).ok()?; // 0001-01-01 is day 1 of the era
    NaiveDate::from_num_days_from_ce_opt(days).map(|d| d.format(DATE).to_string())
}

/// Year, month and day as [`DATE`] when they name a real date.
pub fn ymd(year: i32, month: u32, day: u32) -> Option<String> {
    NaiveDate::from_ymd_opt(year, month, day).map(|d| d.format(DATE).to_string())
}

/// `secs` after midnight (below 86,400) as [`TIME_OF_DAY`].
pub fn time_of_day(secs: u32) -> Option<String> {
    NaiveTime::from_num_seconds_from_midnight_opt(secs, 0).map(|t| t.format(TIME_OF_DAY).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_with_milliseconds() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(rfc3339_ms(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339_ms_checked(i64::MAX), None);
        assert_eq!(rfc3339_ms(i64::MAX), "1970-01-01T00:00:00.000Z");
        // The same text as chrono's own RFC 3339 writer with milliseconds.
        for ms in [0, 1, 999, 1_000, 1_767_225_600_123, -86_400_001] {
            let t = DateTime::<Utc>::from_timestamp_millis(ms).unwrap();
            assert_eq!(rfc3339_ms(ms), t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
        }
    }

    #[test]
    fn dates_and_times_of_day() {
        assert_eq!(date_of_unix_days(0).as_deref(), Some("1970-01-01"));
        assert_eq!(date_of_unix_days(-1).as_deref(), Some("1969-12-31"));
        assert_eq!(date_of_unix_days(11_016).as_deref(), Some("2000-02-29"));
        assert_eq!(date_of_unix_days(-25_567).as_deref(), Some("1900-01-01"));
        assert_eq!(date_of_unix_days(2_932_896).as_deref(), Some("9999-12-31"));
        assert_eq!(date_of_unix_days(i64::MAX), None);
        assert_eq!(ymd(2024, 2, 29).as_deref(), Some("2024-02-29"));
        assert_eq!(ymd(800, 1, 5).as_deref(), Some("0800-01-05"));
        assert_eq!(ymd(2023, 2, 29), None);
        assert_eq!(ymd(1900, 2, 29), None);
        assert_eq!(ymd(2000, 13, 1), None);
        assert_eq!(ymd(2000, 4, 31), None);
        assert_eq!(ymd(2000, 1, 0), None);
        assert_eq!(time_of_day(0).as_deref(), Some("00:00:00"));
        assert_eq!(time_of_day(48_600).as_deref(), Some("13:30:00"));
        assert_eq!(time_of_day(86_399).as_deref(), Some("23:59:59"));
        assert_eq!(time_of_day(86_400), None);
    }
}
