//! The formats every component writes and checks the same way. No host
//! calls: the pure crates (`tabular`), the edge's storage half (which
//! implements the clock the guests import) and the guest library (which
//! re-exports this crate's modules, so areas write `switchboard_guest::time`)
//! all link it.
//!
//! * [`time`]: RFC 3339 timestamps and calendar dates, on `chrono`;
//! * [`e164`]: the E.164 check and normalisation of mobile numbers;
//! * [`is_uuid`]: the UUID check, on the `uuid` crate;
//! * [`sheet_date`]: a spreadsheet date column's stored shape.

pub mod e164;
pub mod sheet_date;
pub mod time;

/// True when `s` is a hyphenated UUID (8-4-4-4-12 hex digits, either case),
/// the only form the API takes (the `uuid` crate also reads the simple,
/// braced and URN forms, which are other lengths).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::try_parse(s).is_ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid_shape() {
        assert!(super::is_uuid("0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"));
        assert!(super::is_uuid("0190F6B1-1C2D-7E3F-8A9B-0C1D2E3F4A5B"));
        assert!(!super::is_uuid("0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5"));
        assert!(!super::is_uuid("0190f6b1x1c2d-7e3f-8a9b-0c1d2e3f4a5b"));
        assert!(!super::is_uuid("0190f6b11c2d7e3f8a9b0c1d2e3f4a5b"));
        assert!(!super::is_uuid("{0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b}"));
        assert!(!super::is_uuid("urn:uuid:0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"));
        assert!(!super::is_uuid("0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5g"));
        assert!(!super::is_uuid("0190f6b1-1c2d-7e3f-8a9b--c1d2e3f4a5b"));
        assert!(!super::is_uuid("0190f6b1-1c2d-7e3f-8a9b0-c1d2e3f4a5b"));
        assert!(!super::is_uuid("+190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"));
    }
}
