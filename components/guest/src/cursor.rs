//! Opaque page cursors: base64url (unpadded) of `"<sort key>|<id>"`.
//!
//! The id is the tiebreaker (a uuid); the sort key is whatever the list is
//! ordered by (an RFC 3339 timestamp, or the id itself for id-ordered lists).
//! Clients must treat cursors as opaque. Anything that does not decode is a
//! `400 invalid_cursor`.

use crate::{base64url, fail, is_uuid, Failure};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
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
        base64url::encode(format!("{}|{}", self.key, self.id).as_bytes())
    }

    /// Decodes a cursor; `None` when it is not one this service issued.
    pub fn decode(s: &str) -> Option<Cursor> {
        if s.is_empty() || s.len() > 512 {
            return None;
        }
        let raw = String::from_utf8(base64url::decode(s)?).ok()?;
        let (key, id) = raw.rsplit_once('|')?;
        if !is_uuid(id) || key.is_empty() || key.contains(|c: char| c.is_control()) {
            return None;
        }
        Some(Cursor::new(key, id))
    }

    /// Like [`Cursor::decode`] but as a request failure.
    pub fn parse(s: &str) -> Result<Cursor, Failure> {
        Cursor::decode(s).ok_or_else(|| {
            fail::validation("invalid_cursor", "query parameter `cursor` is not a valid cursor; pass the `nextCursor` of a previous page unchanged")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b";

    #[test]
    fn roundtrip() {
        let c = Cursor::new("2024-05-01T10:00:00.000Z", ID);
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        let c = Cursor::from_id(ID);
        assert_eq!(Cursor::decode(&c.encode()).unwrap().id, ID);
    }

    #[test]
    fn invalid() {
        assert!(Cursor::decode("").is_none());
        assert!(Cursor::decode("not a cursor").is_none());
        assert!(Cursor::decode(&base64url::encode(b"no-separator")).is_none());
        assert!(Cursor::decode(&base64url::encode(b"key|not-a-uuid")).is_none());
        assert!(Cursor::decode(&base64url::encode(format!("|{ID}").as_bytes())).is_none());
        assert!(Cursor::decode(&"A".repeat(600)).is_none());
    }
}
