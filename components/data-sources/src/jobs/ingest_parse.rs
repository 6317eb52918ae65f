//! The parse phase of `data-sources.ingest`: reading a window of the stored
//! chunks from the cursor, CSV/TSV and JSON rows, and the one-step
//! spreadsheet → CSV conversion.

use serde_json::value::RawValue;
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::job_kinds::data_sources as cursor;
use switchboard_guest::{knowledge, Failure, Value};
use switchboard_tabular::{csv, infer, jsonscan, xlsx};

use super::ingest::{add_issues, column_type, finish_parse, interpret_row, load_columns, Column, Payload, Step, Stop, Version, MAX_COLUMNS, STEP_BYTES, STEP_ROWS};

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
    let rows = db::query(
        "SELECT seq, data FROM ingestion_chunks WHERE version_id = ?1 AND stream = ?2 AND seq BETWEEN ?3 AND ?4 AND business_id = ?5 ORDER BY seq",
        &[v.id.as_str().into(), stream.into(), (first as i64).into(), (last as i64).into(), v.biz.as_str().into()],
    )?;
    let mut out = Vec::with_capacity((end - start) as usize);
    for r in rows {
        let base = r.int(0) as u64 * cs;
        let Value::Blob(data) = &r[1] else { panic!("chunk is not a blob") };
        let from = start.saturating_sub(base) as usize;
        let to = ((end - base) as usize).min(data.len());
        if from < to {
            out.extend_from_slice(&data[from..to]);
        }
    }
    Ok(out)
}

struct Batch<'a> {
    v: &'a Version,
    cols: Vec<Column>,
    /// Declared fields: a column whose header matches a declared key or
    /// label (ignoring case) takes its key, type and lookup flag.
    declared: Vec<Declared>,
    new_cols: usize,
    /// (row number, `original`, `interpreted`).
    rows: Vec<(i64, String, Option<String>)>,
    /// The rows as grounding passages (row number, text) and their cells
    /// as lookup keys (column, key, row number; `knowledge.rs`), written
    /// with them: versions are immutable.
    scope: String,
    passages: Vec<(i64, String)>,
    lookups: Vec<(usize, String, i64)>,
    /// Each column's header as passages show it.
    headers: Vec<String>,
    issues: Vec<(Option<i64>, Option<String>, String)>,
    /// The types rows are interpreted with as they are stored (the
    /// cursor's `typed_as`; empty until the first rows suggest them).
    typed_as: Vec<String>,
    /// A cell did not fit `typed_as` (or a column came after it): the
    /// interpret pass will type every row.
    untyped: bool,
    /// Before `typed_as` is known: the rows' cells (by index in `rows`),
    /// interpreted once this batch's kinds suggest the types.
    pending: Vec<(usize, Vec<Option<String>>)>,
}

