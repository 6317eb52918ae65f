//! A business's price of one AI assessment in campaign summary runs
//! (`summary_prices`, migration 0022), each statement written once: the
//! campaigns area reads it when it estimates a run ([`read`]), `switchboard
//! admin summaries configure` sets it ([`check`], then [`configure`]). A run
//! fixes the price when it is estimated, so a change applies to the next
//! estimate, never to a run already estimated or confirmed.
//!
//! Never: bindings, HTTP, a failure envelope (a refused value is a
//! [`Refused`] the caller words).
//!
//! Entry points: [`read`], [`check`], [`configure`], [`stored`].

use switchboard_sql::{Mismatch, Refused, Sql};

/// The documented defaults, for a business without a row.
pub const DEFAULT_PER_CONTACT: i64 = 2_000;
pub const DEFAULT_PER_THOUSAND: i64 = 500;
/// A typo guard: no price above a million credits.
pub const MAX_PRICE: i64 = 1_000_000_000_000;

/// The business's price: (per contact, per started 1,000 characters).
pub fn read<S: Sql>(s: &S, biz: &str) -> Result<(i64, i64), S::Error>
where
    S::Error: From<Mismatch>,
{
    Ok(s.query_one_as::<(i64, i64)>("SELECT price_per_contact, price_per_thousand FROM summary_prices WHERE business_id = ?1", &[biz.into()])?.unwrap_or((DEFAULT_PER_CONTACT, DEFAULT_PER_THOUSAND)))
}

/// A change that passed [`check`] (None: keep).
pub struct Change {
    per_contact: Option<i64>,
    per_thousand: Option<i64>,
}

/// Each price is 0 to [`MAX_PRICE`] microcredits.
pub fn check(per_contact: Option<i64>, per_thousand: Option<i64>) -> Result<Change, Refused> {
    for (field, v) in [("pricePerContact", per_contact), ("pricePerThousandCharacters", per_thousand)] {
        if v.is_some_and(|p| !(0..=MAX_PRICE).contains(&p)) {
            return Err(Refused::new(field, format!("must be 0 to {MAX_PRICE} microcredits")));
        }
    }
    Ok(Change { per_contact, per_thousand })
}

/// Sets what is given and keeps the rest (the defaults for a business that
/// had no row).
pub fn configure<S: Sql>(s: &S, biz: &str, c: &Change) -> Result<(), S::Error> {
    s.execute(
        "INSERT INTO summary_prices (business_id, price_per_contact, price_per_thousand, updated_at) VALUES (?1, COALESCE(?2, ?4), COALESCE(?3, ?5), ?6) \
         ON CONFLICT (business_id) DO UPDATE SET price_per_contact = COALESCE(?2, price_per_contact), \
           price_per_thousand = COALESCE(?3, price_per_thousand), updated_at = ?6",
        &[biz.into(), c.per_contact.into(), c.per_thousand.into(), DEFAULT_PER_CONTACT.into(), DEFAULT_PER_THOUSAND.into(), s.now().into()],
    )?;
    Ok(())
}

/// The stored price as the operator sees it: (per contact, per thousand,
/// updated at); None when never set.
pub fn stored<S: Sql>(s: &S, biz: &str) -> Result<Option<(i64, i64, String)>, S::Error>
where
    S::Error: From<Mismatch>,
{
    s.query_one_as("SELECT price_per_contact, price_per_thousand, updated_at FROM summary_prices WHERE business_id = ?1", &[biz.into()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_are_bounded() {
        assert!(check(None, None).is_ok());
        assert!(check(Some(0), Some(MAX_PRICE)).is_ok());
        assert_eq!(check(Some(-1), None).err().unwrap().field, "pricePerContact");
        assert_eq!(check(None, Some(MAX_PRICE + 1)).err().unwrap().field, "pricePerThousandCharacters");
        assert_eq!(check(Some(-1), Some(-1)).err().unwrap().field, "pricePerContact", "the first refused one");
    }
}
