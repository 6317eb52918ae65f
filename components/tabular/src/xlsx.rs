//! Reads the first worksheet of an XLSX/XLSM workbook (a ZIP of XML parts):
//! the `zip` crate opens the archive (stored and deflate entries, no
//! encryption) and `quick-xml` reads the workbook, relationships, styles,
//! shared strings and the sheet.
//!
//! Each cell becomes its stored text: shared and inline strings as written,
//! numbers as their stored decimal text (so dates arrive as the
//! spreadsheet's serial numbers), booleans as `TRUE`/`FALSE`, errors as
//! their code (`#DIV/0!`). Formulas contribute their cached value. Rows
//! without cells are skipped. Beside the text, `read_first_sheet_dated`
//! reports which numeric cells carry a date or time number format (from
//! `xl/styles.xml`: built-in formats 14-22 and 45-47, or a custom format
//! code with date/time tokens) and whether the workbook counts from 1904.

use crate::infer::SheetDateKind;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use std::io::{Cursor, Read};
use zip::CompressionMethod;

/// Caps that keep one conversion step within the component's memory.
pub struct Limits {
    /// Largest decompressed worksheet XML.
    pub max_sheet_bytes: usize,
    /// Largest decompressed shared-strings XML.
    pub max_shared_strings_bytes: usize,
}

/// Largest XLSX/XLSM file accepted: the whole archive is read in one
/// ingestion step (the upload refuses larger ones, the ingest fails them).
pub const MAX_FILE_BYTES: usize = 64 << 20;

pub const DEFAULT_LIMITS: Limits = Limits { max_sheet_bytes: 48 << 20, max_shared_strings_bytes: 16 << 20 };

type Archive<'z> = zip::ZipArchive<Cursor<&'z [u8]>>;

const NOT_ZIP: &str = "the file is not a valid XLSX/XLSM workbook (not a readable ZIP archive)";

fn open(zip: &[u8]) -> Result<Archive<'_>, String> {
    zip::ZipArchive::new(Cursor::new(zip)).map_err(|_| NOT_ZIP.to_string())
}

/// The decompressed part `name`, refused if larger than `limit` (by the
/// size the archive declares, or by what it actually inflates to).
fn read_entry(zip: &mut Archive, name: &str, limit: usize) -> Result<Vec<u8>, String> {
    let i = zip.index_for_name(name).ok_or_else(|| format!("the workbook part `{name}` is missing"))?;
    let size = {
        let raw = zip.by_index_raw(i).map_err(|_| NOT_ZIP.to_string())?;
        if raw.encrypted() {
            return Err("encrypted workbooks are not supported".into());
        }
        match raw.compression() {
            CompressionMethod::Stored | CompressionMethod::Deflated => {}
            #[allow(deprecated)] // the number is what a user can look up
            m => return Err(format!("the workbook uses unsupported ZIP compression method {}", m.to_u16())),
        }
        raw.size()
    };
    if size > limit as u64 {
        return Err(format!("the workbook part `{name}` is {size} bytes uncompressed; at most {limit} are supported"));
    }
    let corrupt = || format!("the workbook part `{name}` is corrupt (deflate data does not decode)");
    let part = zip.by_index(i).map_err(|_| NOT_ZIP.to_string())?;
    let mut out = Vec::with_capacity(size as usize);
    // The reader checks the CRC at the end of the part.
    part.take(limit as u64 + 1).read_to_end(&mut out).map_err(|_| corrupt())?;
    if out.len() > limit {
        return Err(corrupt());
    }
    Ok(out)
}

