//! The formats every component writes and checks the same way. No host
//! calls: the pure crates (`tabular`), the edge's storage half (which
//! implements the clock the guests import) and the guest library (which
//! re-exports this crate's modules, so areas write `switchboard_guest::time`)
//! all link it.
//!
//! * [`time`]: RFC 3339 timestamps and calendar dates, on `chrono`.

pub mod time;
