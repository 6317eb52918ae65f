//! Standard base64 (RFC 4648 §4, alphabet `A-Z a-z 0-9 + /`, `=` padding),
//! decoded piece by piece so a large upload never needs a second full copy.
//! The `base64` crate decodes; this module keeps the acceptance rules and
//! the messages the API has always given.
//!
//! Only the canonical form is accepted: the length is a multiple of 4,
//! padding appears only at the end (at most two `=`), and the unused low
//! bits of the last group are zero.

use base64::engine::general_purpose::{GeneralPurpose, NO_PAD, STANDARD};
use base64::{alphabet, DecodeError, Engine as _};

/// The pieces before the last one: standard alphabet, no `=` anywhere.
const UNPADDED: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, NO_PAD);

/// Checks the whole text is canonical base64 and returns the decoded length.
pub fn decoded_len(text: &str) -> Result<usize, String> {
    let b = text.as_bytes();
    if !b.len().is_multiple_of(4) {
        return Err("its length is not a multiple of 4".into());
    }
    if b.is_empty() {
        return Ok(0);
    }
    let pad = b.iter().rev().take_while(|c| **c == b'=').count();
    if pad > 2 {
        return Err("it has more than two `=` padding characters".into());
    }
    Ok(b.len() / 4 * 3 - pad)
}

/// Decodes `piece`, whose length must be a multiple of 4; padding is only
/// allowed when `last` is true. Appends to `out`.
pub fn decode_piece(piece: &[u8], last: bool, out: &mut Vec<u8>) -> Result<(), String> {
    if !piece.len().is_multiple_of(4) {
        return Err("its length is not a multiple of 4".into());
    }
    let engine = if last { &STANDARD } else { &UNPADDED };
    let before = out.len();
    engine.decode_vec(piece, out).map_err(|e| {
        out.truncate(before);
        reason(piece, last, e)
    })
}

/// The reason a piece is refused, worded as before the crate decoded it.
fn reason(piece: &[u8], last: bool, e: DecodeError) -> String {
    let in_final_group = match e {
        DecodeError::InvalidByte(at, _) | DecodeError::InvalidLastSymbol(at, _) => at + 4 >= piece.len(),
        _ => true,
    };
    if last && in_final_group && piece.ends_with(b"===") {
        return "it has misplaced `=` padding".into();
    }
    match e {
        // Padding before the last piece.
        DecodeError::InvalidPadding if !last => "it contains the invalid character '='".into(),
        DecodeError::InvalidByte(_, c) => format!("it contains the invalid character {:?}", c as char),
        DecodeError::InvalidLastSymbol(..) | DecodeError::InvalidPadding => "it is not canonical (stray bits before the padding)".into(),
        DecodeError::InvalidLength(_) => "its length is not a multiple of 4".into(),
    }
}

/// Decodes a whole canonical text at once (small payloads, e.g. media).
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(decoded_len(text)?);
    decode_piece(text.as_bytes(), true, &mut out)?;
    Ok(out)
}

/// Encodes (tests and fixtures).
pub fn encode(input: &[u8]) -> String {
    STANDARD.encode(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Result<Vec<u8>, String> {
        decode(s)
    }

    #[test]
    fn roundtrip() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let e = encode(s.as_bytes());
            assert_eq!(dec(&e).unwrap(), s.as_bytes());
            assert_eq!(decoded_len(&e).unwrap(), s.len());
        }
        assert_eq!(encode(b"fo"), "Zm8=");
        assert_eq!(encode(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn pieces() {
        let e = encode(b"hello world, this is long");
        let mut out = Vec::new();
        decode_piece(&e.as_bytes()[..8], false, &mut out).unwrap();
        decode_piece(&e.as_bytes()[8..], true, &mut out).unwrap();
        assert_eq!(out, b"hello world, this is long");
    }

    #[test]
    fn rejects() {
        assert!(dec("Zm9").is_err());
        assert!(dec("Zm9=").is_err(), "stray bits");
        assert!(dec("Zm9-").is_err());
        assert!(dec("Zm9=Zm9v").is_err(), "padding in the middle");
        assert!(dec("Zm9v===").is_err());
        assert!(dec("Zm8=").is_ok());
        assert!(dec("Zm+=").is_err(), "stray bits");
        assert!(dec("Zh==").is_err(), "stray bits");
    }

    #[test]
    fn messages_are_the_ones_the_api_has_always_given() {
        let err = |s: &str| dec(s).unwrap_err();
        assert_eq!(err("Zm9"), "its length is not a multiple of 4");
        assert_eq!(err("Zm9v==="), "its length is not a multiple of 4");
        assert_eq!(err("Zm9v===="), "it has more than two `=` padding characters");
        assert_eq!(err("Zm9="), "it is not canonical (stray bits before the padding)");
        assert_eq!(err("Zh=="), "it is not canonical (stray bits before the padding)");
        assert_eq!(err("Zm9-"), "it contains the invalid character '-'");
        assert_eq!(err("Zm9=Zm9v"), "it contains the invalid character '='");
        assert_eq!(err(" Zm9"), "it contains the invalid character ' '");
        assert_eq!(err("Zm9v\nZm9v"), "its length is not a multiple of 4");
        assert_eq!(err("Zm9vZm\nv"), "it contains the invalid character '\\n'");
        // Piece by piece: no padding before the last piece, and more than
        // two `=` in the last group is misplaced padding.
        let piece = |s: &str, last: bool| decode_piece(s.as_bytes(), last, &mut Vec::new());
        assert_eq!(piece("Zm8=", false).unwrap_err(), "it contains the invalid character '='");
        assert_eq!(piece("Zm8=", true), Ok(()));
        assert_eq!(piece("Z===", true).unwrap_err(), "it has misplaced `=` padding");
        assert_eq!(piece("-===", true).unwrap_err(), "it has misplaced `=` padding");
        assert_eq!(piece("Zm-vZ===", true).unwrap_err(), "it contains the invalid character '-'");
        // A refused piece leaves what was decoded before it.
        let mut out = b"kept".to_vec();
        assert!(decode_piece(b"Zm9vZm9=", false, &mut out).is_err());
        assert_eq!(out, b"kept");
    }
}
