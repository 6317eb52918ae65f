//! The microcredit balance and its ledger. `available` and `reserved` are
//! never negative; every movement is a ledger row: a `grant` (`admin
//! credits add`), a `reserve` when a call starts or a summary run is
//! confirmed (and another `reserve` or a `release` when a call's price
//! changed before it was placed: [`adjust`]), and a `charge` and a
//! `release` when it ends.

use crate::MAX_AMOUNT;
use switchboard_sql::row_struct;
use switchboard_sql::{params, Mismatch, Refused, Sql};

/// The longest note a grant takes.
pub const MAX_NOTE_CHARS: usize = 200;

/// (available, reserved) of the business; zeros before its first grant.
pub fn balance<S: Sql>(s: &S, biz: &str) -> Result<(i64, i64), S::Error>
where
    S::Error: From<Mismatch>,
{
    Ok(s.query_one_as("SELECT available, reserved FROM credit_balances WHERE business_id = ?1", &params![biz])?.unwrap_or((0, 0)))
}

fn ledger<S: Sql>(s: &S, biz: &str, kind: &str, amount: i64, reference: Option<&str>, note: Option<&str>) -> Result<(), S::Error> {
    s.execute(
        "INSERT INTO credit_ledger (id, business_id, kind, amount, reference, note, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &params![s.new_id(), biz, kind, amount, reference, note, s.now()],
    )?;
    Ok(())
}

/// A grant that passed [`check_grant`].
pub struct Grant {
    microcredits: i64,
    note: Option<String>,
}

/// A grant is 1 to [`MAX_AMOUNT`] microcredits with a note of at most
/// [`MAX_NOTE_CHARS`] characters.
pub fn check_grant(microcredits: i64, note: Option<&str>) -> Result<Grant, Refused> {
    if !(1..=MAX_AMOUNT).contains(&microcredits) {
        return Err(Refused::new("microcredits", format!("must be 1 to {MAX_AMOUNT}")));
    }
    if note.is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS || n.contains('\0')) {
        return Err(Refused::new("note", format!("must be at most {MAX_NOTE_CHARS} characters")));
    }
    Ok(Grant { microcredits, note: note.map(str::to_string) })
}

/// Adds a grant to the business's available balance.
pub fn grant<S: Sql>(s: &S, biz: &str, g: &Grant) -> Result<(), S::Error> {
    s.execute(
        "INSERT INTO credit_balances (business_id, available, reserved, updated_at) VALUES (?1, ?2, 0, ?3) \
         ON CONFLICT (business_id) DO UPDATE SET available = available + ?2, updated_at = ?3",
        &params![biz, g.microcredits, s.now()],
    )?;
    ledger(s, biz, "grant", g.microcredits, None, g.note.as_deref())
}

/// What [`reserve`] did.
pub enum Reservation {
    Made,
    /// The balance cannot cover it; nothing moved.
    Short {
        available: i64,
    },
}

/// Moves `amount` from available to reserved for `reference` (a call, a
/// summary run), or nothing when the balance cannot cover it.
pub fn reserve<S: Sql>(s: &S, biz: &str, reference: &str, amount: i64) -> Result<Reservation, S::Error>
where
    S::Error: From<Mismatch>,
{
    if amount > 0 {
        let moved =
            s.execute("UPDATE credit_balances SET available = available - ?2, reserved = reserved + ?2, updated_at = ?3 WHERE business_id = ?1 AND available >= ?2", &params![biz, amount, s.now()])?;
        if moved == 0 {
            return Ok(Reservation::Short { available: balance(s, biz)?.0 });
        }
    }
    ledger(s, biz, "reserve", amount, Some(reference), None)?;
    Ok(Reservation::Made)
}

/// Moves a reservation of `reserved` for `reference` to `wanted` (a call
/// repriced at placement): a rise is reserved on top when the balance covers
/// it, a fall goes back to available. Returns the reservation as it stands
/// (unchanged when a rise is short: the charge stays capped by it).
pub fn adjust<S: Sql>(s: &S, biz: &str, reference: &str, reserved: i64, wanted: i64) -> Result<i64, S::Error>
where
    S::Error: From<Mismatch>,
{
    if wanted > reserved {
        return Ok(match reserve(s, biz, reference, wanted - reserved)? {
            Reservation::Made => wanted,
            Reservation::Short { .. } => reserved,
        });
    }
    if wanted < reserved {
        let back = reserved - wanted.max(0);
        s.execute("UPDATE credit_balances SET reserved = reserved - ?2, available = available + ?2, updated_at = ?3 WHERE business_id = ?1", &params![biz, back, s.now()])?;
        ledger(s, biz, "release", back, Some(reference), None)?;
        return Ok(reserved - back);
    }
    Ok(reserved)
}

/// Ends a reservation: charges `charge` of the `reserved` amount (never
/// more) and returns the rest to available.
pub fn settle<S: Sql>(s: &S, biz: &str, reference: &str, reserved: i64, charge: i64) -> Result<(), S::Error> {
    let charge = charge.clamp(0, reserved.max(0));
    if reserved > 0 {
        s.execute("UPDATE credit_balances SET reserved = reserved - ?2, available = available + ?3, updated_at = ?4 WHERE business_id = ?1", &params![biz, reserved, reserved - charge, s.now()])?;
    }
    ledger(s, biz, "charge", charge, Some(reference), None)?;
    ledger(s, biz, "release", reserved - charge, Some(reference), None)
}

/// The ledger of `?1`, for a listing: a `SELECT … WHERE` without ORDER BY
/// (its first column is the id), whose rows read as [`Entry`]s.
pub const LEDGER: &str = "SELECT id, kind, amount, reference, note, created_at FROM credit_ledger WHERE business_id = ?1";

row_struct! {
    /// One ledger row as the API and the admin command show it.
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Entry {
        pub id: String,
        pub kind: String,
        #[serde(rename = "amountMicrocredits")]
        pub amount: i64,
        pub reference: Option<String>,
        pub note: Option<String>,
        pub created_at: String,
    }
}

/// The newest `limit` entries.
pub fn newest<S: Sql>(s: &S, biz: &str, limit: u32) -> Result<Vec<Entry>, S::Error>
where
    S::Error: From<Mismatch>,
{
    s.query_as(&format!("{LEDGER} ORDER BY id DESC LIMIT {limit}"), &params![biz])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_positive_and_bounded_with_a_short_note() {
        assert!(check_grant(1, None).is_ok());
        assert!(check_grant(MAX_AMOUNT, Some("top-up")).is_ok());
        assert_eq!(check_grant(0, None).err().unwrap().field, "microcredits");
        assert_eq!(check_grant(-3, None).err().unwrap().field, "microcredits");
        assert_eq!(check_grant(MAX_AMOUNT + 1, None).err().unwrap().field, "microcredits");
        assert_eq!(check_grant(5, Some(&"x".repeat(201))).err().unwrap().field, "note");
        assert_eq!(check_grant(5, Some("a\0b")).err().unwrap().field, "note");
        assert!(check_grant(5, Some(&"é".repeat(200))).is_ok(), "characters, not bytes");
    }
}
