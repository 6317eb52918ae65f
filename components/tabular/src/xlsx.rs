//! Reads the first worksheet of an XLSX/XLSM workbook with `calamine`,
//! which opens the package (relationships, workbook, shared strings,
//! styles) and streams the sheet cell by cell. Before it does, the archive's
//! directory is checked with the `zip` crate: the parts calamine reads must
//! be stored or deflated, not encrypted, and within [`Limits`] by the size
//! they declare (the `zip` reader then refuses a part that inflates past
//! it); the parts other than worksheets are inflated once to check their
//! CRC. A worksheet's CRC is not checked (calamine stops at its last cell
//! and the first sheet's part name is calamine's own): damage there shows
//! as a deflate or XML error, or, in a stored part, goes unseen. A package
//! without `_rels/.rels` (written by minimal tools) gets the standard one.
//!
//! Each cell becomes its text: shared and inline strings as written (rich
//! text runs joined, phonetic runs left out), numbers as the shortest
//! decimal that reads back as the stored value (so dates arrive as the
//! spreadsheet's serial numbers), booleans as `TRUE`/`FALSE`, errors as
//! their code (`#DIV/0!`). Formulas contribute their cached value. Rows
//! without cells are skipped. Beside the text, `read_first_sheet_dated`
//! reports which numeric cells carry a date or time number format (the
//! cell style's format code, see [`crate::sheet_dates::date_format_kind`]) and whether the
//! workbook counts from 1904.

use crate::sheet_dates::{format_code_kind, SheetDateKind};
use calamine::{DataRef, Reader, SheetType, Xlsx, XlsxError};
use std::io::{Cursor, Write};
use zip::CompressionMethod;

/// Caps that keep one conversion step within the component's memory.
pub struct Limits {
    /// Largest decompressed worksheet XML.
    pub max_sheet_bytes: usize,
    /// Largest decompressed shared-strings (or styles) XML.
    pub max_shared_strings_bytes: usize,
}

/// Largest XLSX/XLSM file accepted: the whole archive is read in one
/// ingestion step (the upload refuses larger ones, the ingest fails them).
pub const MAX_FILE_BYTES: usize = 64 << 20;

pub const DEFAULT_LIMITS: Limits = Limits { max_sheet_bytes: 48 << 20, max_shared_strings_bytes: 16 << 20 };

/// Largest workbook.xml or relationships part.
const MAX_INDEX_PART_BYTES: usize = 8 << 20;

/// Columns a worksheet can have (`A` to `XFD`).
const MAX_COLUMNS: usize = 16_384;

const NOT_ZIP: &str = "the file is not a valid XLSX/XLSM workbook (not a readable ZIP archive)";

/// The package relationships a workbook written without `_rels/.rels`
/// gets (calamine finds the workbook part through them).
const PACKAGE_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#;

/// The cap on a part calamine reads, by its name; None for parts it does
/// not read (images, charts, printer settings...).
fn part_limit(name: &str, limits: &Limits) -> Option<usize> {
    if name.starts_with("xl/worksheets/") && name.ends_with(".xml") {
        Some(limits.max_sheet_bytes)
    } else if name.ends_with("sharedStrings.xml") || name.ends_with("styles.xml") {
        Some(limits.max_shared_strings_bytes)
    } else if name.ends_with(".rels") || name.ends_with("workbook.xml") {
        Some(MAX_INDEX_PART_BYTES)
    } else {
        None
    }
}

