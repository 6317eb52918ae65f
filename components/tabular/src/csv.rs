//! The CSV/TSV reader shared by contacts import and data-source ingestion:
//! `csv-core` splits the fields; this module adds what the callers rely on
//! and `csv-core` leaves out.
//!
//! * Fields are separated by `,` (or another byte, e.g. tab for TSV, with
//!   [`Reader::with_delimiter`]); records end with CRLF, LF or a lone CR.
//! * A field starting with `"` is quoted: it may contain separators, line
//!   breaks and `""` (an escaped quote).
//! * A leading UTF-8 byte order mark is skipped (once).
//! * A final line break does not start an extra record. An empty line is a
//!   record of one empty field ([`Record::is_blank`]; `csv-core` would skip
//!   it silently, but contacts import numbers rows by line).
//! * Lenient where RFC 4180 is strict: a `"` inside an unquoted field is kept
//!   literally. `csv-core` never reports an error and always parses
//!   something; malformed quoting (text after a closing quote, a quote never
//!   closed) is found by checking each quoted field's raw bytes and reported
//!   on that record via [`Record::error`] so the caller can fail just that
//!   row; the reader always makes progress.
//!
//! The reader borrows the input and yields one record at a time, so memory
//! stays bounded by the largest record. [`Reader::position`] is the byte
//! offset just after the last record returned (after its whole line break,
//! CRLF included), so a caller reading a large file window by window can
//! resume exactly there.

use csv_core::{ReadRecordResult, ReaderBuilder};

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

    /// Checks the quoting of one record. `raw` is its text as read (line
    /// break included) and `ends` where its fields end in what `csv-core`
    /// produced: an unquoted field's raw text is its value; a quoted one's value
    /// is its unescaped content followed by any text after the closing quote
    /// (kept literally), and an unclosed quote runs to the end of the input.
    fn of_record(raw: &[u8], ends: &[usize]) -> Option<Malformed> {
        let (mut p, mut from) = (0, 0);
        for &end in ends {
            let len = end - from;
            from = end;
            if raw.get(p) == Some(&b'"') {
                p += 1;
                let mut inside = 0; // value bytes produced inside the quotes
                loop {
                    let Some(at) = raw[p..].iter().position(|c| *c == b'"') else {
                        return Some(Malformed::UnterminatedQuote);
                    };
                    inside += at;
                    p += at;
                    if raw.get(p + 1) == Some(&b'"') {
                        p += 2; // an escaped quote
                        inside += 1;
                    } else {
                        p += 1; // the closing quote
                        break;
                    }
                }
                if inside < len {
                    return Some(Malformed::TextAfterQuote);
                }
            } else {
                p += len;
            }
            p += 1; // the separator or line break
        }
        None
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
    core: csv_core::Reader,
    /// The current record's unescaped fields, one after another.
    out: Vec<u8>,
    /// The end of each field in `out`.
    ends: Vec<usize>,
}

impl<'a> Reader<'a> {
    pub fn new(src: &'a str) -> Self {
        Self::with_delimiter(src, b',')
    }

    /// A reader whose fields are separated by `delim` (an ASCII byte other
    /// than `"`, CR or LF).
    pub fn with_delimiter(src: &'a str, delim: u8) -> Self {
        let pos = if src.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
        let mut core = ReaderBuilder::new().delimiter(delim).quote(b'"').double_quote(true).build();
        // csv-core strips a byte order mark from the input of its first
        // call; it is already skipped here, so a first call that reads
        // nothing (no room for output) keeps it from taking a second one.
        let _ = core.read_record(b"x", &mut [], &mut [0]);
        Reader { src, pos, core, out: vec![0; 4 << 10], ends: vec![0; 64] }
    }

