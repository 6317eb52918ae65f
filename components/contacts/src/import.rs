//! importContacts: CSV rows into contacts, merged by mobile.
//!
//! Rules (also in the report to the API docs):
//! * The first record is the header. Row numbers in `errors[].row` count CSV
//!   records with the header as row 1, so the first data record is row 2
//!   (a quoted cell spanning lines is still one record). Blank records are
//!   skipped and not counted in `totalRows`, but keep their number.
//! * Mobile column: `mobileColumn` if given, else the first header named
//!   `mobile`, `phone`, `phone_number` or `msisdn` (case-insensitive; spaces and
//!   dashes count as `_`). None: `400 missing_mobile_column`.
//! * Name column: `nameColumn` if given (missing: `400 missing_name_column`),
//!   else a header named `name` if present. The name is optional per row: a new
//!   contact without a name is named after its mobile; an existing contact's
//!   name is never replaced by an empty cell.
//! * Every other column is a custom field. Its header, trimmed, with spaces and
//!   dashes turned into `_`, must match `^[a-zA-Z][a-zA-Z0-9_]{0,63}$`
//!   (`400 invalid_column_header`), be unique (`400 duplicate_column_header`),
//!   and there may be at most 50 (`400 too_many_columns`). Empty cells set
//!   nothing (they never erase a stored value).
//! * Cells are trimmed. Per-row failures (the row is skipped, `failed` counts
//!   it): `malformed_csv`, `ragged_row`, `missing_mobile`, `invalid_mobile`,
//!   `invalid_name`, `field_value_too_long`, `too_many_fields` (a merge would
//!   exceed 50 custom fields). At most 1000 errors are listed
//!   (`errorsTruncated`).
//! * A mobile that already exists in the business, or appeared on an earlier
//!   row, is merged: the contact is added to `categoryIds` and, when
//!   `updateExisting` (default true), its name (if the row has one) and
//!   non-empty fields are updated, in file order. Counted in `merged`.
//! * Two steps. [`prepare`] runs before the write transaction (the WIT's
//!   `handler.prepare`, reading and writing nothing): it parses the body,
//!   the header and every record, and hands the rows and row failures, in
//!   file order, to the write as postcard bytes (`request.prepared`). [`run`],
//!   inside the write transaction, checks the categories, answers a refusal
//!   of the CSV itself (after a missing category, as a one-step import did),
//!   and writes the rows in batches of 500 with `execute-many`, so the
//!   write gate is held for the writes and not for the parse. Memory holds
//!   the prepared rows of the whole file (at most the 10 MiB body's).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value as J};
use switchboard_guest::db::{self, StoreValue};
use switchboard_guest::{contact, e164, fail, new_id, now, ok, params, req, Failure, HResult, Request, Success, Value};

use crate::csv::{self, Record};
use crate::fields;
use crate::model;

pub const BATCH: usize = 500;
pub const MAX_ERRORS: usize = 1000;
const MOBILE_HEADERS: [&str; 4] = ["mobile", "phone", "phone_number", "msisdn"];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImportBody {
    category_ids: Vec<String>,
    csv: String,
    mobile_column: Option<String>,
    name_column: Option<String>,
    #[serde(default = "yes")]
    update_existing: bool,
}

fn yes() -> bool {
    true
}

/// Which column is what.
#[derive(Debug, PartialEq)]
pub struct Plan {
    pub width: usize,
    pub mobile: usize,
    pub name: Option<usize>,
    /// (column index, field key)
    pub fields: Vec<(usize, String)>,
    /// Header text per column (trimmed), for error reports.
    pub headers: Vec<String>,
}

fn comparable(h: &str) -> String {
    h.trim().chars().map(|c| if c.is_whitespace() || c == '-' { '_' } else { c.to_ascii_lowercase() }).collect()
}