impl Batch<'_> {
    /// A row: its cells as read (one per column known so far) and their
    /// JSON (`original`).
    fn push_row<C: AsRef<str>>(&mut self, number: i64, original: String, cells: &[Option<C>]) {
        let interpreted = if self.untyped {
            None
        } else if self.typed_as.is_empty() {
            self.pending.push((self.rows.len(), cells.iter().map(|c| c.as_ref().map(|c| c.as_ref().to_string())).collect()));
            None
        } else if self.typed_as.len() != self.cols.len() {
            self.untyped = true;
            None
        } else {
            let types: Vec<&str> = self.typed_as.iter().map(String::as_str).collect();
            let mut misfit = false;
            let text = interpret_row(&self.cols, &types, |i| cells.get(i).and_then(|c| c.as_ref()).map(|c| c.as_ref()), |_, _, _| misfit = true);
            self.untyped |= misfit;
            (!misfit).then_some(text)
        };
        self.rows.push((number, original, interpreted));
        // A passage agents can find once the version is active (`Header: value; …`).
        if self.headers.len() != self.cols.len() {
            self.headers = self.cols.iter().map(|c| knowledge::header(&c.name, &c.key).to_string()).collect();
        }
        let text = knowledge::row_passage(&self.headers, cells);
        if !text.is_empty() {
            self.passages.push((number, text));
        }
        // The cells of lookup columns are keys of the exact `lookup`, by
        // the column's field key (unique per version, so a row never
        // repeats a (key, value)).
        for (i, (c, cell)) in self.cols.iter().zip(cells).enumerate() {
            if c.lookup {
                if let Some(value) = cell.as_ref().and_then(|cell| knowledge::lookup_value(cell.as_ref())) {
                    self.lookups.push((i, value, number));
                }
            }
        }
    }

    fn add_column(&mut self, name: &str) -> Step<usize> {
        if self.cols.len() >= MAX_COLUMNS {
            return Err(Stop::Fail(format!("the file has more than {MAX_COLUMNS} columns")));
        }
        let position = self.cols.len();
        let trimmed = name.trim();
        let derived = infer::field_key(name, position);
        let taken = |cols: &[Column], k: &str| cols.iter().any(|c| c.key.eq_ignore_ascii_case(k));
        let hit =
            self.declared.iter().find(|d| !taken(&self.cols, &d.key) && (trimmed.eq_ignore_ascii_case(&d.key) || trimmed.eq_ignore_ascii_case(d.label.trim()) || derived.eq_ignore_ascii_case(&d.key)));
        let column = match hit {
            Some(d) => Column { position: position as i64, name: name.to_string(), key: d.key.clone(), stats: Default::default(), ty: Some(d.ty.clone()), declared: true, lookup: d.lookup },
            None => {
                let mut key = derived.clone();
                let mut n = 2;
                while taken(&self.cols, &key) || self.declared.iter().any(|d| d.key.eq_ignore_ascii_case(&key)) {
                    let suffix = format!("_{n}");
                    key = format!("{}{suffix}", &derived[..derived.len().min(64 - suffix.len())]);
                    n += 1;
                }
                // Without declared fields the first column is the lookup key.
                let lookup = self.declared.is_empty() && position == 0;
                Column { position: position as i64, name: name.to_string(), key, stats: Default::default(), ty: None, declared: false, lookup }
            }
        };
        self.cols.push(column);
        self.new_cols += 1;
        Ok(position)
    }

    /// The first rows stored: their kinds suggest the types every row is
    /// interpreted with from now on (checked against the decided types
    /// after the parse).
    fn type_pending(&mut self) {
        if self.rows.is_empty() || !self.typed_as.is_empty() || self.untyped {
            return;
        }
        self.typed_as = self.cols.iter().map(column_type).collect();
        let types: Vec<&str> = self.typed_as.iter().map(String::as_str).collect();
        for (at, cells) in std::mem::take(&mut self.pending) {
            let mut misfit = false;
            let text = interpret_row(&self.cols, &types, |i| cells.get(i).and_then(|c| c.as_deref()), |_, _, _| misfit = true);
            if misfit {
                self.untyped = true;
                break;
            }
            self.rows[at].2 = Some(text);
        }
    }

    /// Persists rows, issues, new columns and column stats, and the
    /// interpretation's state in the cursor.
    fn save(mut self, p: &mut Payload) -> Result<(), Failure> {
        self.type_pending();
        if self.untyped {
            // The interpret pass types them all; none keeps a value of types it may not have.
            for row in &mut self.rows {
                row.2 = None;
            }
        }
        p.typed_as = std::mem::take(&mut self.typed_as);
        p.untyped = self.untyped;
        let v = self.v;
        let (biz, id): (Value, Value) = (v.biz.as_str().into(), v.id.as_str().into());
        // Each table's rows go in as one JSON array that SQLite's
        // `json_each` walks (a few statements per step), rather than a
        // statement per row whose every value crosses into the host alone.
        insert_json(
            "INSERT INTO ingestion_rows (business_id, version_id, row_number, original, interpreted) SELECT ?1, ?2, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?3)",
            &[biz.clone(), id.clone()],
            &self.rows,
        )?;
        insert_json(
            "INSERT INTO knowledge_fts (text, scope, business_id, data_source_id, version_id, item) SELECT value ->> 1, ?1, ?2, ?3, ?4, value ->> 0 FROM json_each(?5)",
            &[self.scope.as_str().into(), biz.clone(), v.source_id.as_str().into(), id.clone()],
            &self.passages,
        )?;
        // In key order: neighbouring inserts then land on the same pages
        // of the index.
        let mut lookups: Vec<(&str, &str, i64)> = self.lookups.iter().map(|(c, value, n)| (self.cols[*c].key.as_str(), value.as_str(), *n)).collect();
        lookups.sort_unstable();
        insert_json("INSERT INTO lookup_values (business_id, version_id, field_key, value, row_number) SELECT ?1, ?2, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?3)", &[biz, id], &lookups)?;
        add_issues(v, "parse", &self.issues)?;
        let first_new = self.cols.len() - self.new_cols;
        let inserts: Vec<Vec<Value>> = self.cols[first_new..]
            .iter()
            .map(|c| vec![v.biz.as_str().into(), v.id.as_str().into(), c.position.into(), c.name.as_str().into(), c.key.as_str().into(), c.ty.clone().into(), c.declared.into(), c.lookup.into()])
            .collect();
        db::execute_many("INSERT INTO ingestion_columns (business_id, version_id, position, name, field_key, type, declared, lookup) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &inserts)?;
        let stats: Vec<Vec<Value>> = self.cols.iter().map(|c| vec![v.biz.as_str().into(), v.id.as_str().into(), c.position.into(), serde_json::to_string(&c.stats).unwrap().into()]).collect();
        db::execute_many("UPDATE ingestion_columns SET stats = ?4 WHERE business_id = ?1 AND version_id = ?2 AND position = ?3", &stats)?;
        db::execute(
            "UPDATE ingestion_versions SET row_count = row_count + ?3, updated_at = ?4 WHERE business_id = ?1 AND id = ?2",
            &[v.biz.as_str().into(), v.id.as_str().into(), (self.rows.len() as i64).into(), switchboard_guest::now().into()],
        )?;
        Ok(())
    }
}

