//! Dates as a spreadsheet stores them: a workbook stores a date as a serial number (days
//! since 1899-12-30, or 1904-01-01) and shows it through a date or time
//! number format. A column whose numeric cells all carry such a format
//! ([`SheetDate`], found by `xlsx`; interpreted by `infer::interpret_cell`) keeps the serial as its original text,
//! is typed `date`/`datetime` (`text` for time-only formats), and its
//! serials are interpreted as ISO-8601 (`2024-01-31`, `2024-01-31T13:30:00`,
//! `13:30:00`).
//!
//! A cell's number format says whether its number is a date, a date-time
//! or a time ([`date_format_kind`]); the serial becomes ISO-8601 text
//! ([`serial_date`], [`serial_time`]).

use switchboard_formats::time;

pub use switchboard_formats::sheet_date::{SheetDate, SheetDateKind};

/// What a number format shows: a built-in id (14-22 and 45-47 are the
/// date and time ones) or, for a custom format, its code.
pub fn date_format_kind(id: u32, code: Option<&str>) -> Option<SheetDateKind> {
    match code {
        Some(code) => format_code_kind(code),
        None => match id {
            14..=17 => Some(SheetDateKind::Date),
            18..=21 | 45..=47 => Some(SheetDateKind::Time),
            22 => Some(SheetDateKind::DateTime),
            _ => None,
        },
    }
}

/// Reads a custom format code's first section for date and time tokens,
/// skipping quoted text, escaped and padding characters and bracketed
/// colours, locales and conditions (`[h]`, `[mm]`, `[ss]` are elapsed
/// time). `m` is minutes right after an hour or right before seconds,
/// otherwise months.
pub(crate) fn format_code_kind(code: &str) -> Option<SheetDateKind> {
    let mut tokens: Vec<char> = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ';' => break,
            '"' => {
                for q in chars.by_ref() {
                    if q == '"' {
                        break;
                    }
                }
            }
            '\\' | '_' | '*' => {
                chars.next();
            }
            '[' => {
                let inner: String = chars.by_ref().take_while(|&b| b != ']').collect::<String>().to_ascii_lowercase();
                if !inner.is_empty() && inner.chars().all(|x| matches!(x, 'h' | 'm' | 's')) {
                    tokens.push(if inner.starts_with('m') { 'n' } else { 'h' });
                }
            }
            _ => {
                let l = c.to_ascii_lowercase();
                if matches!(l, 'y' | 'd' | 'h' | 's' | 'm') {
                    tokens.push(l);
                } else if l == 'a' {
                    let rest: String = std::iter::once('a').chain(chars.clone().take(4)).collect::<String>().to_ascii_lowercase();
                    if rest.starts_with("am/pm") || rest.starts_with("a/p") {
                        tokens.push('h');
                    }
                }
            }
        }
    }
    let (mut date, mut time) = (false, false);
    for (i, t) in tokens.iter().enumerate() {
        match t {
            'y' | 'd' => date = true,
            'h' | 's' | 'n' => time = true,
            _ => {
                // `m`: minutes when an hour precedes or a second follows it.
                let prev = tokens[..i].iter().rev().find(|x| **x != 'm');
                let next = tokens[i + 1..].iter().find(|x| **x != 'm');
                if prev == Some(&'h') || next == Some(&'s') {
                    time = true;
                } else {
                    date = true;
                }
            }
        }
    }
    match (date, time) {
        (true, false) => Some(SheetDateKind::Date),
        (true, true) => Some(SheetDateKind::DateTime),
        (false, true) => Some(SheetDateKind::Time),
        (false, false) => None,
    }
}

/// A date serial as (`YYYY-MM-DD`, `HH:MM:SS`), rounded to the second.
/// 1900 system: serial 1 is 1900-01-01, and serial 60 is the 1900-02-29
/// that spreadsheets count but that never existed (None), so from 61 on the
/// count starts at 1899-12-30. 1904 system: serial 0 is 1904-01-01.
pub fn serial_date(serial: f64, base1904: bool) -> Option<(String, String)> {
    if !serial.is_finite() || !(0.0..2_958_466.0).contains(&serial) {
        return None; // past 9999-12-31, as spreadsheets
    }
    let secs = (serial * 86_400.0).round() as i64;
    let (days, secs) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let unix_days = if base1904 {
        days - 24_107
    } else if days == 60 {
        return None;
    } else if days < 1 {
        return None; // serial 0 is shown as 1900-01-00
    } else if days < 60 {
        days - 25_568
    } else {
        days - 25_569
    };
    Some((time::date_of_unix_days(unix_days)?, time::time_of_day(secs as u32)?))
}

