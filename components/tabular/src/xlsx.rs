//! Reads the first worksheet of an XLSX/XLSM workbook (a ZIP of XML parts):
//! a minimal ZIP central-directory reader (stored and deflate entries, no
//! ZIP64, no encryption) with `miniz_oxide` for inflate, and `quick-xml` for
//! the workbook, relationships, shared strings and the sheet.
//!
//! Each cell becomes its stored text: shared and inline strings as written,
//! numbers as their stored decimal text (dates therefore arrive as the
//! spreadsheet's serial numbers; styles are not applied), booleans as
//! `TRUE`/`FALSE`, errors as their code (`#DIV/0!`). Formulas contribute
//! their cached value. Rows without cells are skipped.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

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

struct Entry {
    name: String,
    method: u16,
    flags: u16,
    compressed: usize,
    uncompressed: usize,
    local_offset: usize,
}

fn u16le(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?))
}
fn u32le(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

const NOT_ZIP: &str = "the file is not a valid XLSX/XLSM workbook (not a readable ZIP archive)";

fn entries(zip: &[u8]) -> Result<Vec<Entry>, String> {
    // End of central directory: the last 22+ bytes (a comment may follow).
    let min = zip.len().saturating_sub(22 + 65_535);
    let eocd = (min..=zip.len().saturating_sub(22)).rev().find(|&i| u32le(zip, i) == Some(0x0605_4b50)).ok_or(NOT_ZIP)?;
    let count = u16le(zip, eocd + 10).ok_or(NOT_ZIP)? as usize;
    let mut at = u32le(zip, eocd + 16).ok_or(NOT_ZIP)? as usize;
    if count == 0xffff || at == 0xffff_ffff {
        return Err("ZIP64 workbooks are not supported".into());
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        if u32le(zip, at) != Some(0x0201_4b50) {
            return Err(NOT_ZIP.into());
        }
        let name_len = u16le(zip, at + 28).ok_or(NOT_ZIP)? as usize;
        let extra = u16le(zip, at + 30).ok_or(NOT_ZIP)? as usize;
        let comment = u16le(zip, at + 32).ok_or(NOT_ZIP)? as usize;
        let name = zip.get(at + 46..at + 46 + name_len).ok_or(NOT_ZIP)?;
        out.push(Entry {
            name: String::from_utf8_lossy(name).into_owned(),
            flags: u16le(zip, at + 8).ok_or(NOT_ZIP)?,
            method: u16le(zip, at + 10).ok_or(NOT_ZIP)?,
            compressed: u32le(zip, at + 20).ok_or(NOT_ZIP)? as usize,
            uncompressed: u32le(zip, at + 24).ok_or(NOT_ZIP)? as usize,
            local_offset: u32le(zip, at + 42).ok_or(NOT_ZIP)? as usize,
        });
        at += 46 + name_len + extra + comment;
    }
    Ok(out)
}

fn read_entry(zip: &[u8], e: &Entry, limit: usize) -> Result<Vec<u8>, String> {
    if e.flags & 1 != 0 {
        return Err("encrypted workbooks are not supported".into());
    }
    if e.uncompressed > limit {
        return Err(format!("the workbook part `{}` is {} bytes uncompressed; at most {} are supported", e.name, e.uncompressed, limit));
    }
    let h = e.local_offset;
    if u32le(zip, h) != Some(0x0403_4b50) {
        return Err(NOT_ZIP.into());
    }
    let start = h + 30 + u16le(zip, h + 26).ok_or(NOT_ZIP)? as usize + u16le(zip, h + 28).ok_or(NOT_ZIP)? as usize;
    let data = zip.get(start..start + e.compressed).ok_or(NOT_ZIP)?;
    match e.method {
        0 => Ok(data.to_vec()),
        8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, limit)
            .map_err(|_| format!("the workbook part `{}` is corrupt (deflate data does not decode)", e.name)),
        m => Err(format!("the workbook uses unsupported ZIP compression method {m}")),
    }
}