/// Works out the columns from the header record.
pub fn plan(header: &Record, mobile_column: Option<&str>, name_column: Option<&str>) -> Result<Plan, Failure> {
    if header.error.is_some() {
        return Err(fail::validation("malformed_csv_header", "the CSV header row is malformed (check its quotes)"));
    }
    let headers: Vec<String> = header.fields.iter().map(|h| h.trim().to_string()).collect();
    let find = |want: &str| headers.iter().position(|h| comparable(h) == comparable(want));

    let mobile = match mobile_column {
        Some(col) => find(col).ok_or_else(|| fail::validation("missing_mobile_column", format!("the CSV header has no column `{}` (from `mobileColumn`)", fields::truncate(col, 64))))?,
        None => headers
            .iter()
            .position(|h| MOBILE_HEADERS.contains(&comparable(h).as_str()))
            .ok_or_else(|| fail::validation("missing_mobile_column", "the CSV header has no mobile column: name one `mobile`, `phone`, `phone_number` or `msisdn`, or set `mobileColumn`"))?,
    };
    let name = match name_column {
        Some(col) => Some(find(col).ok_or_else(|| fail::validation("missing_name_column", format!("the CSV header has no column `{}` (from `nameColumn`)", fields::truncate(col, 64))))?),
        None => find("name").filter(|i| *i != mobile),
    };

    // The limit first, in time linear in the header: a header of 100,000
    // columns is refused before any per-column work.
    let custom = headers.len() - 1 - usize::from(name.is_some());
    if custom > fields::MAX_FIELDS {
        return Err(fail::validation("too_many_columns", format!("the CSV has {custom} custom field columns; at most {} are allowed", fields::MAX_FIELDS)));
    }
    let mut field_cols: Vec<(usize, String)> = Vec::with_capacity(custom);
    for (i, h) in headers.iter().enumerate() {
        if i == mobile || Some(i) == name {
            continue;
        }
        let key = fields::header_to_key(h).ok_or_else(|| {
            fail::validation(
                "invalid_column_header",
                format!(
                    "CSV column {} header `{}` is not a valid custom field name: start with a letter, then letters, digits or _ (at most 64; spaces and dashes become _)",
                    i + 1,
                    fields::truncate(h, 64)
                ),
            )
        })?;
        if field_cols.iter().any(|(_, k)| *k == key) {
            return Err(fail::validation("duplicate_column_header", format!("CSV column {} header `{}` repeats an earlier column", i + 1, fields::truncate(h, 64))));
        }
        field_cols.push((i, key));
    }
    Ok(Plan { width: headers.len(), mobile, name, fields: field_cols, headers })
}

/// One valid data row.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct ImportRow {
    pub row: u64,
    pub mobile: String,
    pub name: Option<String>,
    /// (field key, value), in column order; empty cells are left out.
    pub fields: Vec<(String, String)>,
}

/// Why a row was skipped.
#[derive(Debug, PartialEq)]
pub struct RowError {
    pub row: u64,
    pub column: Option<String>,
    pub code: &'static str,
    pub message: String,
}

/// Parses one data record (`row` is its 1-based record number).
pub fn parse_row(plan: &Plan, rec: &Record, row: u64) -> Result<ImportRow, RowError> {
    let err = |column: Option<usize>, code: &'static str, message: String| RowError { row, column: column.map(|c| plan.headers[c].clone()), code, message };
    if let Some(m) = rec.error {
        return Err(err(None, "malformed_csv", m.message().to_string()));
    }
    if rec.fields.len() != plan.width {
        return Err(err(None, "ragged_row", format!("row has {} cells but the header has {}", rec.fields.len(), plan.width)));
    }
    let raw_mobile = rec.fields[plan.mobile].trim();
    if raw_mobile.is_empty() {
        return Err(err(Some(plan.mobile), "missing_mobile", "the mobile cell is empty".into()));
    }
    let mobile = e164::normalize(raw_mobile)
        .ok_or_else(|| err(Some(plan.mobile), "invalid_mobile", "mobile must be E.164: +, a digit 1-9, then 7 to 14 digits (spaces, dashes, dots and parentheses are ignored)".into()))?;
    let name = match plan.name.map(|i| rec.fields[i].trim()) {
        None | Some("") => None,
        Some(n) if n.chars().count() > fields::MAX_NAME_CHARS => {
            return Err(err(plan.name, "invalid_name", format!("name must be at most {} characters", fields::MAX_NAME_CHARS)));
        }
        Some(n) => Some(n.to_string()),
    };
    let mut values = Vec::new();
    for (i, key) in &plan.fields {
        let v = rec.fields[*i].trim();
        if v.is_empty() {
            continue;
        }
        if v.chars().count() > fields::MAX_FIELD_VALUE_CHARS {
            return Err(err(Some(*i), "field_value_too_long", format!("value must be at most {} characters", fields::MAX_FIELD_VALUE_CHARS)));
        }
        values.push((key.clone(), v.to_string()));
    }
    Ok(ImportRow { row, mobile, name, fields: values })
}

#[derive(Default)]
struct Report {
    total: u64,
    created: u64,
    merged: u64,
    failed: u64,
    errors: Vec<J>,
    truncated: bool,
}