/// Checks the archive's directory before calamine reads it, and the CRC of
/// each part it reads other than worksheets; returns whether the package
/// has its relationships part (`_rels/.rels`).
fn check_archive(zip: &[u8], limits: &Limits) -> Result<bool, String> {
    if zip.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        return Err("the file is a password-protected workbook or a legacy .xls file, not XLSX/XLSM; save it as XLSX without a password".into());
    }
    let mut archive = zip::ZipArchive::new(Cursor::new(zip)).map_err(|_| NOT_ZIP.to_string())?;
    if archive.index_for_name("[Content_Types].xml").is_none() {
        return Err("the file is not an XLSX/XLSM workbook (no [Content_Types].xml)".into());
    }
    let has_package_rels = archive.index_for_name("_rels/.rels").is_some();
    let mut verify = Vec::new();
    for i in 0..archive.len() {
        let part = archive.by_index_raw(i).map_err(|_| NOT_ZIP.to_string())?;
        let name = part.name().map_err(|_| NOT_ZIP.to_string())?;
        let Some(limit) = part_limit(&name, limits) else { continue };
        if part.encrypted() {
            return Err("encrypted workbooks are not supported".into());
        }
        match part.compression() {
            CompressionMethod::Stored | CompressionMethod::Deflated => {}
            #[allow(deprecated)] // the number is what a user can look up
            m => return Err(format!("the workbook uses unsupported ZIP compression method {}", m.to_u16())),
        }
        let size = part.size();
        if size > limit as u64 {
            return Err(format!("the workbook part `{name}` is {size} bytes uncompressed; at most {limit} are supported"));
        }
        if !name.starts_with("xl/worksheets/") {
            verify.push((i, name.into_owned()));
        }
    }
    // The parts calamine loads whole are inflated once here, so a damaged
    // one fails its CRC (calamine stops reading a part at its last element).
    for (i, name) in verify {
        let corrupt = || format!("the workbook part `{name}` is corrupt (its data does not decode or fails its checksum)");
        let mut part = archive.by_index(i).map_err(|_| corrupt())?;
        std::io::copy(&mut part, &mut std::io::sink()).map_err(|_| corrupt())?;
    }
    Ok(has_package_rels)
}

/// `zip` with [`PACKAGE_RELS`] appended as `_rels/.rels` (the old central
/// directory is left in place and a new one written after the new part).
fn with_package_rels(zip: &[u8]) -> Result<Vec<u8>, String> {
    let mut w = zip::ZipWriter::new_append(Cursor::new(zip.to_vec())).map_err(|_| NOT_ZIP.to_string())?;
    let stored = zip::write::SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    w.start_file("_rels/.rels", stored).map_err(|_| NOT_ZIP.to_string())?;
    w.write_all(PACKAGE_RELS.as_bytes()).map_err(|_| NOT_ZIP.to_string())?;
    Ok(w.finish().map_err(|_| NOT_ZIP.to_string())?.into_inner())
}

/// A calamine error as a user reads it.
fn describe(e: XlsxError) -> String {
    match e {
        XlsxError::Zip(_) => NOT_ZIP.into(),
        XlsxError::Password => "the workbook is password-protected; save it without a password".into(),
        XlsxError::FileNotFound(part) => format!("the workbook part `{part}` is missing"),
        XlsxError::WorksheetNotFound(name) => format!("the workbook's first worksheet `{name}` is missing"),
        e => format!("the workbook is corrupt ({e})"),
    }
}

/// A number's text: the shortest decimal that reads back as the value,
/// with an exponent only far from 1 (`1e21`, `1.5e-8`).
fn number_text(n: f64) -> String {
    let a = n.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-7..1e21).contains(&a) {
        n.to_string()
    } else {
        format!("{n:e}")
    }
}

/// The date/time kind of a cell style's number format. calamine resolves
/// a built-in format id to its format code (14 is `mm-dd-yy`), so the code
/// alone decides, as [`crate::sheet_dates::date_format_kind`] does for a custom one.
fn style_date_kind(style: &calamine::Style) -> Option<SheetDateKind> {
    style.number_format.as_ref().and_then(|f| format_code_kind(&f.format_code))
}

/// Calls `row` with the cells of each non-empty row of the first worksheet,
/// in order. `row` may stop the read by returning `Err`.
pub fn read_first_sheet(zip: &[u8], limits: &Limits, mut row: impl FnMut(Vec<String>) -> Result<(), String>) -> Result<(), String> {
    read_first_sheet_dated(zip, limits, |cells, _| row(cells)).map(|_| ())
}

