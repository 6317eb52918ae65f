//! A small streaming RFC 4180 CSV reader (moved here from the contacts
//! component so contacts import and data-source ingestion share it).
//!
//! * Fields are separated by `,` (or another byte, e.g. tab for TSV, with
//!   [`Reader::with_delimiter`]); records end with CRLF, LF or a lone CR.
//! * A field starting with `"` is quoted: it may contain separators, line
//!   breaks and `""` (an escaped quote).
//! * A leading UTF-8 byte order mark is skipped.
//! * A final line break does not start an extra record.
//! * Lenient where RFC 4180 is strict: a `"` inside an unquoted field is kept
//!   literally. Malformed quoting (text after a closing quote, a quote never
//!   closed) is reported on that record via [`Record::error`] so the caller can
//!   fail just that row; the reader always makes progress.
//!
//! The reader borrows the input and yields one record at a time, so memory
//! stays bounded by the largest record. [`Reader::position`] is the byte
//! offset just after the last record returned, so a caller reading a large
//! file window by window can resume exactly there.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// A quoted field's closing quote is followed by something other than `,` or a line break.
    TextAfterQuote,
    /// A quoted field is never closed (it runs to the end of the input).
    UnterminatedQuote,
}

impl Malformed {
    pub fn message(self) -> &'static str {
        match self {
            Malformed::TextAfterQuote => "malformed CSV: text after a closing quote (quote the whole cell and escape inner quotes as \"\")",
            Malformed::UnterminatedQuote => "malformed CSV: a quoted cell is never closed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub fields: Vec<String>,
    pub error: Option<Malformed>,
}

impl Record {
    /// A record made of a single empty field: an empty line.
    pub fn is_blank(&self) -> bool {
        self.fields.len() == 1 && self.fields[0].is_empty() && self.error.is_none()
    }
}

pub struct Reader<'a> {
    src: &'a str,
    pos: usize,
    delim: u8,
}

impl<'a> Reader<'a> {
    pub fn new(src: &'a str) -> Self {
        Self::with_delimiter(src, b',')
    }

    /// A reader whose fields are separated by `delim` (an ASCII byte other
    /// than `"`, CR or LF).
    pub fn with_delimiter(src: &'a str, delim: u8) -> Self {
        let pos = if src.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
        Reader { src, pos, delim }
    }

    /// Byte offset just after the last record returned (after its line break).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Index of the next `,`, `\r` or `\n` at or after `from` (or the end).
    fn field_end(&self, from: usize) -> usize {
        self.src.as_bytes()[from..]
            .iter()
            .position(|b| *b == self.delim || matches!(b, b'\r' | b'\n'))
            .map_or(self.src.len(), |i| from + i)
    }
}