    /// Byte offset just after the last record returned (after its line break).
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl Iterator for Reader<'_> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        let b = self.src.as_bytes();
        let blank_end = match b.get(self.pos)? {
            b'\n' => self.pos + 1,
            b'\r' if b.get(self.pos + 1) == Some(&b'\n') => self.pos + 2,
            b'\r' => self.pos + 1,
            _ => 0,
        };
        if blank_end > 0 {
            // An empty line. csv-core would skip it, so it never sees one:
            // every record it is handed starts with another byte.
            self.pos = blank_end;
            return Some(Record { fields: vec![String::new()], error: None });
        }
        let start = self.pos;
        let (mut nout, mut nend) = (0, 0);
        loop {
            let (res, i, o, e) = self.core.read_record(&b[self.pos..], &mut self.out[nout..], &mut self.ends[nend..]);
            self.pos += i;
            nout += o;
            nend += e;
            match res {
                // The input ran out: the next call, with nothing left, ends the record.
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => self.out.resize(self.out.len() * 2, 0),
                ReadRecordResult::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                ReadRecordResult::Record | ReadRecordResult::End => break,
            }
        }
        let raw = &b[start..self.pos];
        let (out, ends) = (&self.out[..nout], &self.ends[..nend]);
        let error = if raw.contains(&b'"') { Malformed::of_record(raw, ends) } else { None };
        let mut from = 0;
        let fields = ends
            .iter()
            .map(|&end| {
                // Fields are split at ASCII bytes of valid UTF-8 and lose
                // only ASCII quotes, so they stay valid UTF-8.
                let f = String::from_utf8_lossy(&out[from..end]).into_owned();
                from = end;
                f
            })
            .collect();
        // csv-core ends a record at a CR and would skip the LF of a CRLF at
        // the start of the next call; take it now so `position` is after it.
        if b.get(self.pos - 1) == Some(&b'\r') && b.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
        }
        Some(Record { fields, error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(s: &str) -> Vec<Vec<String>> {
        Reader::new(s)
            .map(|r| {
                assert_eq!(r.error, None, "{s:?}");
                r.fields
            })
            .collect()
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
    fn edge_cases_kept_from_the_hand_written_reader() {
        // Only the first byte order mark is skipped; a BOM alone is no record.
        assert_eq!(rows("\u{feff}\u{feff}a,b\n"), v(&[&["\u{feff}a", "b"]]));
        assert_eq!(rows("\u{feff}"), v(&[]));
        // Blank lines are records (contacts import numbers rows by line),
        // whatever the line breaks; a CRLF is one break.
        let recs: Vec<Record> = Reader::new("\u{feff}\r\na\r\n\r\n\n\rb\r\r\n").collect();
        let blank: Vec<bool> = recs.iter().map(Record::is_blank).collect();
        assert_eq!(blank, vec![true, false, true, true, true, false, true]);
        // A quote is only special at the start of a field.
        assert_eq!(rows("a\"b\"\"c, \"d\"\n"), v(&[&["a\"b\"\"c", " \"d\""]]));
        // Trailing separators give empty fields.
        assert_eq!(rows("a,\n,\r\n"), v(&[&["a", ""], &["", ""]]));
    }

    #[test]
    fn malformed_quoting_details() {
        let one = |s: &str| Reader::new(s).next().unwrap();
        // Text after the closing quote (quotes in it are literal), reported
        // once per record, the first problem wins.
        let r = one("\"ab\"c\"d\",\"x\"y\n");
        assert_eq!((r.fields, r.error), (vec!["abc\"d\"".to_string(), "xy".into()], Some(Malformed::TextAfterQuote)));
        assert_eq!(one("\"ab\" ,x").error, Some(Malformed::TextAfterQuote));
        assert_eq!(one("\"ab\"\"\"").fields, vec!["ab\""], "an escaped quote then the closing one");
        assert_eq!(one("\"ab\"\"\"").error, None);
        // An escaped quote is not a closing one: this quote runs to the end.
        let r = one("x,\"ab\"\"\nc");
        assert_eq!((r.fields, r.error), (vec!["x".to_string(), "ab\"\nc".into()], Some(Malformed::UnterminatedQuote)));
        assert_eq!(one("\"").error, Some(Malformed::UnterminatedQuote));
        assert_eq!(one("\"\"").error, None);
        // Good quoting around bad quoting.
        let recs: Vec<Record> = Reader::new("\"a\"\n\"b\"x\n\"c\"\"\"\n").collect();
        let errors: Vec<_> = recs.iter().map(|r| r.error).collect();
        assert_eq!(errors, vec![None, Some(Malformed::TextAfterQuote), None]);
    }

    #[test]
    fn long_fields_and_wide_records() {
        let long = "é".repeat(10_000);
        let src = format!("{long},\"{long}\"\"\",x\r\n");
        let mut r = Reader::new(&src);
        let rec = r.next().unwrap();
        assert_eq!(rec.fields, vec![long.clone(), format!("{long}\""), "x".into()]);
        assert_eq!(rec.error, None);
        assert_eq!(r.position(), src.len());
        let wide: Vec<String> = (0..500).map(|i| i.to_string()).collect();
        let src = wide.join("\t") + "\n";
        assert_eq!(Reader::with_delimiter(&src, b'\t').next().unwrap().fields, wide);
    }

    #[test]
    fn positions_resume_a_window() {
        // A window cut anywhere: records that end before the cut are the
        // same as in the whole text, and `position` lands after each one.
        let src = "h1,h2\r\n\"a\r\nb\",1\r\n\r\nc,\"2\"\"\"\nd,3";
        let all: Vec<(Record, usize)> = {
            let mut r = Reader::new(src);
            std::iter::from_fn(|| r.next().map(|x| (x, r.position()))).collect()
        };
        assert_eq!(all.iter().map(|(_, p)| *p).collect::<Vec<_>>(), vec![7, 17, 19, 27, 30]);
        for cut in 0..src.len() {
            let mut r = Reader::new(&src[..cut]);
            let mut resumed = Vec::new();
            while let Some(rec) = r.next() {
                if r.position() >= cut {
                    break;
                }
                resumed.push((rec, r.position()));
            }
            assert_eq!(resumed[..], all[..resumed.len()], "cut at {cut}");
        }
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

/// Appends one record as a CSV line (`csv-core`'s writer: RFC 4180 quoting
/// where needed, LF end). A record with no text at all (one empty field) is
/// written as `""` (the hand-written writer wrote an empty line; the
/// spreadsheet conversion, the one caller, never writes such a record).
pub fn write_record(out: &mut String, fields: &[String]) {
    let mut w = csv_core::Writer::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut push = |buf: &[u8]| out.push_str(&String::from_utf8_lossy(buf));
    for (i, f) in fields.iter().enumerate() {
        let mut tail = [0u8; 4];
        if i > 0 {
            let (_, n) = w.delimiter(&mut tail);
            push(&tail[..n]);
        }
        // The most a field can take: every byte a quote, plus two quotes.
        buf.resize(2 * f.len() + 2, 0);
        let (_, _, n) = w.field(f.as_bytes(), &mut buf);
        push(&buf[..n]);
    }
    let mut tail = [0u8; 4];
    let (_, n) = w.terminator(&mut tail);
    push(&tail[..n]);
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

    #[test]
    fn output() {
        let line = |fields: &[&str]| {
            let mut s = String::new();
            super::write_record(&mut s, &fields.iter().map(|f| f.to_string()).collect::<Vec<_>>());
            s
        };
        assert_eq!(line(&["a", "b c", "", "é"]), "a,b c,,é\n");
        assert_eq!(line(&["a,b", "say \"hi\"", "x\ry", "\"", "tab\tok"]), "\"a,b\",\"say \"\"hi\"\"\",\"x\ry\",\"\"\"\",tab\tok\n");
        assert_eq!(line(&["", "x"]), ",x\n");
        assert_eq!(line(&["x", ""]), "x,\n");
        // The one change from the hand-written writer: no text at all is
        // `""`, not an empty line (the spreadsheet conversion never writes one).
        assert_eq!(line(&[""]), "\"\"\n");
    }
}
