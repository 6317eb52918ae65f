//! `switchboard admin voice configure` and `admin credits add|show`: a
//! business's voice lines, its price per started 20-second block, its
//! caller line, and its microcredit balance with the ledger of every
//! movement (migration 0015). The rules and statements are the voice
//! area's (`switchboard-voice-accounts`, which the area runs when a call
//! reserves, charges and releases); this module checks the business,
//! opens the transaction and prints.

use super::areas::{self, Tx};
use super::{in_transaction, require_business};
use crate::db::Db;
use anyhow::{bail, Result};
use serde_json::{json, Value};
use switchboard_voice_accounts::{account, credits, BLOCK_MS};

/// What `voice configure` may change (None: keep): the voice area's own.
pub use switchboard_voice_accounts::account::Settings;

/// The flag of each voice account setting.
fn flag(field: &'static str) -> &'static str {
    match field {
        "lines" => "--lines",
        "pricePerBlock" => "--price-per-block",
        "callerNumber" => "--caller-number",
        "timeZone" => "--time-zone",
        "callingWindow" => "--calling-window",
        "microcredits" => "--microcredits",
        "note" => "--note",
        other => other,
    }
}

/// Changes what is given and keeps the rest (defaults for a business that
/// had no voice account yet); prints the account.
pub fn configure(db: &Db, business: &str, s: &Settings) -> Result<Value> {
    let business = business.to_ascii_lowercase();
    let checked = account::check(s).map_err(|r| areas::refused(r, flag))?;
    let c = db.conn()?;
    in_transaction(&c, || {
        require_business(&c, &business)?;
        account::configure(&Tx(&c), &business, &checked)
    })?;
    let a = account::stored(&Tx(&c), &business)?.ok_or_else(|| anyhow::anyhow!("the voice account was not stored"))?;
    Ok(json!({"businessId": business, "lines": a.lines, "pricePerBlockMicrocredits": a.price_per_block, "blockSeconds": BLOCK_MS / 1000,
              "callerNumber": a.caller_number, "timeZone": a.time_zone, "callingWindow": a.calling_window, "updatedAt": a.updated_at}))
}

/// Adds microcredits to the balance (a `grant` in the ledger); prints the
/// new balance.
pub fn add_credits(db: &Db, business: &str, microcredits: i64, note: Option<&str>) -> Result<Value> {
    let business = business.to_ascii_lowercase();
    let grant = credits::check_grant(microcredits, note).map_err(|r| areas::refused(r, flag))?;
    let c = db.conn()?;
    in_transaction(&c, || {
        require_business(&c, &business)?;
        credits::grant(&Tx(&c), &business, &grant)
    })?;
    let (available, reserved) = credits::balance(&Tx(&c), &business)?;
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
    let (available, reserved) = credits::balance(&Tx(&c), &business)?;
    let entries = credits::newest(&Tx(&c), &business, limit)?;
    Ok(json!({"businessId": business, "balanceMicrocredits": available, "reservedMicrocredits": reserved, "entries": entries}))
}
