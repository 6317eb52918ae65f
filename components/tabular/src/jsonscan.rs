//! Finds the elements of a top-level JSON array one at a time, so a large
//! JSON file can be ingested window by window. The scanner only finds where
//! each element starts and ends (strings, escapes and nesting); the caller
//! parses each element with serde_json.

#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// An element spans `start..end`; the next scan starts at `next`.
    /// `closed` is true when the element was the last one (`]` followed it;
    /// `next` is then just after the `]`).
    Element { start: usize, end: usize, next: usize, closed: bool },
    /// The array closed at `next - 1`; only whitespace may follow.
    End { next: usize },
    /// The window ends inside an element: read more bytes first.
    NeedMore,
    /// The text is not a JSON array.
    Invalid(String),
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// Position after the opening `[` (skipping a BOM and whitespace).
pub fn open(b: &[u8], eof: bool) -> Result<Option<usize>, String> {
    let mut i = if b.starts_with(&[0xef, 0xbb, 0xbf]) { 3 } else { 0 };
    i = skip_ws(b, i);
    match b.get(i) {
        Some(b'[') => Ok(Some(i + 1)),
        Some(_) => Err("the JSON file must be an array of objects (it does not start with `[`)".into()),
        None if eof => Err("the JSON file is empty".into()),
        None => Ok(None),
    }
}

/// Scans the next element at `pos` (just after `[` or a `,`). `first` is true
/// when no element has been seen yet (so `]` may close an empty array).
pub fn next(b: &[u8], pos: usize, first: bool, eof: bool) -> Step {
    let start = skip_ws(b, pos);
    let Some(&c) = b.get(start) else {
        return if eof { Step::Invalid("the JSON array is never closed".into()) } else { Step::NeedMore };
    };
    if c == b']' {
        return if first { Step::End { next: start + 1 } } else { Step::Invalid(format!("unexpected `]` after `,` at byte {start}")) };
    }
    if c == b',' {
        return Step::Invalid(format!("unexpected `,` at byte {start}"));
    }
    // Find the element's end.
    let mut i = start;
    let mut depth = 0usize;
    let mut in_str = false;
    let end = loop {
        let Some(&c) = b.get(i) else {
            return if eof { Step::Invalid("the JSON array is never closed".into()) } else { Step::NeedMore };
        };
        if in_str {
            match c {
                b'\\' => i += 1,
                b'"' => {
                    in_str = false;
                    if depth == 0 {
                        break i + 1;
                    }
                }
                _ => {}
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        break i + 1;
                    }
                }
                b']' | b',' if depth == 0 => break i,
                b' ' | b'\t' | b'\r' | b'\n' if depth == 0 => break i,
                _ => {}
            }
        }
        i += 1;
    };
    let after = skip_ws(b, end);
    match b.get(after) {
        Some(b',') => Step::Element { start, end, next: after + 1, closed: false },
        Some(b']') => Step::Element { start, end, next: after + 1, closed: true },
        None if !eof => Step::NeedMore,
        None => Step::Invalid("the JSON array is never closed".into()),
        Some(_) => Step::Invalid(format!("expected `,` or `]` at byte {after}")),
    }
}

/// After the array closed: only whitespace may follow.
pub fn trailing_ok(b: &[u8], pos: usize) -> bool {
    skip_ws(b, pos) == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Result<Vec<String>, String> {
        let b = s.as_bytes();
        let mut pos = open(b, true)?.unwrap();
        let mut out = Vec::new();
        loop {
            match next(b, pos, out.is_empty(), true) {
                Step::Element { start, end, next, closed } => {
                    out.push(s[start..end].to_string());
                    pos = next;
                    if closed {
                        assert!(trailing_ok(b, next));
                        return Ok(out);
                    }
                }
                Step::End { next } => {
                    assert!(trailing_ok(b, next));
                    return Ok(out);
                }
                Step::NeedMore => unreachable!(),
                Step::Invalid(e) => return Err(e),
            }
        }
    }

    #[test]
    fn elements() {
        assert_eq!(all("[]").unwrap(), Vec::<String>::new());
        assert_eq!(all(" [ {\"a\":1} , {\"b\":\"x]}\\\"\"} ]\n").unwrap(), vec!["{\"a\":1}", "{\"b\":\"x]}\\\"\"}"]);
        assert_eq!(all("[1, \"s\", [2,3], {\"n\":{\"m\":[]}}]").unwrap(), vec!["1", "\"s\"", "[2,3]", "{\"n\":{\"m\":[]}}"]);
        assert!(all("{\"a\":1}").is_err());
        assert!(all("[{\"a\":1}").is_err());
        assert!(all("[{\"a\":1} {\"b\":2}]").is_err());
        assert!(all("[,]").is_err());
    }

    #[test]
    fn windows() {
        let s = b"[{\"a\":1},{\"b\":2}]";
        assert_eq!(next(&s[..12], 9, false, false), Step::NeedMore);
        assert_eq!(next(s, 1, true, true), Step::Element { start: 1, end: 8, next: 9, closed: false });
    }
}
