//! `voice_accounts`: what an operator sets for a business's calls (`admin
//! voice configure`) and what the voice area and campaigns read.

use crate::MAX_AMOUNT;
use switchboard_sql::row_struct;
use switchboard_sql::{params, Columns, FromRow, Mismatch, Refused, Row, Sql};

/// Lines (concurrent carrier calls) a business has until it buys more.
pub const DEFAULT_LINES: i64 = 1;
/// The price of a started 20-second block until an operator sets one:
/// 25,000 microcredits (0.025 credits; 0.075 credits a minute).
pub const DEFAULT_PRICE_PER_BLOCK: i64 = 25_000;
pub const MAX_LINES: i64 = 1_000;

/// A business's voice account, or the defaults.
pub struct Account {
    pub lines: i64,
    pub price_per_block: i64,
    pub caller_number: Option<String>,
    /// The default calling window's IANA zone, if set.
    pub time_zone: Option<String>,
    /// The default calling window, minutes after midnight (start, end).
    pub window: Option<(i64, i64)>,
}

/// Read from `lines, price_per_block_microcredits, caller_number,
/// time_zone, window_start, window_end`.
impl FromRow for Account {
    fn from_row(row: Row) -> Result<Self, Mismatch> {
        let mut c = Columns::new(row);
        Ok(Account {
            lines: c.read()?,
            price_per_block: c.read()?,
            caller_number: c.read()?,
            time_zone: c.read()?,
            window: match (c.read()?, c.read()?) {
                (Some(start), Some(end)) => Some((start, end)),
                _ => None,
            },
        })
    }
}

/// The business's lines, active price, caller line and default window.
pub fn read<S: Sql>(s: &S, biz: &str) -> Result<Account, S::Error>
where
    S::Error: From<Mismatch>,
{
    Ok(s.query_one_as("SELECT lines, price_per_block_microcredits, caller_number, time_zone, window_start, window_end FROM voice_accounts WHERE business_id = ?1", &params![biz])?.unwrap_or(Account {
        lines: DEFAULT_LINES,
        price_per_block: DEFAULT_PRICE_PER_BLOCK,
        caller_number: None,
        time_zone: None,
        window: None,
    }))
}

/// What a change may set (None: keep).
#[derive(Default)]
pub struct Settings<'a> {
    pub lines: Option<i64>,
    pub price_per_block: Option<i64>,
    pub caller_number: Option<&'a str>,
    /// An IANA zone name.
    pub time_zone: Option<&'a str>,
    /// `HH:MM-HH:MM`.
    pub calling_window: Option<&'a str>,
}

/// [`Settings`] that passed [`check`], the only thing [`configure`] takes.
pub struct Checked {
    lines: Option<i64>,
    price_per_block: Option<i64>,
    caller_number: Option<String>,
    time_zone: Option<String>,
    window: Option<(i64, i64)>,
}

/// `HH:MM-HH:MM` as minutes after midnight (start, end); they must differ.
fn window(s: &str) -> Option<(i64, i64)> {
    let minutes = |t: &str| -> Option<i64> {
        let (h, m) = t.trim().split_once(':')?;
        let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
        (h.to_string().len() <= 2 && (0..24).contains(&h) && (0..60).contains(&m)).then_some(h * 60 + m)
    };
    let (a, b) = s.split_once('-')?;
    let (a, b) = (minutes(a)?, minutes(b)?);
    (a != b).then_some((a, b))
}

/// The rules of each setting, in this order: the zone, the window, lines,
/// the price, the caller line.
pub fn check(s: &Settings) -> Result<Checked, Refused> {
    if s.time_zone.is_some_and(|z| z.parse::<chrono_tz::Tz>().is_err()) {
        return Err(Refused::new("timeZone", "must be an IANA time zone name such as Europe/Paris"));
    }
    let window = match s.calling_window {
        None => None,
        Some(w) => Some(window(w).ok_or_else(|| Refused::new("callingWindow", "must be HH:MM-HH:MM with two different times, such as 09:00-20:00"))?),
    };
    if s.lines.is_some_and(|n| !(0..=MAX_LINES).contains(&n)) {
        return Err(Refused::new("lines", format!("must be 0 to {MAX_LINES}")));
    }
    if s.price_per_block.is_some_and(|p| !(0..=MAX_AMOUNT).contains(&p)) {
        return Err(Refused::new("pricePerBlock", format!("must be 0 to {MAX_AMOUNT} microcredits")));
    }
    if s.caller_number.is_some_and(|c| !switchboard_formats::e164::is_e164(c)) {
        return Err(Refused::new("callerNumber", "must be an E.164 number such as +14155550100"));
    }
    Ok(Checked { lines: s.lines, price_per_block: s.price_per_block, caller_number: s.caller_number.map(str::to_string), time_zone: s.time_zone.map(|z| z.trim().to_string()), window })
}

