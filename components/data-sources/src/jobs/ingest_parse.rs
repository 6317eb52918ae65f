//! The parse phase of `data-sources.ingest`: reading a window of the stored
//! chunks from the cursor, CSV/TSV and JSON rows, and the one-step
//! spreadsheet → CSV conversion.

use serde_json::value::RawValue;
use switchboard_guest::db;
use switchboard_guest::job_kinds::data_sources as cursor;
use switchboard_guest::{params, Failure};
use switchboard_tabular::{csv, infer, jsonscan, xlsx};

use super::ingest::{finish_parse, Payload, Step, Stop, Version, STEP_BYTES, STEP_ROWS};
use super::ingest_batch::{batch, Batch};

/// Largest single row a window may grow to.
const MAX_WINDOW: usize = 8 << 20;
/// Largest spreadsheet converted in one step.
const MAX_SPREADSHEET: i64 = xlsx::MAX_FILE_BYTES as i64;

/// Bytes `[start, end)` of a chunk stream.
fn read_window(v: &Version, stream: i64, start: u64, end: u64) -> Result<Vec<u8>, Failure> {
    let cs = v.chunk_size as u64;
    if end <= start {
        return Ok(Vec::new());
    }
    let (first, last) = (start / cs, (end - 1) / cs);
    let rows: Vec<(i64, Vec<u8>)> = db::query_as(
        "SELECT seq, data FROM ingestion_chunks WHERE version_id = ?1 AND stream = ?2 AND seq BETWEEN ?3 AND ?4 AND business_id = ?5 ORDER BY seq",
        &params![&v.id, stream, first as i64, last as i64, &v.biz],
    )?;
    let mut out = Vec::with_capacity((end - start) as usize);
    for (seq, data) in rows {
        let base = seq as u64 * cs;
        let from = start.saturating_sub(base) as usize;
        let to = ((end - base) as usize).min(data.len());
        if from < to {
            out.extend_from_slice(&data[from..to]);
        }
    }
    Ok(out)
}

pub fn parse_step(v: &Version, p: Payload) -> Step<Option<Payload>> {
    match p.fmt.as_deref() {
        Some("csv") => delimited(v, p, b','),
        Some("tsv") => delimited(v, p, b'\t'),
        Some("json") => json(v, p),
        other => Err(Stop::Fail(format!("unsupported format `{}`", other.unwrap_or("")))),
    }
}

fn delimited(v: &Version, mut p: Payload, delim: u8) -> Step<Option<Payload>> {
    let mut want = STEP_BYTES;
    loop {
        let end = (p.offset + want as u64).min(p.size);
        let eof = end == p.size;
        let window = read_window(v, p.stream, p.offset, end)?;
        let text = match std::str::from_utf8(&window) {
            Ok(s) => s,
            Err(e) if e.error_len().is_none() && !eof => std::str::from_utf8(&window[..e.valid_up_to()]).unwrap(),
            Err(e) => {
                return Err(Stop::Fail(format!(
                    "the file is not valid UTF-8 text (invalid byte at offset {}); save it as UTF-8 {}",
                    p.offset + e.valid_up_to() as u64,
                    if delim == b',' { "CSV" } else { "TSV" }
                )))
            }
        };
        let whole = eof && text.len() == window.len();
        let mut b = batch(v, &p)?;
        let mut reader = csv::Reader::with_delimiter(text, delim);
        let mut consumed = 0usize;
        let mut any = false;
        while let Some(rec) = reader.next() {
            let pos = reader.position();
            if pos >= text.len() && !whole {
                break; // the record may continue in the next window
            }
            consumed = pos;
            any = true;
            if !p.started {
                if rec.fields.iter().all(|f| f.trim().is_empty()) {
                    continue; // blank lines before the header
                }
                for name in &rec.fields {
                    b.add_column(name.trim())?;
                }
                for (position, sd) in &p.sheet_dates {
                    if let Some(c) = b.cols.get_mut(*position) {
                        c.stats.sheet_date = Some(*sd);
                    }
                }
                p.started = true;
                continue;
            }
            if rec.is_blank() {
                continue;
            }
            p.row += 1;
            let n = p.row;
            if let Some(m) = rec.error {
                b.issues.push((Some(n), None, m.message().to_string()));
            }
            if rec.fields.len() != b.cols.len() {
                b.issues.push((Some(n), None, format!("ragged row: {} cells, the header has {} columns", rec.fields.len(), b.cols.len())));
            }
            for (c, cell) in b.cols.iter_mut().zip(&rec.fields) {
                c.stats.add(cell);
            }
            for c in b.cols.iter_mut().skip(rec.fields.len()) {
                c.stats.add("");
            }
            let cells: Vec<Option<&str>> = rec.fields.iter().map(|f| Some(f.as_str())).collect();
            b.push_row(n, serde_json::to_string(&rec.fields).unwrap(), &cells);
            if b.rows.len() >= STEP_ROWS || consumed >= STEP_BYTES {
                break;
            }
        }
        if !any && !whole {
            if want >= MAX_WINDOW {
                return Err(Stop::Fail(format!("a row starting at byte {} is larger than {} MiB", p.offset, MAX_WINDOW >> 20)));
            }
            want *= 2;
            continue;
        }
        p.offset += consumed as u64;
        let done = whole && (consumed == text.len() || !any);
        b.save(&mut p)?;
        if done {
            if !p.started {
                return Err(Stop::Fail("the file is empty (no header row)".into()));
            }
            return finish_parse(v, p);
        }
        return Ok(Some(p));
    }
}