impl Report {
    /// A skipped row; `listed` is its entry in `errors`, none when the
    /// prepare step knew the list to be full already.
    fn fail(&mut self, listed: Option<J>) {
        self.failed += 1;
        match listed {
            Some(e) if self.errors.len() < MAX_ERRORS => self.errors.push(e),
            _ => self.truncated = true,
        }
    }
}

/// A skipped row's entry in `errors`.
fn listed(row: u64, column: Option<&str>, code: &str, message: &str) -> J {
    json!({"row": row, "column": column, "code": code, "message": message})
}

/// What [`prepare`] makes of an import, and all the write needs of it.
#[derive(Serialize, Deserialize)]
struct Prepared {
    category_ids: Vec<String>,
    update_existing: bool,
    /// The CSV itself refused (empty, or its header): answered once the
    /// categories are found.
    refused: Option<Refusal>,
    /// The custom field keys of the columns, in column order.
    field_keys: Vec<String>,
    /// The data records (blank ones left out), in file order.
    items: Vec<Item>,
}

#[derive(Serialize, Deserialize)]
enum Item {
    Row(ImportRow),
    /// A skipped row, as `errors` lists it.
    Failed {
        row: u64,
        column: Option<String>,
        code: String,
        message: String,
    },
    /// A skipped row after `MAX_ERRORS` others: it can never be listed.
    Unlisted,
}

/// A failure carried from the prepare step to the write.
#[derive(Serialize, Deserialize)]
struct Refusal {
    status: u16,
    category: String,
    code: String,
    message: String,
    retryable: bool,
}

impl From<Failure> for Refusal {
    fn from(f: Failure) -> Refusal {
        Refusal { status: f.status, category: f.category, code: f.code, message: f.message, retryable: f.retryable }
    }
}

impl From<Refusal> for Failure {
    fn from(r: Refusal) -> Failure {
        fail::failure(r.status, &r.category, &r.code, r.message, r.retryable)
    }
}

struct Ctx<'a> {
    biz: &'a str,
    categories: &'a [String],
    update_existing: bool,
    now: String,
}

fn as_map(fields: &[(String, String)]) -> Map<String, J> {
    fields.iter().map(|(k, v)| (k.clone(), J::String(v.clone()))).collect()
}

/// The columns a batch's new contacts are inserted into: the business and
/// the time every row shares, then each row's own four. One statement per
/// batch costs less than a statement per row (`db::insert_values`).
const INSERTED_COLUMNS: &str = "contacts (business_id, created_at, updated_at, id, mobile, name, fields_json)";

/// Writes one batch: inserts new contacts, updates merged ones, links all of
/// them to the categories. Drains `batch`.
fn flush(ctx: &Ctx, batch: &mut Vec<ImportRow>, report: &mut Report, used_keys: &mut [bool], keys: &[String]) -> HResult<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut mobiles: Vec<&str> = batch.iter().map(|r| r.mobile.as_str()).collect();
    mobiles.sort_unstable();
    mobiles.dedup();
    let (params, ph) = model::in_params(ctx.biz, &mobiles);
    // Current custom fields of every mobile seen so far in this batch
    // (stored ones first); presence means "merge".
    let mut seen: HashMap<String, Map<String, J>> = db::query_as::<(String, String)>(&format!("SELECT mobile, fields_json FROM contacts WHERE business_id = ?1 AND mobile IN ({ph})"), &params)?
        .into_iter()
        .map(|(mobile, fields)| (mobile, model::parse_fields(&fields)))
        .collect();

    // New contacts' own values, row after row (`INSERTED_COLUMNS`).
    let mut inserts: Vec<StoreValue> = Vec::new();
    let mut updates: Vec<Vec<Value>> = Vec::new();
    // A new contact is linked to the categories by the id it gets here
    // (contact, category, row after row); a merged one by its mobile.
    let mut new_links: Vec<StoreValue> = Vec::new();
    let mut linked: Vec<String> = Vec::new();
    for row in batch.drain(..) {
        if let Some(current) = seen.get_mut(&row.mobile) {
            if ctx.update_existing {
                let mut merged = current.clone();
                merged.extend(as_map(&row.fields));
                if merged.len() > fields::MAX_FIELDS {
                    let message = format!("merging this row would give the contact more than {} custom fields", fields::MAX_FIELDS);
                    report.fail(Some(listed(row.row, None, "too_many_fields", &message)));
                    continue;
                }
                updates.push(params![ctx.biz, &row.mobile, row.name.clone(), J::Object(merged.clone()).to_string(), &ctx.now]);
                *current = merged;
                mark_used(&row, used_keys, keys);
            }
            report.merged += 1;
            linked.push(row.mobile);
        } else {
            let name = row.name.clone().unwrap_or_else(|| row.mobile.clone());
            let fields = as_map(&row.fields);
            let id = new_id();
            for category in ctx.categories {
                new_links.extend([StoreValue::Text(id.clone()), StoreValue::Text(category.clone())]);
            }
            inserts.extend([StoreValue::Text(id), StoreValue::Text(row.mobile.clone()), StoreValue::Text(name), StoreValue::Text(J::Object(fields.clone()).to_string())]);
            mark_used(&row, used_keys, keys);
            seen.insert(row.mobile, fields);
            report.created += 1;
        }
    }

    let now = StoreValue::Text(ctx.now.clone());
    db::insert_values(INSERTED_COLUMNS, &[StoreValue::Text(ctx.biz.to_string()), now.clone(), now], 4, BATCH, inserts)?;
    db::execute_many("UPDATE contacts SET name = COALESCE(?3, name), fields_json = ?4, updated_at = ?5 WHERE business_id = ?1 AND mobile = ?2", &updates)?;
    db::insert_values("contact_categories (business_id, contact_id, category_id)", &[StoreValue::Text(ctx.biz.to_string())], 2, BATCH, new_links)?;
    linked.sort_unstable();
    linked.dedup();
    contact::link_categories_by_mobile(ctx.biz, &linked, ctx.categories)?;
    Ok(())
}