/// Changes what is given and keeps the rest (the defaults for a business
/// that had no voice account yet).
pub fn configure<S: Sql>(s: &S, biz: &str, c: &Checked) -> Result<(), S::Error> {
    let now = s.now();
    s.execute(
        "INSERT INTO voice_accounts (business_id, lines, price_per_block_microcredits, caller_number, updated_at) \
         VALUES (?1, COALESCE(?2, ?5), COALESCE(?3, ?6), ?4, ?7) \
         ON CONFLICT (business_id) DO UPDATE SET lines = COALESCE(?2, lines), \
           price_per_block_microcredits = COALESCE(?3, price_per_block_microcredits), \
           caller_number = COALESCE(?4, caller_number), updated_at = ?7",
        &params![biz, c.lines, c.price_per_block, c.caller_number.as_deref(), DEFAULT_LINES, DEFAULT_PRICE_PER_BLOCK, now],
    )?;
    s.execute(
        "UPDATE voice_accounts SET time_zone = COALESCE(?2, time_zone), window_start = COALESCE(?3, window_start), window_end = COALESCE(?4, window_end) \
         WHERE business_id = ?1",
        &params![biz, c.time_zone.as_deref(), c.window.map(|w| w.0), c.window.map(|w| w.1)],
    )?;
    Ok(())
}

row_struct! {
    /// A stored voice account as the operator sees it.
    pub struct Stored {
        pub lines: i64,
        pub price_per_block: i64,
        pub caller_number: Option<String>,
        pub updated_at: String,
        pub time_zone: Option<String>,
        /// `HH:MM-HH:MM`.
        pub calling_window: Option<String>,
    }
}

/// The business's stored account (None: never configured).
pub fn stored<S: Sql>(s: &S, biz: &str) -> Result<Option<Stored>, S::Error>
where
    S::Error: From<Mismatch>,
{
    s.query_one_as(
        "SELECT lines, price_per_block_microcredits, caller_number, updated_at, time_zone, \
                CASE WHEN window_start IS NULL THEN NULL ELSE printf('%02d:%02d-%02d:%02d', window_start / 60, window_start % 60, window_end / 60, window_end % 60) END \
         FROM voice_accounts WHERE business_id = ?1",
        &params![biz],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(s: Settings) -> &'static str {
        check(&s).err().expect("refused").field
    }

    #[test]
    fn each_setting_has_its_rule() {
        assert!(check(&Settings::default()).is_ok());
        assert!(check(&Settings { lines: Some(3), price_per_block: Some(0), caller_number: Some("+14155550100"), time_zone: Some("Europe/Paris"), calling_window: Some("22:00-06:00") }).is_ok());
        assert_eq!(refused(Settings { lines: Some(-1), ..Default::default() }), "lines");
        assert_eq!(refused(Settings { lines: Some(MAX_LINES + 1), ..Default::default() }), "lines");
        assert_eq!(refused(Settings { price_per_block: Some(-5), ..Default::default() }), "pricePerBlock");
        assert_eq!(refused(Settings { caller_number: Some("4155550100"), ..Default::default() }), "callerNumber");
        assert_eq!(refused(Settings { time_zone: Some("Mars/Olympus"), ..Default::default() }), "timeZone");
        for w in ["09:00-09:00", "9-17", "24:00-06:00", "09:60-10:00"] {
            assert_eq!(refused(Settings { calling_window: Some(w), ..Default::default() }), "callingWindow", "{w}");
        }
        // The zone is checked first, whatever else is wrong.
        assert_eq!(refused(Settings { lines: Some(-1), time_zone: Some("Nowhere"), ..Default::default() }), "timeZone");
    }

    #[test]
    fn windows_are_minutes_after_midnight() {
        assert_eq!(window("09:00-20:00"), Some((540, 1200)));
        assert_eq!(window("22:00 - 06:30"), Some((1320, 390)));
    }
}
