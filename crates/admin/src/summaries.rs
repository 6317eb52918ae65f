//! `switchboard admin summaries configure`: a business's price of one AI
//! assessment in campaign summary runs (migration 0022, `summary_prices`).
//! A run fixes the price when it is estimated, so a change applies to the
//! next estimate, never to a run already estimated or confirmed.

use super::{in_transaction, json_of, require_business};
use crate::db::{self, Db, SqlValue};
use anyhow::{bail, Result};
use serde_json::{json, Value};

/// The documented defaults (`components/campaigns/src/summaries.rs` holds
/// the same figures for businesses without a row).
pub const DEFAULT_PER_CONTACT: i64 = 2_000;
pub const DEFAULT_PER_THOUSAND: i64 = 500;
/// A typo guard: no price above a million credits.
const MAX_PRICE: i64 = 1_000_000_000_000;

/// Sets what is given, keeps the rest; prints the price.
pub fn configure(db: &Db, business: &str, per_contact: Option<i64>, per_thousand: Option<i64>) -> Result<Value> {
    let business = business.to_ascii_lowercase();
    for (flag, v) in [("--price-per-contact", per_contact), ("--price-per-thousand-characters", per_thousand)] {
        if v.is_some_and(|p| !(0..=MAX_PRICE).contains(&p)) {
            bail!("{flag} must be 0 to {MAX_PRICE} microcredits");
        }
    }
    let c = db.conn()?;
    let now = crate::clock::now_rfc3339();
    in_transaction(&c, || {
        require_business(&c, &business)?;
        db::execute(
            &c,
            "INSERT INTO summary_prices (business_id, price_per_contact, price_per_thousand, updated_at) VALUES (?1, COALESCE(?2, ?4), COALESCE(?3, ?5), ?6) \
             ON CONFLICT (business_id) DO UPDATE SET price_per_contact = COALESCE(?2, price_per_contact), \
               price_per_thousand = COALESCE(?3, price_per_thousand), updated_at = ?6",
            vec![
                SqlValue::Text(business.clone()),
                per_contact.map_or(SqlValue::Null, SqlValue::Integer),
                per_thousand.map_or(SqlValue::Null, SqlValue::Integer),
                SqlValue::Integer(DEFAULT_PER_CONTACT),
                SqlValue::Integer(DEFAULT_PER_THOUSAND),
                SqlValue::Text(now.clone()),
            ],
        )?;
        Ok(())
    })?;
    let rows = db::query_rows(&c, "SELECT price_per_contact, price_per_thousand, updated_at FROM summary_prices WHERE business_id = ?1", vec![SqlValue::Text(business.clone())])?;
    let r = rows.first().ok_or_else(|| anyhow::anyhow!("the price was not stored"))?;
    Ok(json!({"businessId": business, "pricePerContactMicrocredits": json_of(&r[0]), "pricePerThousandCharactersMicrocredits": json_of(&r[1]), "updatedAt": json_of(&r[2])}))
}