/// JSON text per statement of [`insert_json`] (a long row makes one larger).
const JSON_BATCH_BYTES: usize = 256 << 10;

/// Runs `sql` (an `INSERT … SELECT … FROM json_each(?N)`, N the parameter
/// after `fixed`) over `items` as JSON arrays of about
/// [`JSON_BATCH_BYTES`] each.
fn insert_json<T: serde::Serialize>(sql: &str, fixed: &[Value], items: &[T]) -> Result<(), Failure> {
    let mut params = fixed.to_vec();
    let mut buf: Vec<u8> = Vec::new();
    let mut flush = |buf: &mut Vec<u8>| -> Result<(), Failure> {
        buf.push(b']');
        let json = String::from_utf8(std::mem::take(buf)).expect("serde_json writes UTF-8");
        params.push(json.into());
        db::execute(sql, &params)?;
        params.pop();
        Ok(())
    };
    for item in items {
        buf.push(if buf.is_empty() { b'[' } else { b',' });
        serde_json::to_writer(&mut buf, item).expect("rows serialise");
        if buf.len() >= JSON_BATCH_BYTES {
            flush(&mut buf)?;
        }
    }
    if !buf.is_empty() {
        flush(&mut buf)?;
    }
    Ok(())
}

/// A declared field of the source.
struct Declared {
    key: String,
    label: String,
    ty: String,
    lookup: bool,
}

/// The source's declared fields, if it declared any.
fn declared_fields(v: &Version) -> Result<Vec<Declared>, Failure> {
    let declared = db::query_one("SELECT fields_declared FROM data_sources WHERE business_id = ?1 AND id = ?2", &[v.biz.as_str().into(), v.source_id.as_str().into()])?.is_some_and(|r| r.boolean(0));
    if !declared {
        return Ok(Vec::new());
    }
    Ok(db::query(
        "SELECT field_key, label, type, lookup FROM data_source_fields WHERE business_id = ?1 AND data_source_id = ?2 ORDER BY position",
        &[v.biz.as_str().into(), v.source_id.as_str().into()],
    )?
    .into_iter()
    .map(|r| Declared { key: r.text(0), label: r.text(1), ty: r.text(2), lookup: r.boolean(3) })
    .collect())
}

fn batch<'a>(v: &'a Version, p: &Payload) -> Result<Batch<'a>, Failure> {
    Ok(Batch {
        v,
        cols: load_columns(v)?,
        declared: declared_fields(v)?,
        new_cols: 0,
        rows: Vec::new(),
        scope: knowledge::scope_token(&v.source_id, &v.id),
        passages: Vec::new(),
        lookups: Vec::new(),
        headers: Vec::new(),
        issues: Vec::new(),
        typed_as: p.typed_as.clone(),
        untyped: p.untyped,
        pending: Vec::new(),
    })
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
            let total = db::query_one("SELECT row_count FROM ingestion_versions WHERE business_id = ?1 AND id = ?2", &[v.biz.as_str().into(), v.id.as_str().into()])?.map_or(0, |r| r.int(0));
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
            db::execute(
                "INSERT INTO ingestion_chunks (business_id, version_id, stream, seq, data) VALUES (?1, ?2, 1, ?3, ?4)",
                &[v.biz.as_str().into(), v.id.as_str().into(), (*seq).into(), Value::Blob(chunk)],
            )?;
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