fn attr(e: &BytesStart, name: &[u8]) -> Option<String> {
    e.attributes().flatten().find(|a| a.key.as_ref() == name || a.key.local_name().as_ref() == name).and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

fn xml_err(part: &str, e: impl std::fmt::Display) -> String {
    format!("the workbook part `{part}` is not valid XML: {e}")
}

/// The path of the first worksheet, from workbook.xml and its relationships.
fn first_sheet_path(zip: &[u8], list: &[Entry]) -> Result<String, String> {
    let find = |n: &str| list.iter().find(|e| e.name == n);
    let fallback = || {
        list.iter()
            .filter(|e| e.name.starts_with("xl/worksheets/") && e.name.ends_with(".xml"))
            .map(|e| e.name.clone())
            .min()
            .ok_or_else(|| "the workbook has no worksheet".to_string())
    };
    let (Some(wb), Some(rels)) = (find("xl/workbook.xml"), find("xl/_rels/workbook.xml.rels")) else {
        return if find("[Content_Types].xml").is_some() { fallback() } else { Err("the file is not an XLSX/XLSM workbook (no [Content_Types].xml)".into()) };
    };
    let wb = read_entry(zip, wb, 8 << 20)?;
    let mut r = Reader::from_reader(wb.as_slice());
    let mut buf = Vec::new();
    let mut rid = None;
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err("xl/workbook.xml", e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"sheet" => {
                rid = attr(&e, b"id");
                break;
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    let Some(rid) = rid else { return fallback() };
    let rels = read_entry(zip, rels, 8 << 20)?;
    let mut r = Reader::from_reader(rels.as_slice());
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err("xl/_rels/workbook.xml.rels", e))? {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"Relationship" && attr(&e, b"Id").as_deref() == Some(&rid) => {
                let target = attr(&e, b"Target").unwrap_or_default();
                return Ok(match target.strip_prefix('/') {
                    Some(abs) => abs.to_string(),
                    None => format!("xl/{target}"),
                });
            }
            Event::Eof => return fallback(),
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
    let list = entries(zip)?;
    let sheet_path = first_sheet_path(zip, &list)?;
    let sheet = list.iter().find(|e| e.name == sheet_path).ok_or_else(|| format!("the workbook's first worksheet `{sheet_path}` is missing"))?;
    let strings = match list.iter().find(|e| e.name == "xl/sharedStrings.xml") {
        Some(e) => shared_strings(&read_entry(zip, e, limits.max_shared_strings_bytes)?)?,
        None => Vec::new(),
    };
    let xml = read_entry(zip, sheet, limits.max_sheet_bytes)?;
    let mut r = Reader::from_reader(xml.as_slice());
    let mut buf = Vec::new();
    let mut cells: Vec<String> = Vec::new();
    let mut col = 0usize;
    let mut cell_type = String::new();
    let mut value = String::new();
    let (mut in_v, mut in_t, mut in_cell) = (false, false, false);
    let finish_cell = |cells: &mut Vec<String>, col: usize, cell_type: &str, value: &mut String| -> Result<(), String> {
        let v = std::mem::take(value);
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
        }
        cells[col] = text;
        Ok(())
    };
    let part = sheet_path.clone();
    loop {
        match r.read_event_into(&mut buf).map_err(|e| xml_err(&part, e))? {
            Event::Start(e) => match e.local_name().as_ref() {
                b"row" => {
                    cells.clear();
                    col = 0;
                }
                b"c" => {
                    in_cell = true;
                    col = attr(&e, b"r").and_then(|r| column_of(&r)).unwrap_or(col);
                    cell_type = attr(&e, b"t").unwrap_or_default();
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
                    finish_cell(&mut cells, col, &cell_type, &mut value)?;
                    in_cell = false;
                    col += 1;
                }
                b"v" => in_v = false,
                b"t" => in_t = false,
                b"row" => {
                    while cells.last().is_some_and(String::is_empty) {
                        cells.pop();
                    }
                    if !cells.is_empty() {
                        row(std::mem::take(&mut cells))?;
                    }
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
    Ok(())
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
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in &parts {
        let offset = out.len() as u32;
        let crc = crc32(data.as_bytes());
        let mut local = Vec::new();
        local.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        local.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        local.extend_from_slice(&crc.to_le_bytes());
        local.extend_from_slice(&(data.len() as u32).to_le_bytes());
        local.extend_from_slice(&(data.len() as u32).to_le_bytes());
        local.extend_from_slice(&(name.len() as u16).to_le_bytes());
        local.extend_from_slice(&0u16.to_le_bytes());
        local.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&local);
        out.extend_from_slice(data.as_bytes());
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&(data.len() as u32).to_le_bytes());
        central.extend_from_slice(&(data.len() as u32).to_le_bytes());
        central.extend_from_slice(&(name.len() as u16).to_le_bytes());
        central.extend_from_slice(&[0u8; 12]);
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&(parts.len() as u16).to_le_bytes());
    out.extend_from_slice(&(parts.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for b in data {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
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
    fn column_refs() {
        assert_eq!(column_of("A1"), Some(0));
        assert_eq!(column_of("Z9"), Some(25));
        assert_eq!(column_of("AA3"), Some(26));
        assert_eq!(column_of("XFD1"), Some(16_383));
        assert_eq!(column_of("ZZZZ1"), None);
    }
}
