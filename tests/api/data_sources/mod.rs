//! The data-sources component (operations 17-23) and the ingestion job over
//! HTTP: sources, uploads of every format, review and resolve, failures that
//! leave the active version untouched, tenancy, and a crash mid-ingestion.

use crate::harness::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

mod raw_uploads;

pub(super) struct Ctx {
    s: Server,
    t: Tenant,
    dir: DataDir,
}

pub(super) fn setup() -> Ctx {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    Ctx { s, t, dir }
}

impl Ctx {
    fn k(&self) -> Req<'_> {
        self.s.as_key(&self.t.key)
    }
    fn list(&self, extra: &str) -> Resp {
        self.k().get(&format!("/api/v1/data-sources?businessId={}{extra}", self.t.business))
    }
    fn source(&self, id: &str) -> Option<Value> {
        self.list("&limit=200").data()["dataSources"].as_array().unwrap().iter().find(|d| d["id"] == id).cloned()
    }
    fn create(&self, body: Value) -> Resp {
        let mut b = body;
        b["businessId"] = json!(self.t.business);
        self.k().fresh().post("/api/v1/data-sources", &b)
    }
    fn table(&self, name: &str) -> String {
        self.create(json!({"name": name, "class": "structured", "kind": "table"})).assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string()
    }
    fn upload(&self, source: &str, file: &str, format: &str, bytes: &[u8]) -> Resp {
        self.k().fresh().post("/api/v1/data-sources/upload", &json!({"businessId": self.t.business, "dataSourceId": source, "fileName": file, "format": format, "contentBase64": b64(bytes)}))
    }
    fn ingest(&self, source: &str, file: &str, format: &str, bytes: &[u8]) -> String {
        let r = self.upload(source, file, format, bytes);
        let d = r.assert_ok(202);
        assert_eq!(d["stage"], "received");
        assert_eq!(d["dataSourceId"], source);
        d["ingestionId"].as_str().unwrap().to_string()
    }
    fn inspect(&self, id: &str) -> Resp {
        self.k().get(&format!("/api/v1/data-sources/ingestions?businessId={}&ingestionId={id}", self.t.business))
    }
    /// Polls until the stage is one of `stages` (bounded).
    fn wait(&self, id: &str, stages: &[&str]) -> Value {
        let started = Instant::now();
        loop {
            let r = self.inspect(id);
            let d = r.assert_ok(200).clone();
            if stages.contains(&d["ingestion"]["stage"].as_str().unwrap()) {
                return d;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "ingestion stuck: {d}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fn resolve(&self, id: &str, columns: Value) -> Resp {
        self.k().fresh().patch("/api/v1/data-sources/ingestions", &json!({"businessId": self.t.business, "ingestionId": id, "columns": columns}))
    }
    fn contact(&self, mobile: &str, fields: Value) {
        let cat = self.k().fresh().post("/api/v1/contacts/categories", &json!({"businessId": self.t.business, "name": "All"}));
        let cat = cat.data()["category"]["id"].as_str().unwrap().to_string();
        self.k().fresh().post("/api/v1/contacts", &json!({"businessId": self.t.business, "name": "Ada", "mobile": mobile, "categoryIds": [cat], "fields": fields})).assert_ok(201);
    }
}

pub(super) fn keys(fields: &Value) -> Vec<String> {
    fields.as_array().unwrap().iter().map(|f| f["key"].as_str().unwrap().to_string()).collect()
}

#[test]
fn sources_built_in_contacts_crud_and_pagination() {
    let c = setup();
    c.contact("+447700900123", json!({"city": "London", "tier": "gold"}));
    let r = c.list("");
    let list = r.assert_ok(200)["dataSources"].as_array().unwrap().clone();
    assert_eq!(list.len(), 1);
    let contacts = &list[0];
    assert_eq!(contacts["builtIn"], true);
    assert_eq!(contacts["name"], "Contacts");
    assert_eq!(contacts["class"], "structured");
    assert_eq!(keys(&contacts["fields"]), vec!["mobile", "name", "city", "tier"]);
    assert_eq!(contacts["contactVariableFields"], json!(["mobile", "name", "city", "tier"]));
    assert_eq!(contacts["itemCount"], 1);
    assert!(!r.text.contains("+447700900123") && !r.text.contains("London"), "no contact values: {}", r.text);
    let builtin = contacts["id"].as_str().unwrap().to_string();

    // Create: structured with declared fields, unstructured with content.
    let r = c.create(json!({"name": " Products ", "class": "structured", "kind": "table", "description": "catalog",
        "fields": [{"key": "sku", "label": "SKU", "type": "text"}, {"key": "price", "label": "Price", "type": "number"}]}));
    let p = r.assert_ok(201)["dataSource"].clone();
    assert_eq!(p["name"], "Products");
    assert_eq!(p["builtIn"], false);
    assert_eq!(p["status"], "active");
    assert_eq!(keys(&p["fields"]), vec!["sku", "price"]);
    assert_eq!(p["itemCount"], 0);
    assert_eq!(p["activeVersionId"], Value::Null);
    assert_eq!(p["contactVariableFields"], json!([]));
    let products = p["id"].as_str().unwrap().to_string();
    let r = c.create(json!({"name": "FAQ", "class": "unstructured", "kind": "text", "content": "We open at 9."}));
    let faq = r.assert_ok(201)["dataSource"].clone();
    assert_eq!(faq["itemCount"], 1);
    assert_eq!(faq["fields"], json!([]));
    let faq = faq["id"].as_str().unwrap().to_string();
    c.create(json!({"name": "Dup", "class": "structured", "kind": "json", "fields": [{"key": "a", "label": "A", "type": "text"}, {"key": "A", "label": "B", "type": "text"}]}))
        .assert_failure(400, "validation");
    c.create(json!({"name": "   ", "class": "structured", "kind": "json"})).assert_failure(400, "validation");
    c.create(json!({"name": "Bad", "class": "unstructured", "kind": "table"})).assert_failure(400, "validation");

    // Pagination: limit 1 walks all three in creation order.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = c.list(&format!("&limit=1{cursor}"));
        let d = r.assert_ok(200);
        seen.extend(d["dataSources"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_string()));
        match d["nextCursor"].as_str() {
            Some(n) => cursor = format!("&cursor={n}"),
            None => break,
        }
    }
    assert_eq!(seen, vec![builtin.clone(), products.clone(), faq.clone()]);
    c.list("&cursor=garbage").assert_failure(400, "validation");

    // Update: metadata, status, unstructured content.
    let upd = |body: Value| {
        let mut b = body;
        b["businessId"] = json!(c.t.business);
        c.k().fresh().patch("/api/v1/data-sources", &b)
    };
    let d = upd(json!({"dataSourceId": faq, "content": "", "status": "paused", "name": "FAQ v2"})).assert_ok(200)["dataSource"].clone();
    assert_eq!((d["status"].as_str(), d["name"].as_str(), d["itemCount"].as_i64()), (Some("paused"), Some("FAQ v2"), Some(0)));
    upd(json!({"dataSourceId": faq, "status": "active"})).assert_ok(200);
    assert_eq!(upd(json!({"dataSourceId": products, "content": "x"})).assert_failure(409, "conflict").code(), "content_not_supported");
    assert_eq!(upd(json!({"dataSourceId": builtin, "name": "People"})).assert_failure(409, "conflict").code(), "built_in_source");
    assert_eq!(upd(json!({"dataSourceId": uuid::Uuid::new_v4().to_string(), "name": "x"})).assert_failure(404, "not_found").code(), "data_source_not_found");

    // Archive: built-in refused; twice is harmless; archived is gone from the list.
    let arch = |id: &str| c.k().fresh().delete("/api/v1/data-sources", &json!({"businessId": c.t.business, "dataSourceId": id}));
    assert_eq!(arch(&builtin).assert_failure(409, "conflict").code(), "built_in_source");
    assert_eq!(arch(&faq).assert_ok(200)["dataSource"]["status"], "archived");
    assert_eq!(arch(&faq).assert_ok(200)["dataSource"]["status"], "archived");
    assert!(c.source(&faq).is_none());
    assert_eq!(upd(json!({"dataSourceId": faq, "name": "again"})).assert_failure(409, "conflict").code(), "data_source_archived");
    assert_eq!(arch(&uuid::Uuid::new_v4().to_string()).assert_failure(404, "not_found").code(), "data_source_not_found");

    // Uploads only into live structured, non-built-in sources.
    assert_eq!(c.upload(&faq, "a.csv", "csv", b"a\n1\n").assert_failure(409, "conflict").code(), "data_source_archived");
    assert_eq!(c.upload(&builtin, "a.csv", "csv", b"a\n1\n").assert_failure(409, "conflict").code(), "built_in_source");
    let notes = c.create(json!({"name": "Notes", "class": "unstructured", "kind": "text"})).assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
    assert_eq!(c.upload(&notes, "a.csv", "csv", b"a\n1\n").assert_failure(409, "conflict").code(), "unstructured_source");
    assert_eq!(c.upload(&uuid::Uuid::new_v4().to_string(), "a.csv", "csv", b"a\n").assert_failure(404, "not_found").code(), "data_source_not_found");
    let bad = c.k().fresh().post("/api/v1/data-sources/upload", &json!({"businessId": c.t.business, "dataSourceId": products, "fileName": "a.csv", "format": "csv", "contentBase64": "Zm9="}));
    assert_eq!(bad.assert_failure(400, "validation").code(), "invalid_request", "the document's pattern states canonical base64");
    assert_eq!(bad.body["error"]["details"][0]["field"], "contentBase64");
    c.inspect(&uuid::Uuid::new_v4().to_string()).assert_failure(404, "not_found");
}