fn json(v: &Version, mut p: Payload) -> Step<Option<Payload>> {
    let mut want = STEP_BYTES;
    loop {
        let end = (p.offset + want as u64).min(p.size);
        let eof = end == p.size;
        let window = read_window(v, p.stream, p.offset, end)?;
        let mut pos = 0usize;
        if !p.started {
            match jsonscan::open(&window, eof).map_err(Stop::Fail)? {
                Some(i) => {
                    pos = i;
                    p.started = true;
                }
                None => {
                    want *= 2;
                    continue;
                }
            }
        }
        let mut b = batch(v, &p)?;
        let mut done = false;
        let mut progressed = pos > 0;
        loop {
            match jsonscan::next(&window, pos, p.row == 0, eof) {
                jsonscan::Step::Element { start, end, next, closed } => {
                    progressed = true;
                    pos = next;
                    p.row += 1;
                    json_row(&mut b, p.row, &window[start..end], &mut p.bad_elements)?;
                    if closed {
                        done = true;
                        break;
                    }
                }
                jsonscan::Step::End { next } => {
                    progressed = true;
                    pos = next;
                    done = true;
                    break;
                }
                jsonscan::Step::NeedMore => break,
                jsonscan::Step::Invalid(e) => return Err(Stop::Fail(format!("the JSON file must be an array of objects: {e}"))),
            }
            if b.rows.len() >= STEP_ROWS || pos >= STEP_BYTES {
                break;
            }
        }
        if !progressed && !done {
            if want >= MAX_WINDOW {
                return Err(Stop::Fail(format!("a JSON row starting at byte {} is larger than {} MiB", p.offset, MAX_WINDOW >> 20)));
            }
            want *= 2;
            continue;
        }
        if done && eof && !jsonscan::trailing_ok(&window, pos) {
            return Err(Stop::Fail("the JSON file has content after the closing `]`".into()));
        }
        p.offset += pos as u64;
        b.save(&mut p)?;
        if done {
            let total = db::query_one_as::<i64>("SELECT row_count FROM ingestion_versions WHERE business_id = ?1 AND id = ?2", &params![&v.biz, &v.id])?.unwrap_or(0);
            if total == 0 && p.bad_elements > 0 {
                return Err(Stop::Fail("the JSON file must be an array of objects; none of its elements is an object".into()));
            }
            return finish_parse(v, p);
        }
        return Ok(Some(p));
    }
}

/// One element of the array: an object becomes a row (keys add columns);
/// anything else is an issue.
fn json_row(b: &mut Batch, n: i64, raw: &[u8], bad: &mut i64) -> Step<()> {
    use serde::de::{Deserializer, MapAccess, Visitor};
    /// Collects an object's entries with each value's original JSON text.
    struct Entries<'x>(&'x mut Vec<(String, Box<RawValue>)>);
    impl<'de> Visitor<'de> for Entries<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
            while let Some((k, v)) = m.next_entry::<String, Box<RawValue>>()? {
                self.0.push((k, v));
            }
            Ok(())
        }
    }
    if raw.first() != Some(&b'{') {
        let what = match serde_json::from_slice::<serde_json::Value>(raw) {
            Ok(serde_json::Value::Array(_)) => "the element is an array, not an object".to_string(),
            Ok(serde_json::Value::String(_)) => "the element is a string, not an object".to_string(),
            Ok(serde_json::Value::Number(_)) => "the element is a number, not an object".to_string(),
            Ok(serde_json::Value::Bool(_)) => "the element is a boolean, not an object".to_string(),
            Ok(_) => "the element is null, not an object".to_string(),
            Err(e) => e.to_string(),
        };
        b.issues.push((Some(n), None, format!("bad JSON row: {what}")));
        *bad += 1;
        return Ok(());
    }
    let mut entries = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(raw);
    if let Err(e) = de.deserialize_map(Entries(&mut entries)).and_then(|_| de.end()) {
        b.issues.push((Some(n), None, format!("bad JSON row: {e}")));
        *bad += 1;
        return Ok(());
    }
    // Keep each value's original text: strings decoded, everything else
    // (numbers, booleans, nested objects/arrays) exactly as written.
    let mut cells: Vec<Option<String>> = vec![None; b.cols.len()];
    for (k, raw) in entries {
        let text = match raw.get().as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(raw.get()).unwrap_or_default(),
            Some(b'n') => continue, // null: no value
            _ => raw.get().to_string(),
        };
        let i = match b.cols.iter().position(|c| c.name == k) {
            Some(i) => i,
            None => {
                let i = b.add_column(&k)?;
                cells.resize(b.cols.len(), None);
                i
            }
        };
        cells[i] = Some(text);
    }
    for (c, cell) in b.cols.iter_mut().zip(&cells) {
        c.stats.add(cell.as_deref().unwrap_or(""));
    }
    // Rows keep one cell per column known when they were read.
    while cells.last().is_some_and(Option::is_none) {
        cells.pop();
    }
    b.push_row(n, serde_json::to_string(&cells).unwrap(), &cells);
    Ok(())
}