/// A time serial (fraction of a day; more than a day for elapsed-time
/// formats such as `[h]:mm:ss`) as `HH:MM:SS`, hours counting on past 23.
pub fn serial_time(serial: f64) -> Option<String> {
    if !serial.is_finite() || !(0.0..=1e6).contains(&serial) {
        return None;
    }
    let secs = (serial * 86_400.0).round() as i64;
    Some(format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_formats() {
        use SheetDateKind::*;
        for (id, kind) in [(14, Some(Date)), (17, Some(Date)), (18, Some(Time)), (21, Some(Time)), (22, Some(DateTime)), (45, Some(Time)), (47, Some(Time))] {
            assert_eq!(date_format_kind(id, None), kind, "built-in {id}");
        }
        for id in [0, 1, 2, 10, 13, 23, 44, 48, 49] {
            assert_eq!(date_format_kind(id, None), None, "built-in {id}");
        }
        let custom = |code: &str| date_format_kind(164, Some(code));
        assert_eq!(custom("yyyy-mm-dd"), Some(Date));
        assert_eq!(custom("dd/mm/yyyy;@"), Some(Date));
        assert_eq!(custom("mmm yy"), Some(Date));
        assert_eq!(custom("[$-409]mmmm d, yyyy"), Some(Date));
        assert_eq!(custom("yyyy-mm-dd hh:mm:ss"), Some(DateTime));
        assert_eq!(custom("m/d/yy h:mm AM/PM"), Some(DateTime));
        assert_eq!(custom("h:mm"), Some(Time));
        assert_eq!(custom("mm:ss"), Some(Time));
        assert_eq!(custom("[h]:mm:ss"), Some(Time));
        assert_eq!(custom("[mm]:ss"), Some(Time));
        assert_eq!(custom("General"), None);
        assert_eq!(custom("0.00E+00"), None);
        assert_eq!(custom("#,##0.00 \"days\""), None);
        assert_eq!(custom("[Red]#,##0;[Blue]-#,##0"), None);
        assert_eq!(custom("0\\d"), None, "an escaped letter is literal");
        assert_eq!(custom("0_m"), None, "padding is not a token");
        // A custom code wins over the built-in meaning of its id.
        assert_eq!(date_format_kind(14, Some("0.00")), None);
    }

    #[test]
    fn spreadsheet_serials() {
        // 1900 system, including the fictitious 1900-02-29 (serial 60).
        assert_eq!(serial_date(1.0, false).unwrap().0, "1900-01-01");
        assert_eq!(serial_date(59.0, false).unwrap().0, "1900-02-28");
        assert_eq!(serial_date(60.0, false), None);
        assert_eq!(serial_date(61.0, false).unwrap().0, "1900-03-01");
        assert_eq!(serial_date(25_569.0, false).unwrap().0, "1970-01-01");
        assert_eq!(serial_date(45_351.0, false).unwrap().0, "2024-02-29");
        assert_eq!(serial_date(45_292.562_5, false).unwrap(), ("2024-01-01".into(), "13:30:00".into()));
        assert_eq!(serial_date(2_958_465.0, false).unwrap().0, "9999-12-31");
        assert_eq!(serial_date(2_958_466.0, false), None);
        assert_eq!(serial_date(0.0, false), None);
        assert_eq!(serial_date(-1.0, false), None);
        // 1904 system; rounding to the second can carry into the next day.
        assert_eq!(serial_date(0.0, true).unwrap().0, "1904-01-01");
        assert_eq!(serial_date(43_830.0, true).unwrap().0, "2024-01-01");
        assert_eq!(serial_date(45_292.999_999_9, false).unwrap(), ("2024-01-02".into(), "00:00:00".into()));
        assert_eq!(serial_time(0.5).unwrap(), "12:00:00");
        assert_eq!(serial_time(1.5).unwrap(), "36:00:00");
    }
}
