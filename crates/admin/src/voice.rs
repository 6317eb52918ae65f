//! `switchboard admin voice configure` and `admin credits add|show`: a
//! business's voice lines, its price per started 20-second block, its
//! caller line, and its microcredit balance with the ledger of every
//! movement (migration 0015). The voice area reserves, charges and releases
//! against the same rows in its own transactions.

use super::{in_transaction, is_e164, json_of, require_business};
use crate::db::{self, Db, SqlValue};
use anyhow::{bail, Result};
use serde_json::{json, Value};

/// The price of a started 20-second block until an operator sets one:
/// 25,000 microcredits (0.025 credits; 0.075 credits a minute).
pub const DEFAULT_PRICE_PER_BLOCK_MICROCREDITS: i64 = 25_000;
/// Lines (concurrent carrier calls) a business has until it buys more.
pub const DEFAULT_LINES: i64 = 1;
const MAX_LINES: i64 = 1_000;
/// No single grant or price above this (a typo guard: 10^12 microcredits
/// is a million credits).
const MAX_AMOUNT: i64 = 1_000_000_000_000;

/// What `voice configure` may change (None: keep).
pub struct Settings<'a> {
    pub lines: Option<i64>,
    pub price: Option<i64>,
    pub caller: Option<&'a str>,
    /// An IANA zone name.
    pub time_zone: Option<&'a str>,
    /// `HH:MM-HH:MM`.
    pub calling_window: Option<&'a str>,
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

/// Changes what is given and keeps the rest (defaults for a business that
/// had no voice account yet); prints the account.
pub fn configure(db: &Db, business: &str, s: &Settings) -> Result<Value> {
    let (lines, price, caller) = (s.lines, s.price, s.caller);
    let business = business.to_ascii_lowercase();
    if s.time_zone.is_some_and(|z| z.parse::<chrono_tz::Tz>().is_err()) {
        bail!("--time-zone must be an IANA time zone name such as Europe/Paris");
    }
    let window = match s.calling_window {
        None => None,
        Some(w) => Some(window(w).ok_or_else(|| anyhow::anyhow!("--calling-window must be HH:MM-HH:MM with two different times, such as 09:00-20:00"))?),
    };
    if lines.is_some_and(|n| !(0..=MAX_LINES).contains(&n)) {
        bail!("--lines must be 0 to {MAX_LINES}");
    }
    if price.is_some_and(|p| !(0..=MAX_AMOUNT).contains(&p)) {
        bail!("--price-per-block must be 0 to {MAX_AMOUNT} microcredits");
    }
    if caller.is_some_and(|c| !is_e164(c)) {
        bail!("--caller-number must be an E.164 number such as +14155550100");
    }
    let c = db.conn()?;
    let now = crate::clock::now_rfc3339();
    in_transaction(&c, || {
        require_business(&c, &business)?;
        db::execute(
            &c,
            "INSERT INTO voice_accounts (business_id, lines, price_per_block_microcredits, caller_number, updated_at) \
             VALUES (?1, COALESCE(?2, ?5), COALESCE(?3, ?6), ?4, ?7) \
             ON CONFLICT (business_id) DO UPDATE SET lines = COALESCE(?2, lines), \
               price_per_block_microcredits = COALESCE(?3, price_per_block_microcredits), \
               caller_number = COALESCE(?4, caller_number), updated_at = ?7",
            vec![
                SqlValue::Text(business.clone()),
                lines.map_or(SqlValue::Null, SqlValue::Integer),
                price.map_or(SqlValue::Null, SqlValue::Integer),
                caller.map_or(SqlValue::Null, |s| SqlValue::Text(s.to_string())),
                SqlValue::Integer(DEFAULT_LINES),
                SqlValue::Integer(DEFAULT_PRICE_PER_BLOCK_MICROCREDITS),
                SqlValue::Text(now.clone()),
            ],
        )?;
        db::execute(
            &c,
            "UPDATE voice_accounts SET time_zone = COALESCE(?2, time_zone), window_start = COALESCE(?3, window_start), window_end = COALESCE(?4, window_end) \
             WHERE business_id = ?1",
            vec![
                SqlValue::Text(business.clone()),
                s.time_zone.map_or(SqlValue::Null, |z| SqlValue::Text(z.trim().to_string())),
                window.map_or(SqlValue::Null, |w| SqlValue::Integer(w.0)),
                window.map_or(SqlValue::Null, |w| SqlValue::Integer(w.1)),
            ],
        )?;
        Ok(())
    })?;
    let rows = db::query_rows(
        &c,
        "SELECT lines, price_per_block_microcredits, caller_number, updated_at, time_zone, \
                CASE WHEN window_start IS NULL THEN NULL ELSE printf('%02d:%02d-%02d:%02d', window_start / 60, window_start % 60, window_end / 60, window_end % 60) END \
         FROM voice_accounts WHERE business_id = ?1",
        vec![SqlValue::Text(business.clone())],
    )?;
    let r = rows.first().ok_or_else(|| anyhow::anyhow!("the voice account was not stored"))?;
    Ok(json!({"businessId": business, "lines": json_of(&r[0]), "pricePerBlockMicrocredits": json_of(&r[1]), "blockSeconds": 20,
              "callerNumber": json_of(&r[2]), "timeZone": json_of(&r[4]), "callingWindow": json_of(&r[5]), "updatedAt": json_of(&r[3])}))
}