#[test]
fn csv_activates_then_a_ragged_csv_waits_for_review_and_resolve_keeps_the_old_version() {
    let c = setup();
    let src = c.table("Prices");
    let v1 = c.ingest(&src, "prices.csv", "csv", b"sku,price,in_stock,updated\r\nA-1,12.50,true,2024-05-01\r\n\"B,2\",3,false,2024-05-02\r\n");
    let d = c.wait(&v1, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "active", "{d}");
    assert_eq!(d["ingestion"]["rowCount"], 2);
    assert_eq!(d["ingestion"]["versionNumber"], 1);
    assert_eq!(d["issues"], json!([]));
    let s = c.source(&src).unwrap();
    assert_eq!(s["activeVersionId"], v1.as_str());
    assert_eq!(s["itemCount"], 2);
    assert_eq!(
        s["fields"],
        json!([
        {"key": "sku", "label": "sku", "type": "text", "lookup": true},
        {"key": "price", "label": "price", "type": "number", "lookup": false},
        {"key": "in_stock", "label": "in_stock", "type": "boolean", "lookup": false},
        {"key": "updated", "label": "updated", "type": "date", "lookup": false}])
    );

    // A ragged row: stored losslessly, reported, and the version waits.
    let v2 = c.ingest(&src, "prices2.csv", "csv", b"sku,price,in_stock,updated\nC-3,1,true,2024-06-01\nD-4,2\nE-5,3,false,2024-06-02\n");
    let d = c.wait(&v2, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "needs_review", "{d}");
    assert_eq!(d["ingestion"]["versionNumber"], 2);
    assert_eq!(d["ingestion"]["rowCount"], 3);
    assert_eq!(d["ingestion"]["issueCount"], 1);
    let issue = &d["issues"][0];
    assert_eq!(issue["row"], 2);
    assert_eq!(issue["column"], Value::Null);
    assert!(issue["problem"].as_str().unwrap().contains("ragged"), "{issue}");
    assert_eq!(c.source(&src).unwrap()["activeVersionId"], v1.as_str(), "an unresolved version never becomes active");
    assert_eq!(c.source(&src).unwrap()["itemCount"], 2);

    // Resolve activates it; v1 stays readable and unchanged (now `ready`).
    let r = c.resolve(&v2, json!([]));
    assert_eq!(r.assert_ok(200)["ingestion"]["stage"], "active", "{}", r.text);
    let s = c.source(&src).unwrap();
    assert_eq!(s["activeVersionId"], v2.as_str());
    assert_eq!(s["itemCount"], 3);
    let old = c.inspect(&v1);
    let old = old.assert_ok(200);
    assert_eq!(old["ingestion"]["stage"], "ready");
    assert_eq!(old["ingestion"]["rowCount"], 2);
    // Resolving an active version is a conflict; a ready one re-activates.
    assert_eq!(c.resolve(&v2, json!([])).assert_failure(409, "conflict").code(), "ingestion_not_resolvable");
    assert_eq!(c.resolve(&v1, json!([])).assert_ok(200)["ingestion"]["stage"], "active");
    assert_eq!(c.source(&src).unwrap()["itemCount"], 2);
}

