//! Money of a call, in microcredits, against the business's balance
//! (`credit_balances`: `available` and `reserved`, neither ever negative)
//! and the append-only `credit_ledger`. Every function runs inside the
//! caller's transaction (the request's or the job step's), so a call row and
//! its money always move together.
//!
//! * At start a call reserves its maximum: the started 20-second blocks of
//!   its maximum duration at the business's active price ([`reserve`]).
//! * At the end it is charged the started blocks of its connected duration
//!   at the price fixed at start, or, when it never connected, the attempt
//!   cost the carrier reported; never more than it reserved. The unused rest
//!   goes back to `available` ([`settle`]).

use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{fail, new_id, now, Failure, HResult};

/// One billing block.
pub const BLOCK_MS: u64 = 20_000;
/// A business that was never configured (`admin voice configure`).
pub const DEFAULT_LINES: i64 = 1;
pub const DEFAULT_PRICE_PER_BLOCK: i64 = 25_000;
/// The maximum a call may last when its agent sets no
/// `maxCallDurationSeconds`: what is reserved for it.
pub const DEFAULT_MAX_DURATION_S: i64 = 600;
/// The longest maximum an agent may ask for (a day's worth of blocks is
/// never reserved by one call).
pub const MAX_DURATION_CAP_S: i64 = 4 * 3600;

/// Started 20-second blocks of `ms`.
pub fn blocks(ms: u64) -> u64 {
    ms.div_ceil(BLOCK_MS)
}

/// What a call of `max_duration_s` reserves at `price` per block.
pub fn maximum_charge(max_duration_s: i64, price: i64) -> i64 {
    blocks(max_duration_s.max(0) as u64 * 1000) as i64 * price
}

/// What an ended call costs: its connected blocks, or the carrier's attempt
/// cost when it never connected; capped at what it reserved.
pub fn charge(connected_ms: u64, attempt_cost: u64, price: i64, reserved: i64) -> i64 {
    let cost = if connected_ms > 0 { blocks(connected_ms) as i64 * price } else { attempt_cost.min(i64::MAX as u64) as i64 };
    cost.clamp(0, reserved.max(0))
}

/// A business's voice account (`admin voice configure`), or the defaults.
pub struct Account {
    pub lines: i64,
    pub price_per_block: i64,
    pub caller_number: Option<String>,
}

/// The business's lines, active price and caller line.
pub fn account(biz: &str) -> HResult<Account> {
    Ok(db::query_one("SELECT lines, price_per_block_microcredits, caller_number FROM voice_accounts WHERE business_id = ?1", &[biz.into()])?.map_or(
        Account { lines: DEFAULT_LINES, price_per_block: DEFAULT_PRICE_PER_BLOCK, caller_number: None },
        |r| Account { lines: r.int(0), price_per_block: r.int(1), caller_number: r.opt_text(2) },
    ))
}

fn ledger(biz: &str, kind: &str, amount: i64, call_id: &str) -> Result<(), Failure> {
    db::execute(
        "INSERT INTO credit_ledger (id, business_id, kind, amount, reference, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        &[new_id().into(), biz.into(), kind.into(), amount.into(), call_id.into(), now().into()],
    )?;
    Ok(())
}

/// Moves `amount` from available to reserved for `call_id`; 402
/// `insufficient_credit` when the balance cannot cover it (nothing moves).
pub fn reserve(biz: &str, call_id: &str, amount: i64) -> HResult<()> {
    reserve_for(biz, call_id, amount, "the call needs a reservation of {amount} microcredits (its maximum duration at the active voice price)")
}

/// [`reserve`] for any `reference` (a call, a summary run); `needs` says
/// what the reservation is for in the 402 message (`{amount}` is replaced).
pub fn reserve_for(biz: &str, reference: &str, amount: i64, needs: &str) -> HResult<()> {
    if amount > 0 {
        let moved = db::execute(
            "UPDATE credit_balances SET available = available - ?2, reserved = reserved + ?2, updated_at = ?3 WHERE business_id = ?1 AND available >= ?2",
            &[biz.into(), amount.into(), now().into()],
        )?;
        if moved == 0 {
            let available = db::query_one("SELECT available FROM credit_balances WHERE business_id = ?1", &[biz.into()])?.map_or(0, |r| r.int(0));
            let needs = needs.replace("{amount}", &amount.to_string());
            return Err(fail::failure(402, "billing", "insufficient_credit", format!("{needs}; {available} are available"), false));
        }
    }
    ledger(biz, "reserve", amount, reference)
}

/// Ends a reservation: charges `charge` of the `reserved` amount and
/// returns the rest to available.
pub fn settle(biz: &str, call_id: &str, reserved: i64, charge: i64) -> Result<(), Failure> {
    let charge = charge.clamp(0, reserved.max(0));
    if reserved > 0 {
        db::execute(
            "UPDATE credit_balances SET reserved = reserved - ?2, available = available + ?3, updated_at = ?4 WHERE business_id = ?1",
            &[biz.into(), reserved.into(), (reserved - charge).into(), now().into()],
        )?;
    }
    ledger(biz, "charge", charge, call_id)?;
    ledger(biz, "release", reserved - charge, call_id)
}

/// Operation 60 (ours): the balance and one page of the ledger, newest first.
pub fn credits(r: &switchboard_guest::Request) -> HResult<switchboard_guest::Success> {
    let biz = r.business_id.as_str();
    let (available, reserved) = db::query_one("SELECT available, reserved FROM credit_balances WHERE business_id = ?1", &[biz.into()])?.map_or((0, 0), |row| (row.int(0), row.int(1)));
    let (rows, next) = switchboard_guest::page::by_id_newest_first(r, "SELECT id, kind, amount, reference, note, created_at FROM credit_ledger WHERE business_id = ?1", vec![biz.into()], "id")?;
    let entries: Vec<serde_json::Value> = rows
        .iter()
        .map(|e| {
            serde_json::json!({
                "id": e.text(0), "kind": e.text(1), "amountMicrocredits": e.int(2),
                "reference": e.opt_text(3), "note": e.opt_text(4), "createdAt": e.text(5),
            })
        })
        .collect();
    switchboard_guest::ok(&serde_json::json!({
        "availableMicrocredits": available, "reservedMicrocredits": reserved, "entries": entries, "nextCursor": next,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn started_blocks_and_charges() {
        assert_eq!(blocks(0), 0);
        assert_eq!(blocks(1), 1);
        assert_eq!(blocks(20_000), 1);
        assert_eq!(blocks(47_000), 3, "a call of 47 s is 3 started 20-second blocks");
        assert_eq!(charge(47_000, 0, 25_000, 1_000_000), 75_000);
        assert_eq!(charge(0, 15_000, 25_000, 1_000_000), 15_000, "an attempt cost when nothing connected");
        assert_eq!(charge(0, 0, 25_000, 1_000_000), 0);
        assert_eq!(charge(600_000, 0, 25_000, 100_000), 100_000, "never more than reserved");
        assert_eq!(maximum_charge(600, 25_000), 750_000);
        assert_eq!(maximum_charge(47, 10), 30);
    }
}