fn balance(c: &db::Connection, business: &str) -> Result<(i64, i64)> {
    let rows = db::query_rows(c, "SELECT available, reserved FROM credit_balances WHERE business_id = ?1", vec![SqlValue::Text(business.to_string())])?;
    let int = |v: &SqlValue| if let SqlValue::Integer(i) = v { *i } else { 0 };
    Ok(rows.first().map_or((0, 0), |r| (int(&r[0]), int(&r[1]))))
}

/// Adds microcredits to the balance (a `grant` in the ledger); prints the
/// new balance.
pub fn add_credits(db: &Db, business: &str, microcredits: i64, note: Option<&str>) -> Result<Value> {
    let business = business.to_ascii_lowercase();
    if !(1..=MAX_AMOUNT).contains(&microcredits) {
        bail!("--microcredits must be 1 to {MAX_AMOUNT}");
    }
    if note.is_some_and(|n| n.chars().count() > 200 || n.contains('\0')) {
        bail!("--note must be at most 200 characters");
    }
    let c = db.conn()?;
    let now = crate::clock::now_rfc3339();
    in_transaction(&c, || {
        require_business(&c, &business)?;
        db::execute(
            &c,
            "INSERT INTO credit_balances (business_id, available, reserved, updated_at) VALUES (?1, ?2, 0, ?3) \
             ON CONFLICT (business_id) DO UPDATE SET available = available + ?2, updated_at = ?3",
            vec![SqlValue::Text(business.clone()), SqlValue::Integer(microcredits), SqlValue::Text(now.clone())],
        )?;
        db::execute(
            &c,
            "INSERT INTO credit_ledger (id, business_id, kind, amount, reference, note, created_at) VALUES (?1, ?2, 'grant', ?3, NULL, ?4, ?5)",
            vec![
                SqlValue::Text(uuid::Uuid::now_v7().to_string()),
                SqlValue::Text(business.clone()),
                SqlValue::Integer(microcredits),
                note.map_or(SqlValue::Null, |n| SqlValue::Text(n.to_string())),
                SqlValue::Text(now.clone()),
            ],
        )?;
        Ok(())
    })?;
    let (available, reserved) = balance(&c, &business)?;
    Ok(json!({"businessId": business, "balanceMicrocredits": available, "reservedMicrocredits": reserved}))
}

/// The balance, what is reserved for calls in flight, and the newest
/// `limit` ledger entries.
pub fn show_credits(db: &Db, business: &str, limit: u32) -> Result<Value> {
    let business = business.to_ascii_lowercase();
    if !(1..=200).contains(&limit) {
        bail!("--limit must be 1 to 200");
    }
    let c = db.conn()?;
    require_business(&c, &business)?;
    let (available, reserved) = balance(&c, &business)?;
    let entries: Vec<Value> = db::query_rows(
        &c,
        &format!("SELECT id, kind, amount, reference, note, created_at FROM credit_ledger WHERE business_id = ?1 ORDER BY id DESC LIMIT {limit}"),
        vec![SqlValue::Text(business.clone())],
    )?
    .iter()
    .map(|r| json!({"id": json_of(&r[0]), "kind": json_of(&r[1]), "amountMicrocredits": json_of(&r[2]), "reference": json_of(&r[3]), "note": json_of(&r[4]), "createdAt": json_of(&r[5])}))
    .collect();
    Ok(json!({"businessId": business, "balanceMicrocredits": available, "reservedMicrocredits": reserved, "entries": entries}))
}
