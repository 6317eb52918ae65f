//! Calling windows in the contact's own time zone: a member is called only
//! while the local time of its contact is inside the iteration's window
//! (or the business's default window); outside it, it waits.
//!
//! The zone is the contact's `timeZone` field when it names an IANA zone,
//! else the business's default zone, else UTC. Zone rules and daylight
//! saving come from the tz database compiled into `chrono-tz`.

use chrono::{TimeZone, Timelike};

/// Minutes after local midnight, `[start, end)`; a start after the end
/// wraps past midnight (22:00-06:00).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: u32,
    pub end: u32,
}

impl Window {
    /// From `HH:MM` strings (the document checks their form); None when
    /// they are equal (an empty window).
    pub fn parse(start: &str, end: &str) -> Option<Window> {
        let minutes = |s: &str| -> Option<u32> {
            let (h, m) = s.split_once(':')?;
            let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
            (h < 24 && m < 60).then_some(h * 60 + m)
        };
        let w = Window { start: minutes(start)?, end: minutes(end)? };
        (w.start != w.end).then_some(w)
    }

    pub fn contains(&self, minute: u32) -> bool {
        if self.start < self.end {
            (self.start..self.end).contains(&minute)
        } else {
            minute >= self.start || minute < self.end
        }
    }

    /// `HH:MM` of a minute of the day.
    pub fn hhmm(minute: u32) -> String {
        format!("{:02}:{:02}", minute / 60, minute % 60)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"start": Window::hhmm(self.start), "end": Window::hhmm(self.end)})
    }
}

/// An IANA zone name as the tz database knows it.
pub fn zone(name: &str) -> Option<chrono_tz::Tz> {
    name.trim().parse().ok()
}

/// The local minute of the day at `now_ms` in `zone`.
pub fn local_minute(now_ms: i64, zone: chrono_tz::Tz) -> u32 {
    let utc = chrono::Utc.timestamp_millis_opt(now_ms).single().unwrap_or_default();
    let local = utc.with_timezone(&zone);
    local.hour() * 60 + local.minute()
}

/// Whether a contact may be called now: its own zone (`contact_zone`, the
/// `timeZone` field) if valid, else the business default, else UTC.
pub fn open_for(window: &Window, now_ms: i64, contact_zone: Option<&str>, default_zone: Option<&str>) -> bool {
    let tz = contact_zone.and_then(zone).or_else(|| default_zone.and_then(zone)).unwrap_or(chrono_tz::UTC);
    window.contains(local_minute(now_ms, tz))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_and_wrap_past_midnight() {
        let day = Window::parse("09:00", "20:00").unwrap();
        assert!(day.contains(9 * 60) && day.contains(19 * 60 + 59) && !day.contains(20 * 60) && !day.contains(8 * 60));
        let night = Window::parse("22:00", "06:00").unwrap();
        assert!(night.contains(23 * 60) && night.contains(0) && night.contains(5 * 60 + 59) && !night.contains(12 * 60));
        assert_eq!(Window::parse("09:00", "09:00"), None);
        assert_eq!(Window::parse("24:00", "09:00"), None);
        assert_eq!(day.json(), serde_json::json!({"start": "09:00", "end": "20:00"}));
    }

    #[test]
    fn local_time_follows_the_zone_and_daylight_saving() {
        // 2026-07-01 12:00 UTC: 13:00 in London (summer time), 21:00 in Tokyo.
        let summer = chrono::Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap().timestamp_millis();
        assert_eq!(local_minute(summer, zone("Europe/London").unwrap()), 13 * 60);
        assert_eq!(local_minute(summer, zone("Asia/Tokyo").unwrap()), 21 * 60);
        // 2026-01-15 12:00 UTC: 12:00 in London (no daylight saving).
        let winter = chrono::Utc.with_ymd_and_hms(2026, 1, 15, 12, 0, 0).unwrap().timestamp_millis();
        assert_eq!(local_minute(winter, zone("Europe/London").unwrap()), 12 * 60);
        let business_hours = Window::parse("09:00", "17:00").unwrap();
        assert!(open_for(&business_hours, summer, Some("Europe/London"), None));
        assert!(!open_for(&business_hours, summer, Some("Asia/Tokyo"), None));
        assert!(open_for(&business_hours, summer, Some("Not/AZone"), Some("Europe/London")), "an invalid contact zone falls back to the business's");
        assert!(open_for(&business_hours, summer, None, None), "UTC without any zone");
    }
}