fn mark_used(row: &ImportRow, used: &mut [bool], keys: &[String]) {
    for (n, key) in keys.iter().enumerate() {
        if row.fields.iter().any(|(k, _)| k == key) {
            used[n] = true;
        }
    }
}

/// The prepare step, before the write transaction: the body and every
/// record parsed, nothing read or written.
pub fn prepare(req: &Request) -> HResult<Vec<u8>> {
    postcard::to_allocvec(&parse(req)?).map_err(|_| fail::internal("import_not_prepared", "the import could not be prepared"))
}

fn parse(req: &Request) -> HResult<Prepared> {
    let body: ImportBody = req::body(req)?;
    let mut prepared = Prepared { category_ids: body.category_ids, update_existing: body.update_existing, refused: None, field_keys: Vec::new(), items: Vec::new() };
    let mut records = csv::Reader::new(&body.csv);
    let planned = match records.next() {
        None => Err(fail::validation("empty_csv", "`csv` is empty: it needs a header row and data rows")),
        Some(header) => plan(&header, body.mobile_column.as_deref(), body.name_column.as_deref()),
    };
    let plan = match planned {
        Ok(plan) => plan,
        Err(f) => {
            prepared.refused = Some(f.into());
            return Ok(prepared);
        }
    };
    prepared.field_keys = plan.fields.iter().map(|(_, k)| k.clone()).collect();
    let mut listed = 0;
    for (i, rec) in records.enumerate() {
        if rec.is_blank() {
            continue;
        }
        prepared.items.push(match parse_row(&plan, &rec, i as u64 + 2) {
            Ok(row) => Item::Row(row),
            // Only the first MAX_ERRORS failures can be listed, whatever
            // the write adds: the rest travel as a mark.
            Err(_) if listed >= MAX_ERRORS => Item::Unlisted,
            Err(e) => {
                listed += 1;
                Item::Failed { row: e.row, column: e.column, code: e.code.to_string(), message: e.message }
            }
        });
    }
    Ok(prepared)
}

