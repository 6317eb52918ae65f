//! listContacts' orders (the `sort` query parameter) and their keyset
//! cursors.
//!
//! Every order ends with the contact id, so it is total: contacts with the
//! same name (or mobile) keep one order from page to page, and a page
//! resumes strictly after the last contact of the previous one, whatever
//! is created or deleted meanwhile. A cursor says which order made it:
//!
//! * `createdAt` (the default, the order the list always had): the id
//!   itself, as before, so a cursor of an earlier page still works;
//! * `-createdAt`: `-createdAt~<id>`;
//! * `name`, `-name`, `mobile`, `-mobile`: `<sort>~<key>~<id>`, the key
//!   being the last contact's name or mobile in unpadded base64url.
//!
//! Every string matching [`CURSOR_PATTERN`] decodes to a position (a key
//! that is not UTF-8 is read with replacement characters), so the OpenAPI
//! document accepts no cursor the service cannot read; a cursor of another
//! order than the request's `sort` is `400 cursor_sort_mismatch`.

use base64::alphabet::URL_SAFE;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use switchboard_guest::{fail, is_uuid, req, Failure, Request};

/// listContacts' `cursor` pattern (the operation table's copy is checked
/// equal to this one by tests/api/contacts/sort.rs, which reads this file:
/// no code of the area uses it).
#[allow(dead_code)]
pub const CURSOR_PATTERN: &str = "^(?:(?:-createdAt|-?(?:name|mobile)~(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2,3})?)~)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/// Unpadded base64url; decoding accepts the unused low bits of a last
/// character, so every string of the pattern's key form decodes.
const KEY: GeneralPurpose =
    GeneralPurpose::new(&URL_SAFE, GeneralPurposeConfig::new().with_encode_padding(false).with_decode_padding_mode(DecodePaddingMode::RequireNone).with_decode_allow_trailing_bits(true));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    CreatedAt,
    CreatedAtDesc,
    Name,
    NameDesc,
    Mobile,
    MobileDesc,
}

/// The values of `sort`, as the document lists them.
pub const SORTS: [(&str, Sort); 6] =
    [("createdAt", Sort::CreatedAt), ("-createdAt", Sort::CreatedAtDesc), ("name", Sort::Name), ("-name", Sort::NameDesc), ("mobile", Sort::Mobile), ("-mobile", Sort::MobileDesc)];

/// Where a page resumes: after the contact with this key (the name or
/// mobile, for the orders by them) and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    pub key: Option<String>,
    pub id: String,
}

impl Sort {
    /// The request's `sort` (absent or empty: `createdAt`).
    pub fn of(req: &Request) -> Result<Sort, Failure> {
        match req::query_nonempty(req, "sort") {
            None => Ok(Sort::CreatedAt),
            Some(v) => SORTS.iter().find(|(name, _)| *name == v).map(|(_, s)| *s).ok_or_else(|| {
                let names: Vec<&str> = SORTS.iter().map(|(n, _)| *n).collect();
                fail::validation("invalid_sort", format!("query parameter `sort` must be one of {}", names.join(", ")))
            }),
        }
    }

