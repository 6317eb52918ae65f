//! Standard base64 (RFC 4648 §4, alphabet `A-Z a-z 0-9 + /`, `=` padding),
//! decoded piece by piece so a large upload never needs a second full copy.
//!
//! Only the canonical form is accepted: the length is a multiple of 4,
//! padding appears only at the end (at most two `=`), and the unused low
//! bits of the last group are zero.

fn val(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Checks the whole text is canonical base64 and returns the decoded length.
pub fn decoded_len(text: &str) -> Result<usize, String> {
    let b = text.as_bytes();
    if b.len() % 4 != 0 {
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
    if piece.len() % 4 != 0 {
        return Err("its length is not a multiple of 4".into());
    }
    let groups = piece.len() / 4;
    for (g, quad) in piece.chunks_exact(4).enumerate() {
        let final_group = last && g + 1 == groups;
        let pad = if final_group { quad.iter().rev().take_while(|c| **c == b'=').count() } else { 0 };
        if pad > 2 {
            return Err("it has misplaced `=` padding".into());
        }
        let mut n = 0u32;
        for (i, c) in quad[..4 - pad].iter().enumerate() {
            n |= val(*c).ok_or_else(|| format!("it contains the invalid character {:?}", *c as char))? << (18 - 6 * i);
        }
        match pad {
            0 => out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]),
            1 => {
                if n & 0xff != 0 {
                    return Err("it is not canonical (stray bits before the padding)".into());
                }
                out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8]);
            }
            _ => {
                if n & 0xffff != 0 {
                    return Err("it is not canonical (stray bits before the padding)".into());
                }
                out.push((n >> 16) as u8);
            }
        }
    }
    Ok(())
}

/// Decodes a whole canonical text at once (small payloads, e.g. media).
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(decoded_len(text)?);
    decode_piece(text.as_bytes(), true, &mut out)?;
    Ok(out)
}

/// Encodes (tests and fixtures).
pub fn encode(input: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
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
}