/// Per column of a sheet (below the header): numbers with a date/time
/// format, numbers without one, and the widest date kind seen.
#[derive(Default, Clone, Copy)]
struct DateCount {
    dated: u64,
    plain: u64,
    kind: Option<infer::SheetDateKind>,
}

impl DateCount {
    fn add(&mut self, cell: &str, kind: Option<infer::SheetDateKind>) {
        use infer::SheetDateKind::*;
        match kind {
            Some(k) => {
                self.dated += 1;
                self.kind = Some(match (self.kind, k) {
                    (None, k) => k,
                    (Some(a), b) if a == b => a,
                    // A time among dates, or dates with times: date-time.
                    _ => DateTime,
                });
            }
            None => {
                use infer::Kind::*;
                if matches!(infer::classify(cell), Integer | Number | DigitString | LeadingZero) {
                    self.plain += 1;
                }
            }
        }
    }
}

/// Converts the first worksheet into CSV chunks (stream 1) in this one step;
/// returns the CSV's size and the columns (0-based) whose numbers are all
/// date/time serials by their number format. A column mixing formatted
/// and plain numbers keeps them all as numbers, so no plain number is ever
/// read as a date.
pub fn convert_spreadsheet(v: &Version) -> Step<(u64, Vec<(usize, cursor::SheetDate)>)> {
    if v.size > MAX_SPREADSHEET {
        return Err(Stop::Fail(format!("spreadsheets are limited to {} MiB", MAX_SPREADSHEET >> 20)));
    }
    let zip = read_window(v, 0, 0, v.size as u64)?;
    let cs = v.chunk_size as usize;
    let mut buf: Vec<u8> = Vec::with_capacity(cs * 2);
    let mut line = String::new();
    let mut seq = 0i64;
    let mut total = 0u64;
    let mut store_err: Option<Failure> = None;
    let flush = |buf: &mut Vec<u8>, all: bool, seq: &mut i64| -> Result<(), Failure> {
        while buf.len() >= cs || (all && !buf.is_empty()) {
            let n = buf.len().min(cs);
            let chunk: Vec<u8> = buf.drain(..n).collect();
            db::execute("INSERT INTO ingestion_chunks (business_id, version_id, stream, seq, data) VALUES (?1, ?2, 1, ?3, ?4)", &params![&v.biz, &v.id, *seq, chunk])?;
            *seq += 1;
        }
        Ok(())
    };
    let mut counts: Vec<DateCount> = Vec::new();
    let mut header = true;
    let read = xlsx::read_first_sheet_dated(&zip, &xlsx::DEFAULT_LIMITS, |cells, dates| {
        if !std::mem::take(&mut header) {
            if counts.len() < cells.len() {
                counts.resize(cells.len(), DateCount::default());
            }
            for ((count, cell), kind) in counts.iter_mut().zip(&cells).zip(dates) {
                count.add(cell, *kind);
            }
        }
        line.clear();
        csv::write_record(&mut line, &cells);
        total += line.len() as u64;
        buf.extend_from_slice(line.as_bytes());
        flush(&mut buf, false, &mut seq).map_err(|f| {
            store_err = Some(f);
            "store error".to_string()
        })
    });
    if let Some(f) = store_err {
        return Err(Stop::Store(f));
    }
    let base1904 = read.map_err(Stop::Fail)?;
    flush(&mut buf, true, &mut seq)?;
    if total == 0 {
        return Err(Stop::Fail("the first worksheet is empty".into()));
    }
    let dates = counts.iter().enumerate().filter(|(_, c)| c.dated > 0 && c.plain == 0).filter_map(|(i, c)| Some((i, infer::SheetDate { kind: c.kind?, base1904 }))).collect();
    Ok((total, dates))
}
