//! E.164 mobile numbers.
//!
//! Normalisation removes spaces (incl. tabs/NBSP), dashes, dots and
//! parentheses; the result must match `^\+[1-9][0-9]{7,14}$` (the `E164`
//! schema). A leading `00` international prefix is *not* rewritten: callers
//! must send the `+`.

/// True when `s` already is canonical E.164: `+`, a digit 1-9, then 7-14 digits.
pub fn is_e164(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 9 && b.len() <= 16 && b[0] == b'+' && (b'1'..=b'9').contains(&b[1]) && b[2..].iter().all(u8::is_ascii_digit)
}

/// Removes the separators people type inside phone numbers.
pub fn strip_separators(input: &str) -> String {
    input.chars().filter(|c| !(c.is_whitespace() || matches!(c, '-' | '.' | '(' | ')' | '\u{2010}'..='\u{2015}'))).collect()
}

/// Normalises `input` to canonical E.164, or `None` if it is not a valid number.
pub fn normalize(input: &str) -> Option<String> {
    let s = strip_separators(input);
    is_e164(&s).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid() {
        assert_eq!(normalize("+14155550123").as_deref(), Some("+14155550123"));
        assert_eq!(normalize(" +1 (415) 555-0123 ").as_deref(), Some("+14155550123"));
        assert_eq!(normalize("+44.20.7946.0958").as_deref(), Some("+442079460958"));
        assert_eq!(normalize("+12345678").as_deref(), Some("+12345678"));
        assert_eq!(normalize("+123456789012345").as_deref(), Some("+123456789012345"));
    }

    #[test]
    fn invalid() {
        for s in ["", "+", "14155550123", "+04155550123", "+1234567", "+1234567890123456", "+1415555O123", "++14155550123", "+1 415 555 0123 x12"] {
            assert_eq!(normalize(s), None, "{s}");
        }
    }
}
