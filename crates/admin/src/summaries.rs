//! `switchboard admin summaries configure`: a business's price of one AI
//! assessment in campaign summary runs (migration 0022, `summary_prices`).
//! The rule and its statements are the campaigns area's
//! (`switchboard-summary-prices`, which the area reads when it estimates a
//! run); a change applies to the next estimate, never to a run already
//! estimated or confirmed.

use super::areas::{self, Tx};
use super::{in_transaction, require_business};
use crate::db::Db;
use anyhow::Result;
use serde_json::{json, Value};
use switchboard_summary_prices as prices;

/// Sets what is given, keeps the rest; prints the price.
pub fn configure(db: &Db, business: &str, per_contact: Option<i64>, per_thousand: Option<i64>) -> Result<Value> {
    let business = business.to_ascii_lowercase();
    let change = prices::check(per_contact, per_thousand).map_err(|r| {
        areas::refused(r, |field| match field {
            "pricePerContact" => "--price-per-contact",
            "pricePerThousandCharacters" => "--price-per-thousand-characters",
            other => other,
        })
    })?;
    let c = db.conn()?;
    in_transaction(&c, || {
        require_business(&c, &business)?;
        prices::configure(&Tx(&c), &business, &change)
    })?;
    let (per_contact, per_thousand, updated_at) = prices::stored(&Tx(&c), &business)?.ok_or_else(|| anyhow::anyhow!("the price was not stored"))?;
    Ok(json!({"businessId": business, "pricePerContactMicrocredits": per_contact, "pricePerThousandCharactersMicrocredits": per_thousand, "updatedAt": updated_at}))
}
