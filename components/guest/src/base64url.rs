//! Unpadded base64url (RFC 4648 §5), enough for opaque cursors: the
//! `base64` crate's URL-safe engine without padding, which also refuses
//! stray low bits in the last character (a non-canonical encoding).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

pub fn encode(input: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(input)
}

/// Decodes unpadded base64url; `None` on any invalid character or length.
pub fn decode(input: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(input).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        for s in ["", "f", "fo", "foo", "foob", "fooba", "foobar", "\u{ff}\u{fe}|x"] {
            assert_eq!(decode(&encode(s.as_bytes())).unwrap(), s.as_bytes());
        }
        assert_eq!(encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(encode(b"fo"), "Zm8");
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn rejects_garbage() {
        assert!(decode("Zm9=").is_none());
        assert!(decode("Z").is_none());
        assert!(decode("Zm9v+").is_none());
        assert!(decode("Zm8").is_some());
        assert!(decode("Zm9").is_none(), "non-canonical trailing bits");
        assert!(decode("Zm-").is_none(), "non-canonical trailing bits");
        assert!(decode("Zm8=").is_none(), "no padding");
        assert!(decode("Zm 8").is_none());
        assert!(decode("Zm+8").is_none(), "standard alphabet");
        assert_eq!(decode("").unwrap(), b"");
    }
}
