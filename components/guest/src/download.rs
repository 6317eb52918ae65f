//! Downloads: a raw answer (a file, not the JSON envelope), streamed in
//! pieces when it is large.
//!
//! The first call of a download has no cursor; the component answers the
//! first piece with [`piece`], passing the cursor of the next piece when
//! there is more. The host sends the piece and calls `handle` again with the
//! same request, [`cursor`] set to that cursor, in a fresh instance on the
//! same read snapshot, until a piece comes back without a next cursor. The
//! cursor is the component's own (e.g. a byte offset or the last row id);
//! the host never shows it to the client. A download is a read: a mutation
//! that answers with a piece is refused.
//!
//! ```ignore
//! let start: usize = download::cursor(&req).map_or(Ok(0), |c| c.parse()).map_err(|_| fail::internal("bad_cursor", "bad cursor"))?;
//! let end = (start + download::PIECE_BYTES).min(text.len());
//! let next = (end < text.len()).then(|| end.to_string());
//! download::piece("text/plain; charset=utf-8", Some(&download::attachment("transcript.txt")), text[start..end].into(), next)
//! ```

use crate::bindings::switchboard::platform::types::BodyPiece;
use crate::{HResult, Request, Success};

/// A good size for a piece: each piece costs one fresh instance, so pieces
/// much smaller than this make a download slow; much larger ones make each
/// call hold more memory.
pub const PIECE_BYTES: usize = 256 << 10;

/// A `200` download piece. `content_type` and `disposition` are taken from
/// the first piece only (later pieces may repeat them); `next_cursor` is
/// `None` on the last piece.
pub fn piece(content_type: &str, disposition: Option<&str>, bytes: Vec<u8>, next_cursor: Option<String>) -> HResult<Success> {
    Ok(Success { status: 200, data_json: String::new(), body: Some(BodyPiece { content_type: content_type.to_string(), content_disposition: disposition.map(String::from), bytes, next_cursor }) })
}

/// The cursor the host passes when it asks for a later piece; `None` on the
/// first call.
pub fn cursor(req: &Request) -> Option<&str> {
    req.stream_cursor.as_deref()
}

/// `attachment; filename="…"` for `file_name`. Characters a quoted header
/// value cannot carry (quotes, backslashes, control and non-ASCII
/// characters) become `_`.
pub fn attachment(file_name: &str) -> String {
    let safe: String = file_name.chars().map(|c| if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' { c } else { '_' }).collect();
    format!("attachment; filename=\"{safe}\"")
}

#[cfg(test)]
mod tests {
    use super::attachment;

    #[test]
    fn attachment_names_are_header_safe() {
        assert_eq!(attachment("transcript.txt"), "attachment; filename=\"transcript.txt\"");
        assert_eq!(attachment("a \"b\"\\c\n.csv"), "attachment; filename=\"a _b__c_.csv\"");
        assert_eq!(attachment("résumé.pdf"), "attachment; filename=\"r_sum_.pdf\"");
    }
}