#[test]
fn ambiguous_columns_need_review_and_resolve_reinterprets() {
    let c = setup();
    let src = c.table("Customers");
    let v1 = c.ingest(&src, "a.csv", "csv", b"name\nAda\n");
    assert_eq!(c.wait(&v1, &["active", "needs_review", "failed"])["ingestion"]["stage"], "active");
    let csv = b"name,zip,joined,phone,mixed\nAda,00123,03/04/2024,4155550123,12\nBob,02134,13/04/2024,4155550124,abc\n";
    let v2 = c.ingest(&src, "b.csv", "csv", csv);
    let d = c.wait(&v2, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "needs_review", "{d}");
    let review = d["columnsNeedingReview"].as_array().unwrap();
    let by = |name: &str| review.iter().find(|r| r["column"] == name).unwrap_or_else(|| panic!("{name} not in {d}")).clone();
    assert_eq!(review.len(), 4, "{d}");
    assert_eq!(by("zip")["detectedTypes"], json!(["integer", "text"]));
    assert_eq!(by("zip")["suggestedType"], "text");
    assert_eq!(by("zip")["samples"], json!(["00123", "02134"]));
    assert_eq!(by("joined")["suggestedType"], "date");
    assert_eq!(by("phone")["suggestedType"], "phone");
    assert_eq!(by("mixed")["suggestedType"], "text");
    // Its columns differ from the active version's: that is said too.
    assert_eq!(d["issues"].as_array().unwrap().len(), 1, "{d}");
    assert!(d["issues"][0]["problem"].as_str().unwrap().contains("new: joined, mixed, phone, zip"), "{d}");

    // Every column needing review must be resolved; names must exist.
    let r = c.resolve(&v2, json!([{"column": "zip", "type": "text"}]));
    assert_eq!(r.assert_failure(400, "validation").code(), "unresolved_columns");
    assert!(r.message().contains("joined"));
    let r = c.resolve(&v2, json!([{"column": "nope", "type": "text"}]));
    assert_eq!(r.assert_failure(400, "validation").code(), "unknown_column");
    assert_eq!(c.source(&src).unwrap()["activeVersionId"], v1.as_str());

    // zip as integer changes the type: re-interpretation, then activation.
    let r = c.resolve(&v2, json!([{"column": "zip", "type": "integer"}, {"column": "joined", "type": "date"}, {"column": "phone", "type": "phone"}, {"column": "mixed", "type": "text"}]));
    let stage = r.assert_ok(200)["ingestion"]["stage"].as_str().unwrap().to_string();
    assert!(stage == "validating" || stage == "active", "{}", r.text);
    let d = c.wait(&v2, &["active", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "active");
    assert_eq!(d["columnsNeedingReview"], json!([]));
    let s = c.source(&src).unwrap();
    assert_eq!(s["activeVersionId"], v2.as_str());
    assert_eq!(s["itemCount"], 2);
    let types: Vec<(String, String)> = s["fields"].as_array().unwrap().iter().map(|f| (f["key"].as_str().unwrap().into(), f["type"].as_str().unwrap().into())).collect();
    assert_eq!(types, vec![("name".into(), "text".into()), ("zip".into(), "integer".into()), ("joined".into(), "date".into()), ("phone".into(), "phone".into()), ("mixed".into(), "text".into())]);
    let old = c.inspect(&v1);
    assert_eq!(old.assert_ok(200)["ingestion"]["rowCount"], 1);
    assert_eq!(old.assert_ok(200)["ingestion"]["stage"], "ready");
}

#[test]
fn declared_fields_check_types_and_json_uploads() {
    let c = setup();
    let src = c
        .create(json!({"name": "Orders", "class": "structured", "kind": "json",
            "fields": [{"key": "orderId", "label": "Order", "type": "integer"}, {"key": "total", "label": "Total", "type": "number"}]}))
        .assert_ok(201)["dataSource"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let good = br#"[{"orderId": 1, "total": 12.50, "meta": {"a": [1, 2]}, "note": "first"},
                    {"orderId": 2, "total": 3, "note": null}]"#;
    let v1 = c.ingest(&src, "orders.json", "json", good);
    let d = c.wait(&v1, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "active", "{d}");
    assert_eq!(d["ingestion"]["rowCount"], 2);
    let s = c.source(&src).unwrap();
    assert_eq!(keys(&s["fields"]), vec!["orderId", "total"], "declared fields stay as declared");
    assert_eq!(s["itemCount"], 2);

    // A bad element and a value that does not fit a declared type.
    let bad = br#"[{"orderId": 3, "total": 1}, 42, {"orderId": "x4", "total": 2}]"#;
    let v2 = c.ingest(&src, "orders2.json", "json", bad);
    let d = c.wait(&v2, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "needs_review", "{d}");
    assert_eq!(d["ingestion"]["rowCount"], 2);
    let issues = d["issues"].as_array().unwrap();
    assert!(issues.iter().any(|i| i["row"] == 2 && i["problem"].as_str().unwrap().contains("not an object")), "{d}");
    assert!(issues.iter().any(|i| i["row"] == 3 && i["column"] == "orderId" && i["problem"].as_str().unwrap().contains("not an integer")), "{d}");
    let r = c.resolve(&v2, json!([{"column": "orderId", "type": "text"}]));
    assert_eq!(r.assert_failure(400, "validation").code(), "declared_column");

    // Not an array of objects: failed with a reason; the active version stays.
    for (body, needle) in [(&br#"{"orderId": 1}"#[..], "array of objects"), (b"[1, 2, 3]", "array of objects"), (b"[{\"a\": 1}", "never closed")] {
        let v = c.ingest(&src, "x.json", "json", body);
        let d = c.wait(&v, &["active", "needs_review", "failed"]);
        assert_eq!(d["ingestion"]["stage"], "failed", "{d}");
        assert!(d["ingestion"]["failureReason"].as_str().unwrap().contains(needle), "{d}");
        assert_eq!(c.source(&src).unwrap()["activeVersionId"], v1.as_str());
        assert_eq!(c.resolve(&v, json!([])).assert_failure(409, "conflict").code(), "ingestion_not_resolvable");
    }
}

/// An XLSX made by python3's zipfile (deflate), with shared strings.
pub(super) fn xlsx(rows: &[&[&str]]) -> Vec<u8> {
    let script = r#"
import io, sys, json, zipfile
rows = json.loads(sys.argv[1])
strings = []
def cell(r, c, v):
    ref = chr(65 + c) + str(r + 1)
    try:
        float(v)
        return '<c r="%s"><v>%s</v></c>' % (ref, v)
    except ValueError:
        if v not in strings: strings.append(v)
        return '<c r="%s" t="s"><v>%d</v></c>' % (ref, strings.index(v))
sheet = ''.join('<row r="%d">%s</row>' % (i + 1, ''.join(cell(i, j, v) for j, v in enumerate(r))) for i, r in enumerate(rows))
esc = lambda s: s.replace('&', '&amp;').replace('<', '&lt;')
buf = io.BytesIO()
with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
    z.writestr('xl/workbook.xml', '<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="S" sheetId="1" r:id="rId7"/></sheets></workbook>')
    z.writestr('xl/_rels/workbook.xml.rels', '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId7" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/data.xml"/></Relationships>')
    z.writestr('xl/sharedStrings.xml', '<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">%s</sst>' % ''.join('<si><t>%s</t></si>' % esc(s) for s in strings))
    z.writestr('xl/worksheets/data.xml', '<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>%s</sheetData></worksheet>' % sheet)
sys.stdout.buffer.write(buf.getvalue())
"#;
    let out = std::process::Command::new("python3").arg("-c").arg(script).arg(serde_json::to_string(rows).unwrap()).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn spreadsheets_and_corrupt_files() {
    let c = setup();
    let src = c.table("Stock");
    let book = xlsx(&[&["item", "qty", "note"], &["Bolt & nut", "12", "a, b"], &["Washer", "3.5", "x"], &["Nail", "7", "y"]]);
    let v1 = c.ingest(&src, "stock.xlsx", "xlsx", &book);
    let d = c.wait(&v1, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "active", "{d}");
    assert_eq!(d["ingestion"]["rowCount"], 3);
    let s = c.source(&src).unwrap();
    assert_eq!(
        s["fields"],
        json!([
        {"key": "item", "label": "item", "type": "text", "lookup": true},
        {"key": "qty", "label": "qty", "type": "number", "lookup": false},
        {"key": "note", "label": "note", "type": "text", "lookup": false}])
    );
    let v_m = c.ingest(&src, "stock.xlsm", "xlsm", &book);
    assert_eq!(c.wait(&v_m, &["active", "needs_review", "failed"])["ingestion"]["stage"], "active");

    // Corrupt files fail with a reason and leave the active version alone.
    let mut truncated = book.clone();
    truncated.truncate(book.len() / 2);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("xlsx", b"this is not a zip archive at all".to_vec(), "not a valid XLSX"),
        ("xlsx", truncated, "XLSX"),
        ("csv", b"name,city\nJos\xe9,Paris\n".to_vec(), "not valid UTF-8"),
        ("csv", b"\n\n".to_vec(), "empty"),
    ];
    for (format, bytes, needle) in cases {
        let v = c.ingest(&src, "bad", format, &bytes);
        let d = c.wait(&v, &["active", "needs_review", "failed"]);
        assert_eq!(d["ingestion"]["stage"], "failed", "{format}: {d}");
        assert_eq!(d["ingestion"]["rowCount"], 0);
        assert!(d["ingestion"]["failureReason"].as_str().unwrap().contains(needle), "{format}: {d}");
        assert_eq!(c.source(&src).unwrap()["activeVersionId"], v_m.as_str());
    }
    // TSV with quoting (a source of its own: other columns would wait for
    // review), and a header-only file, which waits for review.
    let tsv = c.table("Tabbed");
    let v = c.ingest(&tsv, "t.tsv", "tsv", b"a\tb\n\"x\ty\"\t2\n");
    let d = c.wait(&v, &["active", "needs_review", "failed"]);
    assert_eq!((d["ingestion"]["stage"].as_str(), d["ingestion"]["rowCount"].as_i64()), (Some("active"), Some(1)), "{d}");
    let v = c.ingest(&tsv, "h.tsv", "tsv", b"a\tb\n");
    let d = c.wait(&v, &["active", "needs_review", "failed"]);
    assert_eq!((d["ingestion"]["stage"].as_str(), d["ingestion"]["rowCount"].as_i64()), (Some("needs_review"), Some(0)), "{d}");
}

/// A JSON upload's base64 is decoded in the component's prepare step,
/// before the write transaction (issue 41); the write stores the decoded
/// file's chunks, over several chunk rows here, and ingestion reads them
/// back whole.
#[test]
fn json_uploads_are_decoded_before_the_write_transaction() {
    let c = setup();
    let src = c.table("Parts");
    let mut csv = String::from("sku,qty\n");
    let mut rows = 0;
    while csv.len() < 700_000 {
        csv.push_str(&format!("S{rows:06},{}\n", rows % 97));
        rows += 1;
    }
    let prepared = |s: &crate::harness::Server| s.metric(r#"switchboard_prepare_seconds_count{operation="uploadDataSourceAsset"}"#) as u64;
    let v = c.ingest(&src, "parts.csv", "csv", csv.as_bytes());
    let d = c.wait(&v, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "active", "{d}");
    assert_eq!(d["ingestion"]["rowCount"], rows);
    assert_eq!(prepared(&c.s), 1);
    // An unknown source is still a 404 (the write's check), after the step.
    let r = c.upload(&uuid::Uuid::new_v4().to_string(), "x.csv", "csv", b"a\n1\n");
    r.assert_failure(404, "not_found");
    assert_eq!(prepared(&c.s), 2);
}

#[test]
fn tenancy_isolation() {
    let c = setup();
    let other = tenant(&c.dir.0, "all");
    let src = c.table("Mine");
    let v = c.ingest(&src, "a.csv", "csv", b"a\n1\n");
    c.wait(&v, &["active"]);
    let o = || c.s.as_key(&other.key);
    let r = o().get(&format!("/api/v1/data-sources?businessId={}", other.business));
    let theirs = r.assert_ok(200)["dataSources"].as_array().unwrap().clone();
    assert_eq!(theirs.len(), 1, "only their own Contacts source");
    assert!(!r.text.contains(&src));
    assert_eq!(o().fresh().patch("/api/v1/data-sources", &json!({"businessId": other.business, "dataSourceId": src, "name": "x"})).assert_failure(404, "not_found").code(), "data_source_not_found");
    assert_eq!(o().fresh().delete("/api/v1/data-sources", &json!({"businessId": other.business, "dataSourceId": src})).assert_failure(404, "not_found").code(), "data_source_not_found");
    let up = o().fresh().post("/api/v1/data-sources/upload", &json!({"businessId": other.business, "dataSourceId": src, "fileName": "a.csv", "format": "csv", "contentBase64": b64(b"a\n")}));
    assert_eq!(up.assert_failure(404, "not_found").code(), "data_source_not_found");
    assert_eq!(o().get(&format!("/api/v1/data-sources/ingestions?businessId={}&ingestionId={v}", other.business)).assert_failure(404, "not_found").code(), "ingestion_not_found");
    let r = o().fresh().patch("/api/v1/data-sources/ingestions", &json!({"businessId": other.business, "ingestionId": v, "columns": []}));
    assert_eq!(r.assert_failure(404, "not_found").code(), "ingestion_not_found");
    // The other business's key cannot name this business.
    o().get(&format!("/api/v1/data-sources?businessId={}", c.t.business)).assert_failure(403, "authorization");
    assert_eq!(c.source(&src).unwrap()["name"], "Mine");
}

#[test]
fn a_crash_mid_ingestion_resumes_to_exactly_one_complete_version() {
    let mut c = setup();
    let src = c.table("Big");
    let rows = 200_000usize;
    let mut csv = String::from("id,name,score,city\n");
    for i in 0..rows {
        csv.push_str(&format!("{i},\"Name, {i}\",{}.5,City{}\n", i % 1000, i % 97));
    }
    assert!(csv.len() < 7 << 20, "fits the default body limit as base64");
    let v = c.ingest(&src, "big.csv", "csv", csv.as_bytes());
    // Wait until some steps have committed, then kill -9.
    let started = Instant::now();
    loop {
        let d = c.inspect(&v).assert_ok(200).clone();
        let (stage, n) = (d["ingestion"]["stage"].as_str().unwrap().to_string(), d["ingestion"]["rowCount"].as_i64().unwrap());
        if stage == "parsing" && n > 0 {
            assert!((n as usize) < rows, "still mid-way");
            break;
        }
        assert!(stage == "received" || stage == "parsing", "finished before the crash could happen: {d}");
        assert!(started.elapsed() < Duration::from_secs(120), "no parsing progress: {d}");
        std::thread::sleep(Duration::from_millis(10));
    }
    c.s.child.kill().unwrap();
    c.s.child.wait().unwrap();
    // Restart on the same data dir; the job's lease expires and it resumes.
    c.s = Server::start(&c.dir.0);
    let started = Instant::now();
    let d = loop {
        let d = c.inspect(&v).assert_ok(200).clone();
        if matches!(d["ingestion"]["stage"].as_str(), Some("active" | "needs_review" | "failed")) {
            break d;
        }
        assert!(started.elapsed() < Duration::from_secs(240), "ingestion did not finish after restart: {d}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(d["ingestion"]["stage"], "active", "{d}");
    assert_eq!(d["ingestion"]["rowCount"], rows as i64);
    assert_eq!(d["ingestion"]["issueCount"], 0);
    assert_eq!(d["ingestion"]["versionNumber"], 1);
    let s = c.source(&src).unwrap();
    assert_eq!(s["activeVersionId"], v.as_str());
    assert_eq!(s["itemCount"], rows as i64);
    // Exactly one version, with exactly the rows 1..=N.
    let text = sql(
        &c.dir.0,
        &format!(
            "SELECT COUNT(*), COUNT(DISTINCT row_number), MIN(row_number), MAX(row_number), COUNT(interpreted) FROM ingestion_rows WHERE version_id = '{v}'; SELECT COUNT(*) FROM ingestion_versions"
        ),
    );
    assert_eq!(text.trim(), format!("{rows}|{rows}|1|{rows}|{rows}\n1"), "{text}");
}

// ---- The raw (streamed) form of the upload ----

/// Sends a raw upload: the file as the body, metadata in `query` (after
/// `?`). `chunked` sends it without a Content-Length, as a client streaming
/// from a pipe would, so the server only learns the size at the end.
/// An XLSX whose cells carry number formats: `rows` of (text, style), style
/// 0 = General (strings are shared strings), 1 = built-in date (14),
/// 2 = custom `yyyy-mm-dd hh:mm`, 3 = built-in time (21).
fn xlsx_styled(rows: &[&[(&str, u8)]], date1904: bool) -> Vec<u8> {
    let script = r#"
import io, sys, json, zipfile
rows, date1904 = json.loads(sys.argv[1]), sys.argv[2] == "1"
strings = []
def cell(r, c, v, s):
    ref = chr(65 + c) + str(r + 1)
    try:
        float(v)
        return '<c r="%s" s="%d"><v>%s</v></c>' % (ref, s, v)
    except ValueError:
        if v not in strings: strings.append(v)
        return '<c r="%s" t="s"><v>%d</v></c>' % (ref, strings.index(v))
sheet = ''.join('<row r="%d">%s</row>' % (i + 1, ''.join(cell(i, j, v, s) for j, (v, s) in enumerate(r))) for i, r in enumerate(rows))
ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
buf = io.BytesIO()
with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
    z.writestr('xl/workbook.xml', '<?xml version="1.0"?><workbook %s xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">%s<sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>' % (ns, '<workbookPr date1904="1"/>' if date1904 else ''))
    z.writestr('xl/_rels/workbook.xml.rels', '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>')
    z.writestr('xl/styles.xml', '<?xml version="1.0"?><styleSheet %s><numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy-mm-dd hh:mm"/></numFmts><cellXfs count="4"><xf numFmtId="0"/><xf numFmtId="14" applyNumberFormat="1"/><xf numFmtId="164" applyNumberFormat="1"/><xf numFmtId="21" applyNumberFormat="1"/></cellXfs></styleSheet>' % ns)
    z.writestr('xl/sharedStrings.xml', '<?xml version="1.0"?><sst %s>%s</sst>' % (ns, ''.join('<si><t>%s</t></si>' % s for s in strings)))
    z.writestr('xl/worksheets/sheet1.xml', '<?xml version="1.0"?><worksheet %s><sheetData>%s</sheetData></worksheet>' % (ns, sheet))
sys.stdout.buffer.write(buf.getvalue())
"#;
    let out = std::process::Command::new("python3").arg("-c").arg(script).arg(serde_json::to_string(rows).unwrap()).arg(if date1904 { "1" } else { "0" }).output().expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

#[test]
fn spreadsheet_date_cells_are_interpreted_as_iso_dates_and_keep_their_serials() {
    let c = setup();
    let src = c.table("Members");
    let book = xlsx_styled(
        &[
            &[("name", 0), ("joined", 0), ("seen", 0), ("shift", 0), ("points", 0), ("mixed", 0)],
            &[("Ada", 0), ("45292", 1), ("45292.5625", 2), ("0.5", 3), ("12", 0), ("45292", 1)],
            &[("Bob", 0), ("45351", 1), ("45351", 2), ("0.25", 3), ("7", 0), ("3", 0)],
        ],
        false,
    );
    let v = c.raw(&src, "members.xlsx", "xlsx", "application/octet-stream", &book).assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    let d = c.wait(&v, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "active", "{d}");
    let types: Vec<(String, String)> = c.source(&src).unwrap()["fields"].as_array().unwrap().iter().map(|f| (f["key"].as_str().unwrap().into(), f["type"].as_str().unwrap().into())).collect();
    assert_eq!(types, [("name", "text"), ("joined", "date"), ("seen", "datetime"), ("shift", "text"), ("points", "integer"), ("mixed", "integer")].map(|(k, t)| (k.to_string(), t.to_string())));
    let rows = sql(&c.dir.0, &format!("SELECT original, interpreted FROM ingestion_rows WHERE version_id = '{v}' ORDER BY row_number"));
    let rows: Vec<(Value, Value)> = rows
        .lines()
        .map(|l| {
            let (o, i) = l.split_once('|').unwrap();
            (serde_json::from_str(o).unwrap(), serde_json::from_str(i).unwrap())
        })
        .collect();
    // The original cells stay the serials the file holds.
    assert_eq!(rows[0].0, json!(["Ada", "45292", "45292.5625", "0.5", "12", "45292"]));
    assert_eq!(rows[0].1, json!({"name": "Ada", "joined": "2024-01-01", "seen": "2024-01-01T13:30:00", "shift": "12:00:00", "points": 12, "mixed": 45292}));
    assert_eq!(rows[1].1, json!({"name": "Bob", "joined": "2024-02-29", "seen": "2024-02-29T00:00:00", "shift": "06:00:00", "points": 7, "mixed": 3}));

    // The 1904 date system counts from 1904-01-01 (a source of its own:
    // other columns would wait for review).
    let book = xlsx_styled(&[&[("day", 0)], &[("43830", 1)]], true);
    let mac = c.table("Mac");
    let v = c.raw(&mac, "mac.xlsx", "xlsx", "application/octet-stream", &book).assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    let d = c.wait(&v, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "active", "{d}");
    let row = sql(&c.dir.0, &format!("SELECT interpreted FROM ingestion_rows WHERE version_id = '{v}'"));
    assert_eq!(serde_json::from_str::<Value>(row.trim()).unwrap(), json!({"day": "2024-01-01"}));
}

/// Nothing replaces good data silently: a version with no rows, or whose
/// columns differ from the active version's, waits in `needs_review` with
/// an issue saying why, the active version keeps answering, and a resolve
/// (a person's decision) activates it.
#[test]
fn an_empty_or_reshaped_version_waits_for_review() {
    let c = setup();
    let src = c.table("Prices");
    let v1 = c.ingest(&src, "p.csv", "csv", b"sku,price\nA1,10\nB2,20\n");
    assert_eq!(c.wait(&v1, &["active", "needs_review", "failed"])["ingestion"]["stage"], "active");
    // The same columns again: activated as before.
    let v2 = c.ingest(&src, "p.csv", "csv", b"sku,price\nA1,11\nB2,21\n");
    assert_eq!(c.wait(&v2, &["active", "needs_review", "failed"])["ingestion"]["stage"], "active");

    // A header with no rows.
    let empty = c.ingest(&src, "p.csv", "csv", b"sku,price\n");
    let d = c.wait(&empty, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "needs_review", "{d}");
    assert_eq!(d["ingestion"]["rowCount"], 0);
    assert!(d["issues"].to_string().contains("no data rows"), "{d}");
    assert_eq!(c.source(&src).unwrap()["activeVersionId"], v2.as_str(), "the active version keeps answering");

    // Other columns (a wrong export).
    let reshaped = c.ingest(&src, "q.csv", "csv", b"name,city\nAda,Paris\n");
    let d = c.wait(&reshaped, &["active", "needs_review", "failed"]);
    assert_eq!(d["ingestion"]["stage"], "needs_review", "{d}");
    let problem = d["issues"].to_string();
    assert!(problem.contains("columns differ") && problem.contains("new: city, name") && problem.contains("missing: price, sku"), "{d}");
    assert_eq!(c.source(&src).unwrap()["activeVersionId"], v2.as_str());

    // A person decides: resolving activates it.
    c.resolve(&reshaped, json!([])).assert_ok(200);
    assert_eq!(c.wait(&reshaped, &["active"])["ingestion"]["stage"], "active");
    assert_eq!(c.source(&src).unwrap()["activeVersionId"], reshaped.as_str());
}