fn attr(e: &BytesStart, name: &[u8]) -> Option<String> {
    e.attributes().flatten().find(|a| a.key.as_ref() == name || a.key.local_name().as_ref() == name).and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

fn xml_err(part: &str, e: impl std::fmt::Display) -> String {
    format!("the workbook part `{part}` is not valid XML: {e}")
}

/// The path of the first worksheet, from workbook.xml and its relationships,
/// and whether the workbook uses the 1904 date system.
fn first_sheet_path(zip: &mut Archive) -> Result<(String, bool), String> {
    let has = |zip: &Archive, n: &str| zip.index_for_name(n).is_some();
    let fallback = |zip: &Archive| {
        zip.file_names()
            .filter_map(Result::ok)
            .filter(|n| n.starts_with("xl/worksheets/") && n.ends_with(".xml"))
            .min()
            .map(|p| (p.into_owned(), false))
            .ok_or_else(|| "the workbook has no worksheet".to_string())
    };
    if !has(zip, "xl/workbook.xml") || !has(zip, "xl/_rels/workbook.xml.rels") {
        return if has(zip, "[Content_Types].xml") { fallback(zip) } else { Err("the file is not an XLSX/XLSM workbook (no [Content_Types].xml)".into()) };
    }
    let wb = read_entry(zip, "xl/workbook.xml", 8 << 20)?;
    let mut r = Reader::from_reader(wb.as_slice());
    let mut buf = Vec::new();
    let mut rid = None;
    let mut date1904 = false;
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err("xl/workbook.xml", e))? {
            // workbookPr comes before sheets in the schema's order.
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"workbookPr" => {
                date1904 = matches!(attr(&e, b"date1904").as_deref(), Some("1" | "true"));
            }
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"sheet" => {
                rid = attr(&e, b"id");
                break;
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    let Some(rid) = rid else { return fallback(zip).map(|(p, _)| (p, date1904)) };
    let rels = read_entry(zip, "xl/_rels/workbook.xml.rels", 8 << 20)?;
    let mut r = Reader::from_reader(rels.as_slice());
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err("xl/_rels/workbook.xml.rels", e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"Relationship" && attr(&e, b"Id").as_deref() == Some(&rid) => {
                let target = attr(&e, b"Target").unwrap_or_default();
                let path = match target.strip_prefix('/') {
                    Some(abs) => abs.to_string(),
                    None => format!("xl/{target}"),
                };
                return Ok((path, date1904));
            }
            Event::Eof => return fallback(zip).map(|(p, _)| (p, date1904)),
            _ => {}
        }
        buf.clear();
    }
}

fn shared_strings(xml: &[u8]) -> Result<Vec<String>, String> {
    let mut r = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let (mut in_si, mut in_t, mut in_ph) = (false, false, false);
    let mut cur = String::new();
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err("xl/sharedStrings.xml", e))? {
            Event::Start(e) => match e.local_name().as_ref() {
                b"si" => {
                    in_si = true;
                    cur.clear();
                }
                b"t" => in_t = true,
                b"rPh" => in_ph = true,
                _ => {}
            },
            Event::Empty(e) if e.local_name().as_ref() == b"si" => out.push(String::new()),
            Event::End(e) => match e.local_name().as_ref() {
                b"si" => {
                    in_si = false;
                    out.push(std::mem::take(&mut cur));
                }
                b"t" => in_t = false,
                b"rPh" => in_ph = false,
                _ => {}
            },
            Event::Text(t) if in_si && in_t && !in_ph => cur.push_str(&t.unescape().map_err(|e| xml_err("xl/sharedStrings.xml", e))?),
            Event::CData(t) if in_si && in_t && !in_ph => cur.push_str(&String::from_utf8_lossy(&t)),
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}

/// What a number format shows: a built-in id (14-22 and 45-47 are the
/// date and time ones) or, for a custom format, its code.
pub fn date_format_kind(id: u32, code: Option<&str>) -> Option<SheetDateKind> {
    match code {
        Some(code) => format_code_kind(code),
        None => match id {
            14..=17 => Some(SheetDateKind::Date),
            18..=21 | 45..=47 => Some(SheetDateKind::Time),
            22 => Some(SheetDateKind::DateTime),
            _ => None,
        },
    }
}

/// Reads a custom format code's first section for date and time tokens,
/// skipping quoted text, escaped and padding characters and bracketed
/// colours, locales and conditions (`[h]`, `[mm]`, `[ss]` are elapsed
/// time). `m` is minutes right after an hour or right before seconds,
/// otherwise months.
fn format_code_kind(code: &str) -> Option<SheetDateKind> {
    let mut tokens: Vec<char> = Vec::new();
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ';' => break,
            '"' => {
                for q in chars.by_ref() {
                    if q == '"' {
                        break;
                    }
                }
            }
            '\\' | '_' | '*' => {
                chars.next();
            }
            '[' => {
                let inner: String = chars.by_ref().take_while(|&b| b != ']').collect::<String>().to_ascii_lowercase();
                if !inner.is_empty() && inner.chars().all(|x| matches!(x, 'h' | 'm' | 's')) {
                    tokens.push(if inner.starts_with('m') { 'n' } else { 'h' });
                }
            }
            _ => {
                let l = c.to_ascii_lowercase();
                if matches!(l, 'y' | 'd' | 'h' | 's' | 'm') {
                    tokens.push(l);
                } else if l == 'a' {
                    let rest: String = std::iter::once('a').chain(chars.clone().take(4)).collect::<String>().to_ascii_lowercase();
                    if rest.starts_with("am/pm") || rest.starts_with("a/p") {
                        tokens.push('h');
                    }
                }
            }
        }
    }
    let (mut date, mut time) = (false, false);
    for (i, t) in tokens.iter().enumerate() {
        match t {
            'y' | 'd' => date = true,
            'h' | 's' | 'n' => time = true,
            _ => {
                // `m`: minutes when an hour precedes or a second follows it.
                let prev = tokens[..i].iter().rev().find(|x| **x != 'm');
                let next = tokens[i + 1..].iter().find(|x| **x != 'm');
                if prev == Some(&'h') || next == Some(&'s') {
                    time = true;
                } else {
                    date = true;
                }
            }
        }
    }
    match (date, time) {
        (true, false) => Some(SheetDateKind::Date),
        (true, true) => Some(SheetDateKind::DateTime),
        (false, true) => Some(SheetDateKind::Time),
        (false, false) => None,
    }
}

