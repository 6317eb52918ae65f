//! The `format` keywords our document uses (uuid, date-time, uri, email),
//! checked by hand: each is a few lines, and a regex per format would be
//! slower and say less.

pub(super) fn format_ok(f: &str, s: &str) -> bool {
    match f {
        "uuid" => is_uuid(s),
        "date-time" => is_date_time(s),
        "uri" => is_uri(s),
        "email" => {
            let mut parts = s.splitn(2, '@');
            let (a, b) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            !a.is_empty() && b.contains('.') && !b.starts_with('.') && !s.chars().any(char::is_whitespace)
        }
        _ => true,
    }
}

/// 8-4-4-4-12 hex digits (the components' one rule).
pub use switchboard_formats::is_uuid;

pub fn is_date_time(s: &str) -> bool {
    // RFC 3339: 2026-11-22T10:00:00(.sss)?(Z|+hh:mm)
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let head = digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !head {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    matches!(rest, "Z" | "z")
        || (rest.len() == 6 && matches!(rest.as_bytes()[0], b'+' | b'-') && rest[1..3].bytes().all(|c| c.is_ascii_digit()) && &rest[3..4] == ":" && rest[4..6].bytes().all(|c| c.is_ascii_digit()))
}

/// An absolute URI: a scheme, and for http(s) a non-empty host; no spaces.
pub fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else { return false };
    let scheme_ok = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        let Some(after) = rest.strip_prefix("//") else { return false };
        let authority = after.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or("");
        let host = if host.starts_with('[') { host } else { host.split(':').next().unwrap_or("") };
        return !host.is_empty();
    }
    !rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert!(is_date_time("2026-11-22T10:00:00.123Z"));
        assert!(is_date_time("2026-11-22T10:00:00+01:00"));
        assert!(!is_date_time("2026-11-22 10:00:00"));
        assert!(is_uri("https://example.test/hook?x=1"));
        assert!(!is_uri("https:///nohost"));
        assert!(!is_uri("not a uri"));
    }
}
