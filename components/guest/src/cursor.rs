//! Page cursors: `<id>` for lists ordered by id, `<timestamp>~<id>` for
//! lists ordered by a time (the id breaks ties).
//!
//! The format is exactly what [`PATTERN`] says, and every string matching
//! it is a position a list can resume from, so the OpenAPI document (the
//! `cursor` query parameter's `pattern`) accepts nothing the service
//! refuses. Clients should still pass `nextCursor` back unchanged; anything
//! else is `400 invalid_cursor`.

use crate::{fail, is_uuid, Failure};

/// The `cursor` parameter's pattern in the OpenAPI document (kept equal to
/// the gateway's copy by a test there).
pub const PATTERN: &str = "^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?Z~)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// What the list is ordered by: the id itself, or an RFC 3339 time.
    pub key: String,
    pub id: String,
}

impl Cursor {
    pub fn new(key: impl Into<String>, id: impl Into<String>) -> Self {
        Cursor { key: key.into(), id: id.into() }
    }

    /// A cursor for lists ordered by id alone.
    pub fn from_id(id: &str) -> Self {
        Cursor::new(id, id)
    }

    pub fn encode(&self) -> String {
        if self.key == self.id {
            self.id.to_ascii_lowercase()
        } else {
            format!("{}~{}", self.key, self.id.to_ascii_lowercase())
        }
    }

    /// Decodes a cursor; `None` when it does not have the cursor's form.
    pub fn decode(s: &str) -> Option<Cursor> {
        let (key, id) = match s.split_once('~') {
            Some((key, id)) => (Some(key), id),
            None => (None, s),
        };
        if !is_uuid(id) || id.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
        match key {
            None => Some(Cursor::from_id(id)),
            Some(key) if is_timestamp(key) => Some(Cursor::new(key, id)),
            Some(_) => None,
        }
    }

    /// Like [`Cursor::decode`] but as a request failure.
    pub fn parse(s: &str) -> Result<Cursor, Failure> {
        Cursor::decode(s).ok_or_else(|| fail::validation("invalid_cursor", "query parameter `cursor` is not a valid cursor; pass the `nextCursor` of a previous page unchanged"))
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` by shape (digits where digits go).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let shape = b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[b.len() - 1] == b'Z';
    if !shape {
        return false;
    }
    match &s[19..s.len() - 1] {
        "" => true,
        fraction => fraction.len() >= 2 && fraction.len() <= 10 && fraction.starts_with('.') && fraction[1..].bytes().all(|d| d.is_ascii_digit()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b";

    #[test]
    fn roundtrip() {
        let c = Cursor::new("2024-05-01T10:00:00.000Z", ID);
        assert_eq!(c.encode(), format!("2024-05-01T10:00:00.000Z~{ID}"));
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        let c = Cursor::from_id(ID);
        assert_eq!(c.encode(), ID);
        assert_eq!(Cursor::decode(&c.encode()).unwrap().id, ID);
    }

    #[test]
    fn invalid() {
        for bad in [
            "",
            "not a cursor",
            "key~not-a-uuid",
            &format!("~{ID}"),
            &format!("yesterday~{ID}"),
            &"A".repeat(600),
            &ID.to_ascii_uppercase(),
            &format!("2024-05-01T10:00:00.Z~{ID}"),
            &format!("2024-05-01 10:00:00Z~{ID}"),
        ] {
            assert!(Cursor::decode(bad).is_none(), "{bad}");
        }
    }
}