/// The date/time kind of each cell style (`cellXfs` index), from styles.xml.
fn date_styles(xml: &[u8]) -> Result<Vec<Option<SheetDateKind>>, String> {
    let mut r = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut custom: Vec<(u32, String)> = Vec::new();
    let mut out = Vec::new();
    let mut in_xfs = false;
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err("xl/styles.xml", e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"numFmt" => {
                if let (Some(id), Some(code)) = (attr(&e, b"numFmtId").and_then(|i| i.parse().ok()), attr(&e, b"formatCode")) {
                    custom.push((id, code));
                }
            }
            Event::Start(e) if e.local_name().as_ref() == b"cellXfs" => in_xfs = true,
            Event::End(e) if e.local_name().as_ref() == b"cellXfs" => in_xfs = false,
            Event::Start(e) | Event::Empty(e) if in_xfs && e.local_name().as_ref() == b"xf" => {
                let id: u32 = attr(&e, b"numFmtId").and_then(|i| i.parse().ok()).unwrap_or(0);
                let code = custom.iter().find(|(c, _)| *c == id).map(|(_, code)| code.as_str());
                out.push(date_format_kind(id, code));
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}

/// Column index (0-based) from a cell reference such as `BC12`.
fn column_of(reference: &str) -> Option<usize> {
    let letters: Vec<u8> = reference.bytes().take_while(u8::is_ascii_alphabetic).collect();
    if letters.is_empty() || letters.len() > 3 {
        return None;
    }
    let n = letters.iter().fold(0usize, |acc, c| acc * 26 + (c.to_ascii_uppercase() - b'A') as usize + 1);
    (n <= 16_384).then(|| n - 1)
}

/// Calls `row` with the cells of each non-empty row of the first worksheet,
/// in order. `row` may stop the read by returning `Err`.
pub fn read_first_sheet(zip: &[u8], limits: &Limits, mut row: impl FnMut(Vec<String>) -> Result<(), String>) -> Result<(), String> {
    read_first_sheet_dated(zip, limits, |cells, _| row(cells)).map(|_| ())
}

/// `read_first_sheet`, also passing for each cell the date/time kind of its
/// number format when it holds a number (`dates` is as long as `cells`).
/// Returns whether the workbook counts dates from 1904.
pub fn read_first_sheet_dated(
    zip: &[u8],
    limits: &Limits,
    mut row: impl FnMut(Vec<String>, &[Option<SheetDateKind>]) -> Result<(), String>,
) -> Result<bool, String> {
    let mut zip = open(zip)?;
    let zip = &mut zip;
    let (sheet_path, date1904) = first_sheet_path(zip)?;
    let has = |zip: &Archive, n: &str| zip.index_for_name(n).is_some();
    let styles = if has(zip, "xl/styles.xml") { date_styles(&read_entry(zip, "xl/styles.xml", limits.max_shared_strings_bytes)?)? } else { Vec::new() };
    if !has(zip, &sheet_path) {
        return Err(format!("the workbook's first worksheet `{sheet_path}` is missing"));
    }
    let strings = if has(zip, "xl/sharedStrings.xml") {
        shared_strings(&read_entry(zip, "xl/sharedStrings.xml", limits.max_shared_strings_bytes)?)?
    } else {
        Vec::new()
    };
    let xml = read_entry(zip, &sheet_path, limits.max_sheet_bytes)?;
    let mut r = Reader::from_reader(xml.as_slice());
    let mut buf = Vec::new();
    let mut cells: Vec<String> = Vec::new();
    let mut dates: Vec<Option<SheetDateKind>> = Vec::new();
    let mut col = 0usize;
    let mut cell_type = String::new();
    let mut style = 0usize;
    let mut value = String::new();
    let (mut in_v, mut in_t, mut in_cell) = (false, false, false);
    let finish_cell = |cells: &mut Vec<String>, dates: &mut Vec<Option<SheetDateKind>>, col: usize, cell_type: &str, style: usize, value: &mut String| -> Result<(), String> {
        let v = std::mem::take(value);
        let numeric = matches!(cell_type, "" | "n") && !v.trim().is_empty();
        let date = if numeric { styles.get(style).copied().flatten() } else { None };
        let text = match cell_type {
            "s" => {
                let i: usize = v.trim().parse().map_err(|_| format!("a shared-string cell has the invalid index `{v}`"))?;
                strings.get(i).cloned().ok_or_else(|| format!("a cell names shared string {i}, which does not exist"))?
            }
            "b" => if v.trim() == "1" { "TRUE".into() } else { "FALSE".into() },
            _ => v,
        };
        if cells.len() <= col {
            cells.resize(col + 1, String::new());
            dates.resize(col + 1, None);
        }
        cells[col] = text;
        dates[col] = date;
        Ok(())
    };
    let part = sheet_path.clone();
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err(&part, e))? {
            Event::Start(e) => match e.local_name().as_ref() {
                b"row" => {
                    cells.clear();
                    dates.clear();
                    col = 0;
                }
                b"c" => {
                    in_cell = true;
                    col = attr(&e, b"r").and_then(|r| column_of(&r)).unwrap_or(col);
                    cell_type = attr(&e, b"t").unwrap_or_default();
                    style = attr(&e, b"s").and_then(|s| s.parse().ok()).unwrap_or(0);
                    value.clear();
                }
                b"v" if in_cell => in_v = true,
                b"t" if in_cell => in_t = true,
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                b"c" => {
                    col = attr(&e, b"r").and_then(|r| column_of(&r)).unwrap_or(col) + 1;
                }
                b"row" => {}
                _ => {}
            },
            Event::End(e) => match e.local_name().as_ref() {
                b"c" => {
                    finish_cell(&mut cells, &mut dates, col, &cell_type, style, &mut value)?;
                    in_cell = false;
                    col += 1;
                }
                b"v" => in_v = false,
                b"t" => in_t = false,
                b"row" => {
                    while cells.last().is_some_and(String::is_empty) {
                        cells.pop();
                    }
                    dates.truncate(cells.len());
                    if !cells.is_empty() {
                        row(std::mem::take(&mut cells), &dates)?;
                    }
                    dates.clear();
                }
                _ => {}
            },
            Event::Text(t) if in_v || in_t => value.push_str(&t.unescape().map_err(|e| xml_err(&part, e))?),
            Event::CData(t) if in_v || in_t => value.push_str(&String::from_utf8_lossy(&t)),
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(date1904)
}

/// Builds a minimal XLSX (stored entries) for tests: one sheet, inline
/// numbers and shared strings.
pub fn build_test_workbook(rows: &[Vec<&str>]) -> Vec<u8> {
    let mut strings: Vec<String> = Vec::new();
    let mut sheet = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#);
    for (ri, r) in rows.iter().enumerate() {
        sheet += &format!(r#"<row r="{}">"#, ri + 1);
        for (ci, c) in r.iter().enumerate() {
            let reference = format!("{}{}", (b'A' + ci as u8) as char, ri + 1);
            if !c.is_empty() && c.parse::<f64>().is_ok() {
                sheet += &format!(r#"<c r="{reference}"><v>{c}</v></c>"#);
            } else {
                let i = strings.iter().position(|s| s == c).unwrap_or_else(|| {
                    strings.push(c.to_string());
                    strings.len() - 1
                });
                sheet += &format!(r#"<c r="{reference}" t="s"><v>{i}</v></c>"#);
            }
        }
        sheet += "</row>";
    }
    sheet += "</sheetData></worksheet>";
    let esc = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let sst = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="{0}" uniqueCount="{0}">{1}</sst>"#,
        strings.len(),
        strings.iter().map(|s| format!("<si><t>{}</t></si>", esc(s))).collect::<String>()
    );
    let parts: Vec<(&str, String)> = vec![
        ("[Content_Types].xml", r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#.into()),
        ("xl/workbook.xml", r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>"#.into()),
        ("xl/_rels/workbook.xml.rels", r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#.into()),
        ("xl/sharedStrings.xml", sst),
        ("xl/worksheets/sheet1.xml", sheet),
    ];
    build_test_zip(&parts)
}

/// A ZIP of stored (uncompressed) entries, for tests.
pub fn build_test_zip(parts: &[(&str, String)]) -> Vec<u8> {
    build_test_zip_with(parts, CompressionMethod::Stored)
}

/// A ZIP of entries written with `method` (stored or deflate), for tests.
pub fn build_test_zip_with(parts: &[(&str, String)], method: CompressionMethod) -> Vec<u8> {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    for (name, data) in parts {
        w.start_file(*name, options).expect("a test ZIP entry");
        w.write_all(data.as_bytes()).expect("a test ZIP entry");
    }
    w.finish().expect("a test ZIP").into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(zip: &[u8]) -> Result<Vec<Vec<String>>, String> {
        let mut rows = Vec::new();
        read_first_sheet(zip, &DEFAULT_LIMITS, |r| {
            rows.push(r);
            Ok(())
        })?;
        Ok(rows)
    }

    #[test]
    fn reads_a_workbook() {
        let zip = build_test_workbook(&[vec!["sku", "price", "note"], vec!["A-1", "12.5", "x & y"], vec!["007", "3", ""]]);
        let rows = read(&zip).unwrap();
        assert_eq!(rows, vec![vec!["sku", "price", "note"], vec!["A-1", "12.5", "x & y"], vec!["007", "3"]]);
    }

    #[test]
    fn corrupt_files_fail_clearly() {
        assert!(read(b"not a zip at all").unwrap_err().contains("not a valid XLSX"));
        let mut zip = build_test_workbook(&[vec!["a"]]);
        let n = zip.len();
        zip.truncate(n - 30);
        assert!(read(&zip).is_err());
        assert!(read(&[]).is_err());
    }

    #[test]
    fn deflated_parts_caps_and_damage() {
        let rows = [vec!["sku", "note"], vec!["A-1", "x & y"], vec!["B-2", "2.50"]];
        let stored = build_test_workbook(&rows);
        let expected = read(&stored).unwrap();
        // The same parts, deflated.
        let parts: Vec<(String, String)> = {
            let mut z = zip::ZipArchive::new(Cursor::new(&stored[..])).unwrap();
            (0..z.len())
                .map(|i| {
                    let mut f = z.by_index(i).unwrap();
                    let mut text = String::new();
                    f.read_to_string(&mut text).unwrap();
                    (f.name().unwrap().to_string(), text)
                })
                .collect()
        };
        let parts: Vec<(&str, String)> = parts.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
        let deflated = build_test_zip_with(&parts, CompressionMethod::Deflated);
        assert_ne!(deflated, stored);
        assert_eq!(read(&deflated).unwrap(), expected);
        // A part over its cap, by its declared size.
        let small = Limits { max_sheet_bytes: 100, max_shared_strings_bytes: 1 << 20 };
        let err = read_first_sheet(&deflated, &small, |_| Ok(())).unwrap_err();
        assert!(err.contains("`xl/worksheets/sheet1.xml` is") && err.ends_with("bytes uncompressed; at most 100 are supported"), "{err}");
        // A damaged stored part fails its CRC check.
        let mut damaged = stored.clone();
        let at = damaged.windows(4).position(|w| w == b"A-1<").unwrap();
        damaged[at] = b'Z';
        assert!(read(&damaged).unwrap_err().contains("is corrupt"));
        // Another compression method (12, bzip2) is named in the refusal.
        let mut other = stored.clone();
        for sig in [&b"PK\x03\x04"[..], &b"PK\x01\x02"[..]] {
            let mut from = 0;
            while let Some(p) = other[from..].windows(4).position(|w| w == sig) {
                let p = from + p;
                let method_at = p + if sig[2] == 3 { 8 } else { 10 };
                other[method_at] = 12;
                from = p + 4;
            }
        }
        assert_eq!(read(&other).unwrap_err(), "the workbook uses unsupported ZIP compression method 12");
    }

    #[test]
    fn date_formats() {
        use SheetDateKind::*;
        for (id, kind) in [(14, Some(Date)), (17, Some(Date)), (18, Some(Time)), (21, Some(Time)), (22, Some(DateTime)), (45, Some(Time)), (47, Some(Time))] {
            assert_eq!(date_format_kind(id, None), kind, "built-in {id}");
        }
        for id in [0, 1, 2, 10, 13, 23, 44, 48, 49] {
            assert_eq!(date_format_kind(id, None), None, "built-in {id}");
        }
        let custom = |code: &str| date_format_kind(164, Some(code));
        assert_eq!(custom("yyyy-mm-dd"), Some(Date));
        assert_eq!(custom("dd/mm/yyyy;@"), Some(Date));
        assert_eq!(custom("mmm yy"), Some(Date));
        assert_eq!(custom("[$-409]mmmm d, yyyy"), Some(Date));
        assert_eq!(custom("yyyy-mm-dd hh:mm:ss"), Some(DateTime));
        assert_eq!(custom("m/d/yy h:mm AM/PM"), Some(DateTime));
        assert_eq!(custom("h:mm"), Some(Time));
        assert_eq!(custom("mm:ss"), Some(Time));
        assert_eq!(custom("[h]:mm:ss"), Some(Time));
        assert_eq!(custom("[mm]:ss"), Some(Time));
        assert_eq!(custom("General"), None);
        assert_eq!(custom("0.00E+00"), None);
        assert_eq!(custom("#,##0.00 \"days\""), None);
        assert_eq!(custom("[Red]#,##0;[Blue]-#,##0"), None);
        assert_eq!(custom("0\\d"), None, "an escaped letter is literal");
        assert_eq!(custom("0_m"), None, "padding is not a token");
        // A custom code wins over the built-in meaning of its id.
        assert_eq!(date_format_kind(14, Some("0.00")), None);
    }

    #[test]
    fn reads_date_styles_and_the_1904_system() {
        let styles = r#"<?xml version="1.0"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">
            <numFmts count="2"><numFmt numFmtId="164" formatCode="yyyy\-mm\-dd\ hh:mm"/><numFmt numFmtId="165" formatCode="0.0&quot;d&quot;"/></numFmts>
            <cellStyleXfs count="1"><xf numFmtId="14"/></cellStyleXfs>
            <cellXfs count="5"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"><alignment/></xf><xf numFmtId="164"/><xf numFmtId="21"/><xf numFmtId="165"/></cellXfs>
        </styleSheet>"#;
        let sheet = r#"<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
            <row r="1"><c r="A1" t="inlineStr"><is><t>day</t></is></c><c r="B1" t="inlineStr"><is><t>at</t></is></c><c r="C1" t="inlineStr"><is><t>time</t></is></c><c r="D1" t="inlineStr"><is><t>n</t></is></c></row>
            <row r="2"><c r="A2" s="1"><v>45292</v></c><c r="B2" s="2"><v>45292.5625</v></c><c r="C2" s="3"><v>0.5</v></c><c r="D2" s="4"><v>3</v></c></row>
            <row r="3"><c r="A3" s="1" t="inlineStr"><is><t>soon</t></is></c><c r="B3" s="2" t="n"><v>1</v></c><c r="C3" s="1"/><c r="D3" s="9"><v>4</v></c></row>
        </sheetData></worksheet>"#;
        let book = |date1904: bool| {
            let pr = if date1904 { r#"<workbookPr date1904="1"/>"# } else { "" };
            build_test_zip(&[
                ("[Content_Types].xml", "<Types/>".into()),
                ("xl/workbook.xml", format!(r#"<workbook xmlns:r="r">{pr}<sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>"#)),
                ("xl/_rels/workbook.xml.rels", r#"<Relationships><Relationship Id="rId1" Target="worksheets/s.xml"/></Relationships>"#.into()),
                ("xl/styles.xml", styles.into()),
                ("xl/worksheets/s.xml", sheet.into()),
            ])
        };
        let mut rows = Vec::new();
        let base1904 = read_first_sheet_dated(&book(false), &DEFAULT_LIMITS, |cells, dates| {
            rows.push((cells, dates.to_vec()));
            Ok(())
        })
        .unwrap();
        assert!(!base1904);
        use SheetDateKind::*;
        assert_eq!(rows[0], (vec!["day".to_string(), "at".into(), "time".into(), "n".into()], vec![None, None, None, None]));
        // The original text stays the serial; only numbers get a kind.
        assert_eq!(rows[1], (vec!["45292".to_string(), "45292.5625".into(), "0.5".into(), "3".into()], vec![Some(Date), Some(DateTime), Some(Time), None]));
        assert_eq!(rows[2], (vec!["soon".to_string(), "1".into(), "".into(), "4".into()], vec![None, Some(DateTime), None, None]));
        assert!(read_first_sheet_dated(&book(true), &DEFAULT_LIMITS, |_, _| Ok(())).unwrap());
    }

    #[test]
    fn column_refs() {
        assert_eq!(column_of("A1"), Some(0));
        assert_eq!(column_of("Z9"), Some(25));
        assert_eq!(column_of("AA3"), Some(26));
        assert_eq!(column_of("XFD1"), Some(16_383));
        assert_eq!(column_of("ZZZZ1"), None);
    }
}