    pub fn name(self) -> &'static str {
        SORTS.iter().find(|(_, s)| *s == self).map(|(n, _)| *n).unwrap_or("createdAt")
    }

    fn descending(self) -> bool {
        matches!(self, Sort::CreatedAtDesc | Sort::NameDesc | Sort::MobileDesc)
    }

    /// The ordering column before the id (None: the id alone). Names
    /// order A to Z in either case (SQLite's NOCASE; other letters by code
    /// point), as the index of migration 0041 does.
    fn key_column(self) -> Option<&'static str> {
        match self {
            Sort::CreatedAt | Sort::CreatedAtDesc => None,
            Sort::Name | Sort::NameDesc => Some("c.name COLLATE NOCASE"),
            Sort::Mobile | Sort::MobileDesc => Some("c.mobile"),
        }
    }

    /// The key of a contact row in this order: its name or mobile.
    pub fn key_of(self, row: &crate::model::ContactRow) -> Option<&str> {
        match self {
            Sort::CreatedAt | Sort::CreatedAtDesc => None,
            Sort::Name | Sort::NameDesc => Some(&row.name),
            Sort::Mobile | Sort::MobileDesc => Some(&row.mobile),
        }
    }

    /// `AND …` resuming after `after` (its parameters numbered from `next`)
    /// and the parameters it takes.
    pub fn resume(self, after: &After, next: usize) -> (String, Vec<String>) {
        let past = if self.descending() { "<" } else { ">" };
        match (self.key_column(), &after.key) {
            // The collation goes on the parameter: `(c.name, c.id) > (?
            // COLLATE NOCASE, ?)` compares as the index orders and lets
            // SQLite start the index range there (with it on the column,
            // it scans the business's names from the first).
            (Some(col), Some(key)) => {
                let column = col.trim_end_matches(" COLLATE NOCASE");
                let collate = &col[column.len()..];
                (format!(" AND ({column}, c.id) {past} (?{next}{collate}, ?{})", next + 1), vec![key.clone(), after.id.clone()])
            }
            _ => (format!(" AND c.id {past} ?{next}"), vec![after.id.clone()]),
        }
    }

    /// ` ORDER BY …` of this order.
    pub fn order_by(self) -> String {
        let dir = if self.descending() { "DESC" } else { "ASC" };
        match self.key_column() {
            Some(col) => format!(" ORDER BY {col} {dir}, c.id {dir}"),
            None => format!(" ORDER BY c.id {dir}"),
        }
    }

    /// The cursor resuming after the contact with `key` and `id`.
    pub fn cursor(self, key: &str, id: &str) -> String {
        let id = id.to_ascii_lowercase();
        match self {
            Sort::CreatedAt => id,
            Sort::CreatedAtDesc => format!("-createdAt~{id}"),
            _ => format!("{}~{}~{id}", self.name(), KEY.encode(key.as_bytes())),
        }
    }

    /// Reads a cursor given with this order: `400 invalid_cursor` if it is
    /// not one, `400 cursor_sort_mismatch` if another order made it.
    pub fn after(self, cursor: &str) -> Result<After, Failure> {
        let (made_by, after) =
            decode(cursor).ok_or_else(|| fail::validation("invalid_cursor", "query parameter `cursor` is not a valid cursor; pass the `nextCursor` of a previous page unchanged"))?;
        if made_by != self {
            return Err(fail::validation(
                "cursor_sort_mismatch",
                format!(
                    "query parameter `cursor` continues a list sorted by {}, not by {}; pass the same `sort` as the page it came from, or no cursor to start from the beginning",
                    made_by.name(),
                    self.name()
                ),
            ));
        }
        Ok(after)
    }
}

/// A cursor's order and position, or None when it is not a cursor.
fn decode(s: &str) -> Option<(Sort, After)> {
    let (head, id) = match s.rsplit_once('~') {
        Some((head, id)) => (Some(head), id),
        None => (None, s),
    };
    if !is_uuid(id) || id.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let id = id.to_string();
    let Some(head) = head else { return Some((Sort::CreatedAt, After { key: None, id })) };
    if head == "-createdAt" {
        return Some((Sort::CreatedAtDesc, After { key: None, id }));
    }
    let (name, key) = head.split_once('~')?;
    let sort = SORTS.iter().find(|(n, s)| *n == name && s.key_column().is_some())?.1;
    if key.len() % 4 == 1 || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return None;
    }
    let bytes = KEY.decode(key).ok()?;
    Some((sort, After { key: Some(String::from_utf8_lossy(&bytes).into_owned()), id }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b";

    #[test]
    fn cursors_round_trip_under_their_own_sort() {
        for (_, sort) in SORTS {
            for key in ["", "Ada Lovelace", "Zoë ~ 李", "+14155550123", "a~b~c"] {
                let c = sort.cursor(key, ID);
                let after = sort.after(&c).unwrap();
                assert_eq!(after.id, ID);
                assert_eq!(after.key.as_deref(), sort.key_column().map(|_| key), "{c}");
                for (_, other) in SORTS {
                    if other != sort {
                        assert_eq!(other.after(&c).unwrap_err().code, "cursor_sort_mismatch", "{c} under {other:?}");
                    }
                }
            }
        }
        assert_eq!(Sort::CreatedAt.cursor("x", ID), ID, "the default order's cursor is the id, as before");
    }

    #[test]
    fn every_string_of_the_key_form_decodes() {
        // Unused low bits, and bytes that are not UTF-8.
        for key in ["QR", "QUJ", "_-8", "gICA", ""] {
            assert!(decode(&format!("name~{key}~{ID}")).is_some(), "{key}");
        }
    }

    #[test]
    fn what_is_not_a_cursor() {
        for bad in [
            "",
            "x",
            &format!("name~{ID}"),
            &format!("name~Q~{ID}"),
            &format!("name~QU=~{ID}"),
            &format!("createdAt~{ID}"),
            &format!("-createdAt~QQ~{ID}"),
            &format!("color~QQ~{ID}"),
            &ID.to_ascii_uppercase(),
            &format!("2024-05-01T10:00:00.000Z~{ID}"),
        ] {
            assert!(decode(bad).is_none(), "{bad}");
        }
    }
}