/// The write, inside the request's transaction: the prepared rows (or, for
/// a caller without the prepare step, the body parsed here).
pub fn run(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let prepared: Prepared = match &req.prepared {
        Some(bytes) => postcard::from_bytes(bytes).map_err(|_| fail::internal("import_not_prepared", "the prepared import could not be read"))?,
        None => parse(req)?,
    };
    let categories = model::resolve_categories(biz, &prepared.category_ids)?;
    if let Some(refused) = prepared.refused {
        return Err(refused.into());
    }

    let keys = prepared.field_keys;
    let ctx = Ctx { biz, categories: &categories, update_existing: prepared.update_existing, now: now() };
    let mut report = Report::default();
    let mut used_keys = vec![false; keys.len()];
    let mut batch: Vec<ImportRow> = Vec::with_capacity(BATCH);
    for item in prepared.items {
        report.total += 1;
        match item {
            Item::Row(row) => batch.push(row),
            Item::Failed { row, column, code, message } => report.fail(Some(listed(row, column.as_deref(), &code, &message))),
            Item::Unlisted => report.fail(None),
        }
        if batch.len() >= BATCH {
            flush(&ctx, &mut batch, &mut report, &mut used_keys, &keys)?;
        }
    }
    flush(&ctx, &mut batch, &mut report, &mut used_keys, &keys)?;

    let used: Vec<String> = keys.iter().zip(&used_keys).filter(|(_, u)| **u).map(|(k, _)| k.clone()).collect();
    model::register_field_keys(biz, used.iter(), &ctx.now)?;

    ok(&json!({
        "totalRows": report.total,
        "created": report.created,
        "merged": report.merged,
        "failed": report.failed,
        "errors": report.errors,
        "errorsTruncated": report.truncated,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(cells: &[&str]) -> Record {
        Record { fields: cells.iter().map(|s| s.to_string()).collect(), error: None }
    }

    #[test]
    fn plan_defaults() {
        let p = plan(&rec(&["Name", " Phone Number ", "city", "Date of birth"]), None, None).unwrap();
        assert_eq!(p.mobile, 1);
        assert_eq!(p.name, Some(0));
        assert_eq!(p.fields, vec![(2, "city".to_string()), (3, "Date_of_birth".to_string())]);
        let p = plan(&rec(&["msisdn"]), None, None).unwrap();
        assert_eq!((p.mobile, p.name), (0, None));
    }

    #[test]
    fn plan_explicit_and_errors() {
        let p = plan(&rec(&["cell", "full name", "tier"]), Some("Cell"), Some("full name")).unwrap();
        assert_eq!((p.mobile, p.name), (0, Some(1)));
        assert_eq!(plan(&rec(&["name", "city"]), None, None).unwrap_err().code, "missing_mobile_column");
        assert_eq!(plan(&rec(&["cell"]), Some("mobile"), None).unwrap_err().code, "missing_mobile_column");
        assert_eq!(plan(&rec(&["mobile"]), None, Some("nom")).unwrap_err().code, "missing_name_column");
        assert_eq!(plan(&rec(&["mobile", "e-mail?"]), None, None).unwrap_err().code, "invalid_column_header");
        assert_eq!(plan(&rec(&["mobile", ""]), None, None).unwrap_err().code, "invalid_column_header");
        assert_eq!(plan(&rec(&["mobile", "a b", "a-b"]), None, None).unwrap_err().code, "duplicate_column_header");
        let mut many = vec!["mobile".to_string()];
        many.extend((0..51).map(|i| format!("f{i}")));
        let many: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
        assert_eq!(plan(&rec(&many), None, None).unwrap_err().code, "too_many_columns");
    }

    #[test]
    fn rows() {
        let p = plan(&rec(&["mobile", "name", "city"]), None, None).unwrap();
        let r = parse_row(&p, &rec(&[" +1 415 555 0123 ", " Ada ", ""]), 2).unwrap();
        assert_eq!(r.mobile, "+14155550123");
        assert_eq!(r.name.as_deref(), Some("Ada"));
        assert!(r.fields.is_empty());
        let r = parse_row(&p, &rec(&["+14155550123", "", "Paris"]), 3).unwrap();
        assert_eq!(r.name, None);
        assert_eq!(r.fields, vec![("city".to_string(), "Paris".to_string())]);

        let e = parse_row(&p, &rec(&["+14155550123", "x"]), 4).unwrap_err();
        assert_eq!((e.code, e.row, e.column.clone()), ("ragged_row", 4, None));
        let e = parse_row(&p, &rec(&["0415", "x", ""]), 5).unwrap_err();
        assert_eq!((e.code, e.column.as_deref()), ("invalid_mobile", Some("mobile")));
        let e = parse_row(&p, &rec(&["  ", "x", ""]), 5).unwrap_err();
        assert_eq!(e.code, "missing_mobile");
        let long = "y".repeat(1001);
        let e = parse_row(&p, &rec(&["+14155550123", "x", &long]), 6).unwrap_err();
        assert_eq!((e.code, e.column.as_deref()), ("field_value_too_long", Some("city")));
        let bad = Record { fields: vec!["+14155550123".into(), "x".into(), "".into()], error: Some(csv::Malformed::TextAfterQuote) };
        assert_eq!(parse_row(&p, &bad, 7).unwrap_err().code, "malformed_csv");
    }
}