impl Iterator for Reader<'_> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        let b = self.src.as_bytes();
        if self.pos >= b.len() {
            return None;
        }
        let mut fields = Vec::new();
        let mut error = None;
        loop {
            let mut field = String::new();
            if b.get(self.pos) == Some(&b'"') {
                self.pos += 1;
                loop {
                    match b[self.pos..].iter().position(|c| *c == b'"') {
                        None => {
                            field.push_str(&self.src[self.pos..]);
                            self.pos = b.len();
                            error.get_or_insert(Malformed::UnterminatedQuote);
                            break;
                        }
                        Some(i) => {
                            let q = self.pos + i;
                            field.push_str(&self.src[self.pos..q]);
                            if b.get(q + 1) == Some(&b'"') {
                                field.push('"');
                                self.pos = q + 2;
                            } else {
                                self.pos = q + 1;
                                break;
                            }
                        }
                    }
                }
                if !matches!(b.get(self.pos), None | Some(b'\r' | b'\n')) && b.get(self.pos) != Some(&self.delim) {
                    error.get_or_insert(Malformed::TextAfterQuote);
                    let end = self.field_end(self.pos);
                    field.push_str(&self.src[self.pos..end]);
                    self.pos = end;
                }
            } else {
                let end = self.field_end(self.pos);
                field.push_str(&self.src[self.pos..end]);
                self.pos = end;
            }
            fields.push(field);
            match b.get(self.pos) {
                Some(c) if *c == self.delim => self.pos += 1,
                Some(b'\r') => {
                    self.pos += 1;
                    if b.get(self.pos) == Some(&b'\n') {
                        self.pos += 1;
                    }
                    break;
                }
                Some(b'\n') => {
                    self.pos += 1;
                    break;
                }
                _ => break,
            }
        }
        Some(Record { fields, error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<Vec<String>> {
        Reader::new(s).map(|r| {
            assert_eq!(r.error, None, "{s:?}");
            r.fields
        }).collect()
    }

    fn v(x: &[&[&str]]) -> Vec<Vec<String>> {
        x.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect()
    }

    #[test]
    fn simple() {
        assert_eq!(rows("a,b,c\n1,2,3\n"), v(&[&["a", "b", "c"], &["1", "2", "3"]]));
        assert_eq!(rows("a,b\r\n1,2"), v(&[&["a", "b"], &["1", "2"]]));
        assert_eq!(rows("a\r1\r"), v(&[&["a"], &["1"]]));
        assert_eq!(rows(""), v(&[]));
        assert_eq!(rows(",\n"), v(&[&["", ""]]));
        assert_eq!(rows("a,\n,b"), v(&[&["a", ""], &["", "b"]]));
    }

    #[test]
    fn quotes() {
        assert_eq!(rows("\"a,b\",\"c\"\"d\"\n"), v(&[&["a,b", "c\"d"]]));
        assert_eq!(rows("\"line1\r\nline2\",x\r\ny,z\r\n"), v(&[&["line1\r\nline2", "x"], &["y", "z"]]));
        assert_eq!(rows("\"\",\"\"\"\""), v(&[&["", "\""]]));
        assert_eq!(rows("ab\"c,d"), v(&[&["ab\"c", "d"]]), "lenient inner quote");
        assert_eq!(rows("\"é, ü\",日本"), v(&[&["é, ü", "日本"]]));
    }

    #[test]
    fn bom_and_blank_lines() {
        assert_eq!(rows("\u{feff}mobile,name\n"), v(&[&["mobile", "name"]]));
        let recs: Vec<Record> = Reader::new("a\n\nb\n").collect();
        assert_eq!(recs.len(), 3);
        assert!(recs[1].is_blank());
        assert!(!recs[0].is_blank());
    }

    #[test]
    fn malformed() {
        let recs: Vec<Record> = Reader::new("\"ab\"c,d\nx,y\n").collect();
        assert_eq!(recs[0].error, Some(Malformed::TextAfterQuote));
        assert_eq!(recs[0].fields, vec!["abc".to_string(), "d".to_string()]);
        assert_eq!(recs[1].fields, vec!["x".to_string(), "y".to_string()]);
        let recs: Vec<Record> = Reader::new("a,\"open\nrest,of,file\n").collect();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].error, Some(Malformed::UnterminatedQuote));
    }

    #[test]
    fn tabs_and_positions() {
        let src = "a\tb\n\"x\ty\"\tz\r\nlast";
        let mut r = Reader::with_delimiter(src, b'\t');
        assert_eq!(r.next().unwrap().fields, vec!["a", "b"]);
        assert_eq!(r.position(), 4);
        assert_eq!(r.next().unwrap().fields, vec!["x\ty", "z"]);
        assert_eq!(&src[r.position()..], "last");
        assert_eq!(r.next().unwrap().fields, vec!["last"]);
        assert_eq!(r.position(), src.len());
    }

    #[test]
    fn large_input_is_fast() {
        let mut s = String::from("mobile,name,city\n");
        for i in 0..100_000 {
            s.push_str(&format!("+1415555{i:06},\"Name, {i}\",City\r\n"));
        }
        let n = Reader::new(&s).count();
        assert_eq!(n, 100_001);
    }
}

/// Appends one record as a CSV line (RFC 4180 quoting where needed, LF end).
pub fn write_record(out: &mut String, fields: &[String]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if f.contains([',', '"', '\r', '\n']) {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod write_tests {
    #[test]
    fn roundtrip() {
        let rec = vec!["a,b".to_string(), "say \"hi\"".into(), "line\nbreak".into(), "".into()];
        let mut s = String::new();
        super::write_record(&mut s, &rec);
        assert_eq!(super::Reader::new(&s).next().unwrap().fields, rec);
    }
}