/// `read_first_sheet`, also passing for each cell the date/time kind of its
/// number format when it holds a number (`dates` is as long as `cells`).
/// Returns whether the workbook counts dates from 1904.
pub fn read_first_sheet_dated(zip: &[u8], limits: &Limits, mut row: impl FnMut(Vec<String>, &[Option<SheetDateKind>]) -> Result<(), String>) -> Result<bool, String> {
    let completed;
    let zip = if check_archive(zip, limits)? {
        zip
    } else {
        completed = with_package_rels(zip)?;
        &completed[..]
    };
    let mut book = Xlsx::new(Cursor::new(zip)).map_err(describe)?;
    let date1904 = book.has_1904_epoch();
    let first = book.sheets_metadata().iter().find(|s| s.typ == SheetType::WorkSheet).map(|s| s.name.clone());
    let first = first.ok_or_else(|| "the workbook has no worksheet".to_string())?;
    let mut reader = book.worksheet_cells_reader(&first).map_err(describe)?;
    let kinds: Vec<Option<SheetDateKind>> = reader.styles().iter().map(style_date_kind).collect();
    let mut cells: Vec<String> = Vec::new();
    let mut dates: Vec<Option<SheetDateKind>> = Vec::new();
    let mut emit = |cells: &mut Vec<String>, dates: &mut Vec<Option<SheetDateKind>>| -> Result<(), String> {
        while cells.last().is_some_and(String::is_empty) {
            cells.pop();
        }
        dates.truncate(cells.len());
        if !cells.is_empty() {
            row(std::mem::take(cells), dates)?;
        }
        dates.clear();
        Ok(())
    };
    let mut at_row = None;
    while let Some((cell, style)) = reader.next_cell_with_style_id().map_err(describe)? {
        let (r, col) = cell.get_position();
        if at_row != Some(r) {
            emit(&mut cells, &mut dates)?;
            at_row = Some(r);
        }
        let col = col as usize;
        if col >= MAX_COLUMNS {
            return Err(format!("a cell of row {} lies past the last column (XFD)", r + 1));
        }
        let number = |n: f64| (number_text(n), kinds.get(style).copied().flatten());
        let (text, date) = match cell.get_value() {
            DataRef::Float(n) => number(*n),
            DataRef::Int(n) => (n.to_string(), kinds.get(style).copied().flatten()),
            DataRef::DateTime(d) => number(d.as_f64()),
            DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => (s.clone(), None),
            DataRef::SharedString(s) => (s.to_string(), None),
            DataRef::Bool(b) => ((if *b { "TRUE" } else { "FALSE" }).to_string(), None),
            DataRef::Error(e) => (e.to_string(), None),
            DataRef::Empty => (String::new(), None),
        };
        if cells.len() <= col {
            cells.resize(col + 1, String::new());
            dates.resize(col + 1, None);
        }
        cells[col] = text;
        dates[col] = date;
    }
    emit(&mut cells, &mut dates)?;
    Ok(date1904)
}

/// Builds a minimal XLSX (stored entries, no `_rels/.rels`) for tests: one
/// sheet, numbers and shared strings.
pub fn build_test_workbook(rows: &[Vec<&str>]) -> Vec<u8> {
    let mut strings: Vec<String> = Vec::new();
    let mut sheet = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#);
    for (ri, r) in rows.iter().enumerate() {
        sheet += &format!(r#"<row r="{}">"#, ri + 1);
        for (ci, c) in r.iter().enumerate() {
            let reference = format!("{}{}", (b'A' + ci as u8) as char, ri + 1);
            // A number cell holds the number's own text, as a spreadsheet
            // writes it; other text (`007`) is a string.
            if c.parse::<f64>().is_ok_and(|n| n.to_string() == *c) {
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
mod tests;
