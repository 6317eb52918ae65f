//! The XLSX/XLSM reader's unit tests: workbooks built in memory (strings,
//! formulas, gaps, packages with or without relationships, date formats),
//! and corrupt or oversized ones refused clearly.

use super::*;
use crate::sheet_dates::date_format_kind;
use std::io::Read;

const WORKSHEET_REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet";
const NS: &str = r#"xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main""#;

/// A one-sheet workbook of `sheet_data` (the rows), with optional
/// shared strings and styles, with or without `_rels/.rels`.
fn book(sheet_data: &str, sst: Option<&str>, styles: Option<&str>, package_rels: bool) -> Vec<u8> {
    let mut parts: Vec<(&str, String)> = vec![
        ("[Content_Types].xml", "<Types/>".into()),
        (
            "xl/workbook.xml",
            format!(r#"<workbook {NS} xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="First" sheetId="1" r:id="rId1"/></sheets></workbook>"#),
        ),
        ("xl/_rels/workbook.xml.rels", format!(r#"<Relationships><Relationship Id="rId1" Type="{WORKSHEET_REL}" Target="worksheets/sheet1.xml"/></Relationships>"#)),
        ("xl/worksheets/sheet1.xml", format!("<worksheet {NS}><sheetData>{sheet_data}</sheetData></worksheet>")),
    ];
    if package_rels {
        parts.push(("_rels/.rels", PACKAGE_RELS.into()));
    }
    if let Some(sst) = sst {
        parts.push(("xl/sharedStrings.xml", format!("<sst {NS}>{sst}</sst>")));
    }
    if let Some(styles) = styles {
        parts.push(("xl/styles.xml", format!("<styleSheet {NS}>{styles}</styleSheet>")));
    }
    build_test_zip_with(&parts, CompressionMethod::Deflated)
}

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
            ("xl/_rels/workbook.xml.rels", format!(r#"<Relationships><Relationship Id="rId1" Type="{WORKSHEET_REL}" Target="worksheets/s.xml"/></Relationships>"#)),
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
fn shared_and_inline_strings() {
    // Rich text runs are joined, phonetic runs left out, entities
    // decoded, and spaces kept where the part says to.
    let sst = concat!(
        "<si><t>plain &amp; simple</t></si>",
        "<si><r><rPr><b/></rPr><t>bo</t></r><r><t xml:space=\"preserve\">ld </t></r></si>",
        "<si><t>\u{6771}\u{4eac}</t><rPh sb=\"0\" eb=\"2\"><t>\u{30c8}\u{30a6}\u{30ad}\u{30e7}\u{30a6}</t></rPh></si>",
        "<si><t xml:space=\"preserve\">  padded  </t></si>",
        "<si/>",
    );
    let data = concat!(
        r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c><c r="D1" t="s"><v>3</v></c><c r="E1" t="s"><v>4</v></c><c r="F1" t="s"><v>0</v></c></row>"#,
        r#"<row r="2"><c r="A2" t="inlineStr"><is><t>inline &lt;b&gt;</t></is></c><c r="C2" t="inlineStr"><is><r><t>ri</t></r><r><t>ch</t></r></is></c></row>"#,
    );
    let rows = read(&book(data, Some(sst), None, true)).unwrap();
    assert_eq!(rows, vec![vec!["plain & simple", "bold ", "\u{6771}\u{4eac}", "  padded  ", "", "plain & simple"], vec!["inline <b>", "", "rich"]]);
    // A cell naming a shared string that does not exist fails clearly.
    let err = read(&book(r#"<row r="1"><c r="A1" t="s"><v>7</v></c></row>"#, Some(sst), None, true)).unwrap_err();
    assert!(err.starts_with("the workbook is corrupt") && err.contains("shared strings"), "{err}");
}

#[test]
fn formula_cached_values_booleans_and_errors() {
    let data = concat!(
        r#"<row r="1"><c r="A1"><f>1+2</f><v>3</v></c><c r="B1" t="str"><f>"a"&amp;"b"</f><v>ab</v></c><c r="C1" t="b"><f>TRUE()</f><v>1</v></c>"#,
        r#"<c r="D1" t="e"><f>1/0</f><v>#DIV/0!</v></c><c r="E1" t="b"><v>0</v></c><c r="F1"><f>NOW()</f></c><c r="G1"><v>0.1</v></c></row>"#,
        r#"<row r="2"><c r="A2"><f t="shared" ref="A2:A3" si="0">B2*2</f><v>2.5</v></c></row>"#,
        r#"<row r="3"><c r="A3"><f t="shared" si="0"/><v>-4</v></c><c r="B3"><v>1.0000000000000001E-3</v></c><c r="C3"><v>1E+21</v></c></row>"#,
    );
    let rows = read(&book(data, None, None, false)).unwrap();
    assert_eq!(rows, vec![vec!["3", "ab", "TRUE", "#DIV/0!", "FALSE", "", "0.1"], vec!["2.5"], vec!["-4", "0.001", "1e21"]]);
}

#[test]
fn rows_columns_and_gaps() {
    // Empty rows are skipped, gaps within a row are empty cells, cells
    // without a reference follow the one before, and a reference past
    // column XFD is refused.
    let data = concat!(
        r#"<row r="1"><c r="B1"><v>1</v></c><c><v>2</v></c><c r="E1"><v>3</v></c></row>"#,
        r#"<row r="2"></row><row r="3"><c r="A3" s="0"/></row>"#,
        r#"<row r="5"><c r="XFD5"><v>4</v></c></row>"#,
    );
    let rows = read(&book(data, None, None, true)).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0], vec!["", "1", "2", "", "3"]);
    assert_eq!((rows[1].len(), rows[1][16_383].as_str()), (16_384, "4"));
    assert!(read(&book(r#"<row r="1"><c r="XFE1"><v>1</v></c></row>"#, None, None, true)).is_err());
}

#[test]
fn packages_with_and_without_package_relationships() {
    let data = r#"<row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row>"#;
    for package_rels in [true, false] {
        assert_eq!(read(&book(data, None, None, package_rels)).unwrap(), vec![vec!["x"]]);
    }
    // A ZIP that is no workbook at all, and a workbook without its parts.
    let err = read(&build_test_zip(&[("a.txt", "hello".into())])).unwrap_err();
    assert_eq!(err, "the file is not an XLSX/XLSM workbook (no [Content_Types].xml)");
    let err = read(&build_test_zip(&[("[Content_Types].xml", "<Types/>".into())])).unwrap_err();
    assert!(err.contains("is missing"), "{err}");
    // A legacy or password-protected (compound file) workbook.
    let cfb = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0];
    assert!(read(&cfb).unwrap_err().contains("password-protected workbook or a legacy .xls"));
}

#[test]
fn built_in_formats_read_as_date_format_kind_says() {
    // calamine resolves built-in ids to their format codes; each reads as
    // the id does.
    let ids: Vec<u32> = (0..=49).collect();
    let xfs: String = ids.iter().map(|id| format!(r#"<xf numFmtId="{id}"/>"#)).collect();
    let styles = format!(r#"<cellXfs count="{}">{xfs}</cellXfs>"#, ids.len());
    let cells: String = ids.iter().map(|id| format!(r#"<c s="{id}"><v>1.5</v></c>"#)).collect();
    let mut kinds = Vec::new();
    read_first_sheet_dated(&book(&format!(r#"<row r="1">{cells}</row>"#), None, Some(&styles), true), &DEFAULT_LIMITS, |_, dates| {
        kinds = dates.to_vec();
        Ok(())
    })
    .unwrap();
    let expected: Vec<_> = ids.iter().map(|id| date_format_kind(*id, None)).collect();
    assert_eq!(kinds, expected);
}
