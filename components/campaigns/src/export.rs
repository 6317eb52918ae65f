//! exportCampaign (54): the conclusions of a completed or partial summary
//! run as CSV (`text/csv; charset=utf-8`, RFC 4180: CRLF line ends, fields
//! quoted when they hold a comma, a quote or a line break, quotes doubled).
//!
//! The header is `Contact,AI Summary,Next Action`, then one row per unique
//! contact of the run in contact id order: the Contact cell is the
//! contact's name and mobile as they read when it was assessed
//! (`Ada Lovelace (+15550100001)`; the mobile alone without a name, the
//! name alone when the contact was deleted); a contact whose assessment
//! failed has empty AI Summary and Next Action cells. A cell that starts
//! with `=`, `+`, `-`, `@`, a tab or a carriage return is prefixed with `'`
//! so no spreadsheet runs it as a formula.
//!
//! The file is streamed in pieces of [`ROWS_PER_PIECE`] rows, each read
//! after the last contact id of the one before (the download cursor), so
//! memory stays flat however many contacts the run has.

use csv_core::{Terminator, WriteResult, Writer, WriterBuilder};
use switchboard_guest::db;
use switchboard_guest::{download, fail, params, req, HResult, Request, Success};

use crate::campaigns::campaign_id;
use crate::summaries;

pub const HEADER: [&str; 3] = ["Contact", "AI Summary", "Next Action"];
pub const ROWS_PER_PIECE: i64 = 2_000;

pub fn csv(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let campaign = campaign_id(r)?;
    let run_id = req::query_uuid(r, "summaryRunId")?.map(str::to_ascii_lowercase).ok_or_else(|| fail::validation("summary_run_required", "query `summaryRunId` is required"))?;
    let after = download::cursor(r).map(str::to_string);
    let mut out = Vec::new();
    let mut w = WriterBuilder::new().terminator(Terminator::CRLF).build();
    if after.is_none() {
        // The checks run once, on the first piece (later pieces read the same snapshot).
        let status = summaries::shown_status(&summaries::load(biz, &campaign, &run_id)?);
        if !status.is_exportable() {
            let status = status.as_str();
            return Err(fail::conflict("summary_run_not_finished", format!("summary run {run_id} is {status}; only a completed or partial run can be exported")));
        }
        record(&mut w, &mut out, &HEADER);
    }
    let rows = db::query_as::<(String, Option<String>, Option<String>, Option<String>, Option<String>)>(
        "SELECT contact_id, contact_name, contact_mobile, summary, next_action FROM summary_assessments \
         WHERE business_id = ?1 AND run_id = ?2 AND contact_id > ?3 ORDER BY contact_id LIMIT ?4",
        &params![biz, &run_id, after.unwrap_or_default(), ROWS_PER_PIECE],
    )?;
    let full = rows.len() as i64 == ROWS_PER_PIECE;
    let mut last = None;
    for (contact_id, name, mobile, summary, next_action) in rows {
        let contact = match (name.filter(|n| !n.is_empty()), mobile) {
            (Some(name), Some(mobile)) => format!("{name} ({mobile})"),
            (Some(name), None) => name,
            (None, Some(mobile)) => mobile,
            (None, None) => String::new(),
        };
        record(&mut w, &mut out, &[&contact, &summary.unwrap_or_default(), &next_action.unwrap_or_default()]);
        last = Some(contact_id);
    }
    let next = last.filter(|_| full);
    let name = format!("campaign-{campaign}-summary-{run_id}.csv");
    download::piece("text/csv; charset=utf-8", Some(&download::attachment(&name)), out, next)
}

/// A cell a spreadsheet would not take as a formula.
pub fn neutralised(cell: &str) -> std::borrow::Cow<'_, str> {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}").into(),
        _ => cell.into(),
    }
}

/// One CSV record of `cells` appended to `out`.
fn record(w: &mut Writer, out: &mut Vec<u8>, cells: &[&str]) {
    for (i, cell) in cells.iter().enumerate() {
        let cell = neutralised(cell);
        // Room for every byte doubled, the quotes and a separator: one call each.
        let mut buf = vec![0u8; cell.len() * 2 + 4];
        if i > 0 {
            let (_, n) = w.delimiter(&mut buf);
            out.extend_from_slice(&buf[..n]);
        }
        let (res, nin, n) = w.field(cell.as_bytes(), &mut buf);
        debug_assert!(matches!(res, WriteResult::InputEmpty) && nin == cell.len());
        out.extend_from_slice(&buf[..n]);
    }
    let mut buf = [0u8; 4];
    let (_, n) = w.terminator(&mut buf);
    out.extend_from_slice(&buf[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_of(rows: &[&[&str]]) -> String {
        let mut w = WriterBuilder::new().terminator(Terminator::CRLF).build();
        let mut out = Vec::new();
        for r in rows {
            record(&mut w, &mut out, r);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rfc_4180_and_no_formulas() {
        assert_eq!(csv_of(&[&HEADER]), "Contact,AI Summary,Next Action\r\n");
        assert_eq!(csv_of(&[&["a, b", "say \"hi\"", "line\nbreak"]]), "\"a, b\",\"say \"\"hi\"\"\",\"line\nbreak\"\r\n");
        assert_eq!(csv_of(&[&["=HYPERLINK(\"x\")", "+1", "@SUM(A1)"]]), "\"'=HYPERLINK(\"\"x\"\")\",'+1,'@SUM(A1)\r\n");
        assert_eq!(csv_of(&[&["-2", "", "ok"]]), "'-2,,ok\r\n");
        assert_eq!(neutralised("Ada (+1555)"), "Ada (+1555)");
    }
}
