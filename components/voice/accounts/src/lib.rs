//! The voice area's accounts and money, each statement written once. The
//! voice area (and campaigns, through it) runs these over its `store`
//! import; `switchboard admin voice configure` and `admin credits add|show`
//! run them over a storage connection. Either way they run inside the
//! caller's transaction, so a call row and its money always move together.
//!
//! * [`account`]: a business's voice account (`voice_accounts`, migration
//!   0015): lines, the price per started 20-second block, the caller line,
//!   the default calling window; defaults for a business without one.
//! * [`credits`]: the microcredit balance (`credit_balances`: `available`
//!   and `reserved`, neither ever negative) and the append-only
//!   `credit_ledger`: grants, reservations, charges and releases.
//!
//! Never: bindings, HTTP, a failure envelope. A rule that refuses a value
//! says which setting and why ([`switchboard_sql::Refused`]); the caller
//! words it (the admin command names its flag, the area its 402).
//!
//! Entry points: [`account::check`] then [`account::configure`],
//! [`account::read`], [`credits::grant`], [`credits::reserve`],
//! [`credits::settle`].

pub mod account;
pub mod credits;

/// One billing block: a call is charged per started block.
pub const BLOCK_MS: u64 = 20_000;

/// No single grant or price above this (a typo guard: 10^12 microcredits is
/// a million credits).
pub const MAX_AMOUNT: i64 = 1_000_000_000_000;
