//! Money of a call, in microcredits, against the business's balance. The
//! statements are the voice area's accounts crate
//! (`switchboard-voice-accounts`, which `admin voice configure` and `admin
//! credits` call too); this module runs them over the area's store, inside
//! the caller's transaction (the request's or the job step's), so a call row
//! and its money always move together, and words a refusal as a failure.
//!
//! * At start a call reserves its maximum: the started 20-second blocks of
//!   its maximum duration at the business's active price ([`reserve`]).
//! * When the carrier places it, the price is taken again: the price active
//!   then is the call's, and its reservation follows ([`price_at_placement`]).
//! * At the end it is charged the started blocks of its connected duration
//!   at the price taken at placement, or, when it never connected, the attempt
//!   cost the carrier reported; never more than it reserved. The unused rest
//!   goes back to `available` ([`settle`]).

use switchboard_guest::db::{self, Store};
use switchboard_guest::{fail, HResult};
use switchboard_voice_accounts::credits::{self, Entry, Reservation};

pub use switchboard_voice_accounts::account::{Account, DEFAULT_LINES, DEFAULT_PRICE_PER_BLOCK};
pub use switchboard_voice_accounts::BLOCK_MS;

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

/// The business's voice account (`admin voice configure`), or the defaults.
pub fn account(biz: &str) -> HResult<Account> {
    switchboard_voice_accounts::account::read(&Store, biz)
}

/// Moves `amount` from available to reserved for `call_id`; 402
/// `insufficient_credit` when the balance cannot cover it (nothing moves).
pub fn reserve(biz: &str, call_id: &str, amount: i64) -> HResult<()> {
    reserve_for(biz, call_id, amount, "the call needs a reservation of {amount} microcredits (its maximum duration at the active voice price)")
}

/// [`reserve`] for any `reference` (a call, a summary run); `needs` says
/// what the reservation is for in the 402 message (`{amount}` is replaced).
pub fn reserve_for(biz: &str, reference: &str, amount: i64, needs: &str) -> HResult<()> {
    match credits::reserve(&Store, biz, reference, amount)? {
        Reservation::Made => Ok(()),
        Reservation::Short { available } => {
            let needs = needs.replace("{amount}", &amount.to_string());
            Err(fail::failure(402, "billing", "insufficient_credit", format!("{needs}; {available} are available"), false))
        }
    }
}

/// The business's active price when the carrier placed the call, and the
/// reservation moved to that price's maximum: (price, reserved). A rise the
/// balance cannot cover keeps the reservation; the charge never exceeds it.
pub fn price_at_placement(biz: &str, call_id: &str, max_duration_s: i64, reserved: i64) -> HResult<(i64, i64)> {
    let price = account(biz)?.price_per_block;
    let reserved = credits::adjust(&Store, biz, call_id, reserved, maximum_charge(max_duration_s, price))?;
    db::execute("UPDATE calls SET price_per_block = ?3, reserved = ?4 WHERE business_id = ?1 AND id = ?2", &switchboard_guest::params![biz, call_id, price, reserved])?;
    Ok((price, reserved))
}

/// Ends a reservation: charges `charge` of the `reserved` amount and
/// returns the rest to available.
pub fn settle(biz: &str, call_id: &str, reserved: i64, charge: i64) -> HResult<()> {
    credits::settle(&Store, biz, call_id, reserved, charge)
}

/// Operation 60 (ours): the balance and one page of the ledger, newest first.
pub fn credits(r: &switchboard_guest::Request) -> HResult<switchboard_guest::Success> {
    let biz = r.business_id.as_str();
    let (available, reserved) = credits::balance(&Store, biz)?;
    let (entries, next) = switchboard_guest::page::by_id_newest_first::<Entry>(r, credits::LEDGER, switchboard_guest::params![biz], "id")?;
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
