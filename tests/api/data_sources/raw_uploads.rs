//! Raw uploads into a structured source (operation 21 with a file body and
//! its metadata in the query): the same result as a JSON upload, refusals
//! before staging, idempotency, limits, and what a disconnect or a crash
//! mid-upload leaves behind (nothing).

use super::*;

fn raw_send(s: &Server, key: &str, idem: Option<&str>, query: &str, content_type: &str, body: &[u8], chunked: bool) -> Resp {
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();
    let mut rb = http.post(format!("{}/api/v1/data-sources/upload?{query}", s.base)).header("authorization", format!("Bearer {key}")).header("content-type", content_type);
    if let Some(i) = idem {
        rb = rb.header("idempotency-key", i);
    }
    rb = if chunked { rb.body(reqwest::blocking::Body::new(std::io::Cursor::new(body.to_vec()))) } else { rb.body(body.to_vec()) };
    Resp::from(rb.send().expect("request"))
}

/// A query string (values URL-encoded by the caller where needed).
fn upload_query(business: &str, source: &str, file: &str, format: &str) -> String {
    format!("businessId={business}&dataSourceId={source}&fileName={file}&format={format}")
}

impl Ctx {
    pub(super) fn raw(&self, source: &str, file: &str, format: &str, content_type: &str, bytes: &[u8]) -> Resp {
        let key = uuid::Uuid::new_v4().to_string();
        raw_send(&self.s, &self.t.key, Some(&key), &upload_query(&self.t.business, source, file, format), content_type, bytes, false)
    }
    /// Staged uploads and their chunks, as `uploads|chunks`.
    fn staged(&self) -> String {
        sql(&self.dir.0, "SELECT (SELECT COUNT(*) FROM staged_uploads) || '|' || (SELECT COUNT(*) FROM staged_upload_chunks)").trim().to_string()
    }
    fn assert_nothing_staged(&self) {
        assert_eq!(self.staged(), "0|0", "the staging tables must be empty");
    }
}

/// A CSV of a few hundred KB, so it spans several 256 KiB chunks.
fn sample_csv(rows: usize) -> Vec<u8> {
    let mut csv = String::from("id,name,score,joined\n");
    for i in 0..rows {
        csv.push_str(&format!("{i},\"Name, {i}\",{}.25,2024-{:02}-{:02}\n", i % 1000, i % 12 + 1, i % 28 + 1));
    }
    csv.into_bytes()
}

#[test]
fn raw_csv_ingests_to_the_same_result_as_json() {
    let c = setup();
    let csv = sample_csv(15_000);
    assert!(csv.len() > 2 * 262_143, "spans three chunks: {}", csv.len());
    let by_json = c.table("By JSON");
    let by_raw = c.table("By raw");
    let by_stream = c.table("By chunked raw");
    let v_json = c.ingest(&by_json, "s.csv", "csv", &csv);
    let r = c.raw(&by_raw, "s.csv", "csv", "text/csv", &csv);
    let d = r.assert_ok(202);
    assert_eq!((d["stage"].as_str(), d["dataSourceId"].as_str(), d["versionNumber"].as_i64()), (Some("received"), Some(by_raw.as_str()), Some(1)));
    let v_raw = d["ingestionId"].as_str().unwrap().to_string();
    // Without a Content-Length the body arrives in frames of any size.
    let q = upload_query(&c.t.business, &by_stream, "s.csv", "csv");
    let r = raw_send(&c.s, &c.t.key, Some("chunked-1"), &q, "text/csv; charset=utf-8", &csv, true);
    let v_stream = r.assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    c.assert_nothing_staged();

    for (v, src) in [(&v_json, &by_json), (&v_raw, &by_raw), (&v_stream, &by_stream)] {
        let d = c.wait(v, &["active", "needs_review", "failed"]);
        assert_eq!(d["ingestion"]["stage"], "active", "{d}");
        assert_eq!(d["ingestion"]["rowCount"], 15_000);
        assert_eq!(c.source(src).unwrap()["itemCount"], 15_000);
    }
    assert_eq!(c.source(&by_raw).unwrap()["fields"], c.source(&by_json).unwrap()["fields"]);
    let facts = |v: &str| {
        sql(
            &c.dir.0,
            &format!(
                "SELECT file_name, format, byte_size, chunk_size, row_count FROM ingestion_versions WHERE id = '{v}'; \
                 SELECT COUNT(*), SUM(length(data)) FROM ingestion_chunks WHERE version_id = '{v}' AND stream = 0; \
                 SELECT group_concat(row_number || ':' || original || ':' || interpreted, '\n') FROM (SELECT * FROM ingestion_rows WHERE version_id = '{v}' ORDER BY row_number)"
            ),
        )
    };
    let expected = facts(&v_json);
    assert!(expected.starts_with(&format!("s.csv|csv|{}|262143|15000\n3|{}\n", csv.len(), csv.len())), "{}", &expected[..200]);
    assert_eq!(facts(&v_raw), expected);
    assert_eq!(facts(&v_stream), expected);
    let same_bytes = sql(
        &c.dir.0,
        &format!(
            "SELECT COUNT(*) FROM ingestion_chunks a JOIN ingestion_chunks b ON a.seq = b.seq AND a.stream = b.stream AND a.data = b.data \
             WHERE a.version_id = '{v_json}' AND b.version_id = '{v_raw}' AND a.stream = 0"
        ),
    );
    assert_eq!(same_bytes.trim(), "3");
}

#[test]
fn raw_spreadsheets_and_json_files() {
    let c = setup();
    let src = c.table("Stock");
    let book = xlsx(&[&["item", "qty"], &["Bolt", "12"], &["Washer", "3.5"]]);
    let r = c.raw(&src, "stock.xlsx", "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", &book);
    let v = r.assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    let d = c.wait(&v, &["active", "needs_review", "failed"]);
    assert_eq!((d["ingestion"]["stage"].as_str(), d["ingestion"]["rowCount"].as_i64()), (Some("active"), Some(2)), "{d}");
    assert_eq!(c.source(&src).unwrap()["fields"], json!([{"key": "item", "label": "item", "type": "text", "lookup": true}, {"key": "qty", "label": "qty", "type": "number", "lookup": false}]));
    let r = c.raw(&src, "stock.xlsm", "xlsm", "application/vnd.ms-excel.sheet.macroEnabled.12", &book);
    let v = r.assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait(&v, &["active", "needs_review", "failed"])["ingestion"]["stage"], "active");
    // A JSON file travels as octet-stream (application/json selects the JSON form).
    let orders = c.create(json!({"name": "Orders", "class": "structured", "kind": "json"})).assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
    let r = c.raw(&orders, "o.json", "json", "application/octet-stream", br#"[{"orderId": 1, "total": 2.5}, {"orderId": 2, "total": 3}]"#);
    let v = r.assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    let d = c.wait(&v, &["active", "needs_review", "failed"]);
    assert_eq!((d["ingestion"]["stage"].as_str(), d["ingestion"]["rowCount"].as_i64()), (Some("active"), Some(2)), "{d}");
    // A TSV, with a file name that needs URL encoding.
    let q = upload_query(&c.t.business, &src, "stock%20list%20%231.tsv", "tsv");
    let r = raw_send(&c.s, &c.t.key, Some("tsv-1"), &q, "text/tab-separated-values", b"item\tqty\nNail\t7\n", false);
    let v = r.assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    assert_eq!(c.wait(&v, &["active", "needs_review", "failed"])["ingestion"]["stage"], "active");
    assert_eq!(sql(&c.dir.0, &format!("SELECT file_name FROM ingestion_versions WHERE id = '{v}'")).trim(), "stock list #1.tsv");
    c.assert_nothing_staged();
}

#[test]
fn raw_uploads_refused_before_staging_leave_nothing() {
    let c = setup();
    let src = c.table("Target");
    let body = sample_csv(12_000); // over two chunks: a refusal after staging would leave rows
    let q = upload_query(&c.t.business, &src, "a.csv", "csv");
    let send = |key: &str, idem: Option<&str>, query: &str| raw_send(&c.s, key, idem, query, "text/csv", &body, false);

    // Authentication, tenancy, scopes and the Idempotency-Key come first.
    assert_eq!(send("sbk_not_a_key", Some("k1"), &q).assert_failure(401, "authentication").code(), "authentication_required");
    let other = tenant(&c.dir.0, "all");
    assert_eq!(send(&other.key, Some("k1"), &q).assert_failure(403, "authorization").code(), "business_mismatch");
    let reader = c.s.admin(&["key", "create", "--business", &c.t.business, "--scopes", "data_sources:read"]);
    let r = send(reader["apiKey"].as_str().unwrap(), Some("k1"), &q);
    assert_eq!(r.assert_failure(403, "authorization").code(), "missing_scope");
    assert!(r.message().contains("data_sources:write"), "{}", r.message());
    assert_eq!(send(&c.t.key, None, &q).assert_failure(400, "validation").code(), "idempotency_key_required");
    assert_eq!(send(&c.t.key, Some("has space"), &q).assert_failure(400, "validation").code(), "invalid_idempotency_key");

    // Query metadata: missing, malformed, out of range.
    let r = send(&c.t.key, Some("k1"), &format!("dataSourceId={src}&fileName=a.csv&format=csv"));
    assert_eq!(r.assert_failure(400, "validation").code(), "business_id_required");
    assert!(r.message().contains("query"), "{}", r.message());
    let r = send(&c.t.key, Some("k1"), &format!("businessId={}&dataSourceId={src}&fileName=a.csv", c.t.business));
    assert_eq!(r.assert_failure(400, "validation").code(), "invalid_request");
    assert_eq!(r.body["error"]["details"][0]["field"], "format");
    assert_eq!(r.body["error"]["details"][0]["rule"], "required");
    for (query, field, rule) in [
        (upload_query(&c.t.business, &src, "a.csv", "pdf"), "format", "enum"),
        (upload_query(&c.t.business, "not-a-uuid", "a.csv", "csv"), "dataSourceId", "format"),
        (upload_query(&c.t.business, &src, "", "csv"), "fileName", "minLength"),
        (upload_query(&c.t.business, &src, &"n".repeat(256), "csv"), "fileName", "maxLength"),
        (format!("{q}&format=tsv"), "format", "maxItems"),
    ] {
        let r = send(&c.t.key, Some("k1"), &query);
        r.assert_failure(400, "validation");
        assert_eq!((r.body["error"]["details"][0]["field"].as_str(), r.body["error"]["details"][0]["rule"].as_str()), (Some(field), Some(rule)), "{}", r.text);
    }
    assert_eq!(send(&c.t.key, Some("k1"), &format!("{q}&fileName=%zz")).assert_failure(400, "validation").code(), "malformed_query");
    c.assert_nothing_staged();

    // A form is not the file (`curl -d @file`, `curl -F`): 415 naming what
    // is accepted, nothing staged, no version.
    for form in ["application/x-www-form-urlencoded", "multipart/form-data; boundary=xyz"] {
        let r = raw_send(&c.s, &c.t.key, Some("k1"), &q, form, &body, false);
        r.assert_failure(415, "validation");
        assert_eq!(r.code(), "unsupported_media_type");
        assert!(r.message().contains("text/csv") && r.message().contains("--data-binary"), "{}", r.message());
    }
    c.assert_nothing_staged();
    assert_eq!(sql(&c.dir.0, &format!("SELECT COUNT(*) FROM ingestion_versions WHERE data_source_id = '{src}'")).trim(), "0");

    // None of these consumed the key: the same key now uploads.
    send(&c.t.key, Some("k1"), &q).assert_ok(202);
    c.assert_nothing_staged();
}

#[test]
fn raw_upload_idempotency_replays_and_conflicts() {
    let c = setup();
    let src = c.table("Prices");
    let csv = sample_csv(10_000);
    let q = upload_query(&c.t.business, &src, "p.csv", "csv");
    let first = raw_send(&c.s, &c.t.key, Some("up-1"), &q, "text/csv", &csv, false);
    let id = first.assert_ok(202)["ingestionId"].as_str().unwrap().to_string();
    assert!(!first.replayed);
    // An exact retry replays, even streamed differently and with another Content-Type.
    let again = raw_send(&c.s, &c.t.key, Some("up-1"), &q, "application/octet-stream", &csv, true);
    assert!(again.replayed, "{}", again.text);
    assert_eq!(again.status, 202);
    assert_eq!(again.body["data"], first.body["data"]);
    c.assert_nothing_staged();
    // Another file, other metadata or the JSON form under the same key: conflicts.
    let mut other = csv.clone();
    other.extend_from_slice(b"10000,\"Name, x\",1.25,2024-01-01\n");
    let conflict = |r: Resp| assert_eq!(r.assert_failure(409, "conflict").code(), "idempotency_key_conflict");
    conflict(raw_send(&c.s, &c.t.key, Some("up-1"), &q, "text/csv", &other, false));
    conflict(raw_send(&c.s, &c.t.key, Some("up-1"), &upload_query(&c.t.business, &src, "q.csv", "csv"), "text/csv", &csv, false));
    conflict(raw_send(&c.s, &c.t.key, Some("up-1"), &upload_query(&c.t.business, &src, "p.csv", "tsv"), "text/csv", &csv, false));
    conflict(c.k().idem("up-1").post("/api/v1/data-sources/upload", &json!({"businessId": c.t.business, "dataSourceId": src, "fileName": "p.csv", "format": "csv", "contentBase64": b64(&csv)})));
    c.assert_nothing_staged();
    assert_eq!(sql(&c.dir.0, &format!("SELECT COUNT(*) FROM ingestion_versions WHERE data_source_id = '{src}'")).trim(), "1");
    assert_eq!(c.wait(&id, &["active", "needs_review", "failed"])["ingestion"]["stage"], "active");

    // A component refusal (4xx) is kept for the key like any other, and its
    // staged bytes are gone.
    let archived = c.table("Old");
    c.k().fresh().delete("/api/v1/data-sources", &json!({"businessId": c.t.business, "dataSourceId": archived})).assert_ok(200);
    let qa = upload_query(&c.t.business, &archived, "p.csv", "csv");
    let r = raw_send(&c.s, &c.t.key, Some("up-2"), &qa, "text/csv", &csv, false);
    assert_eq!(r.assert_failure(409, "conflict").code(), "data_source_archived");
    c.assert_nothing_staged();
    let r = raw_send(&c.s, &c.t.key, Some("up-2"), &qa, "text/csv", &csv, false);
    assert!(r.replayed);
    assert_eq!(r.code(), "data_source_archived");
    c.assert_nothing_staged();
}

#[test]
fn raw_upload_limits_and_empty_bodies() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--max-upload-bytes", "600000"]);
    let t = tenant(&dir.0, "all");
    let c = Ctx { s, t, dir };
    let src = c.table("Limited");
    let q = upload_query(&c.t.business, &src, "a.csv", "csv");
    let at_limit = {
        let mut v = b"a\n".to_vec();
        v.resize(600_000, b'1');
        v
    };
    let over = {
        let mut v = at_limit.clone();
        v.push(b'\n');
        v
    };
    // Over the limit: refused from the Content-Length, or mid-stream once
    // two chunks were already staged; either way nothing stays.
    for chunked in [false, true] {
        let r = raw_send(&c.s, &c.t.key, Some("big"), &q, "text/csv", &over, chunked);
        assert_eq!(r.assert_failure(413, "validation").code(), "payload_too_large", "chunked={chunked}");
        assert!(r.message().contains("600000"), "{}", r.message());
        c.assert_nothing_staged();
    }
    // Exactly at the limit is fine (and the refusals did not consume the key).
    let r = raw_send(&c.s, &c.t.key, Some("big"), &q, "text/csv", &at_limit, true);
    r.assert_ok(202);
    // The JSON form keeps its own 64 MiB limit.
    c.upload(&src, "j.csv", "csv", &over).assert_ok(202);

    for chunked in [false, true] {
        let r = raw_send(&c.s, &c.t.key, Some("empty"), &q, "text/csv", b"", chunked);
        assert_eq!(r.assert_failure(400, "validation").code(), "empty_file");
    }
    c.assert_nothing_staged();
}

#[test]
fn raw_upload_into_another_business_source_is_not_found() {
    let c = setup();
    let other = tenant(&c.dir.0, "all");
    let mine = c.table("Mine");
    let body = sample_csv(12_000);
    // Their key, their business, my source id: exactly like an unknown id.
    let q = upload_query(&other.business, &mine, "a.csv", "csv");
    let r = raw_send(&c.s, &other.key, Some("x1"), &q, "text/csv", &body, false);
    assert_eq!(r.assert_failure(404, "not_found").code(), "data_source_not_found");
    let q = upload_query(&other.business, &uuid::Uuid::new_v4().to_string(), "a.csv", "csv");
    let r = raw_send(&c.s, &other.key, Some("x2"), &q, "text/csv", &body, false);
    assert_eq!(r.assert_failure(404, "not_found").code(), "data_source_not_found");
    c.assert_nothing_staged();
    assert_eq!(sql(&c.dir.0, "SELECT COUNT(*) FROM ingestion_versions").trim(), "0");
}

/// Opens a raw upload by hand, declares `declared` bytes and sends `sent`
/// of them; returns the open socket.
fn partial_upload(c: &Ctx, source: &str, declared: usize, sent: usize) -> std::net::TcpStream {
    use std::io::Write;
    let addr = c.s.base.trim_start_matches("http://").to_string();
    let mut sock = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /api/v1/data-sources/upload?{} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nIdempotency-Key: partial\r\nContent-Type: text/csv\r\nContent-Length: {declared}\r\n\r\n",
        upload_query(&c.t.business, source, "p.csv", "csv"),
        c.t.key
    );
    sock.write_all(head.as_bytes()).unwrap();
    let mut body = b"a\n".to_vec();
    body.resize(sent, b'1');
    sock.write_all(&body).unwrap();
    sock.flush().unwrap();
    sock
}

#[test]
fn a_client_that_disconnects_mid_upload_leaves_nothing() {
    let c = setup();
    let src = c.table("Dropped");
    let sock = partial_upload(&c, &src, 2_000_000, 700_000);
    // Two chunks reach staging while the client is still "sending".
    poll("two staged chunks", || (sql(&c.dir.0, "SELECT COUNT(*) FROM staged_upload_chunks").trim() == "2").then_some(()));
    drop(sock);
    poll("the staged upload to be discarded", || (c.staged() == "0|0").then_some(()));
    assert_eq!(sql(&c.dir.0, "SELECT COUNT(*) FROM ingestion_versions").trim(), "0");
    // The key was not consumed.
    let q = upload_query(&c.t.business, &src, "p.csv", "csv");
    raw_send(&c.s, &c.t.key, Some("partial"), &q, "text/csv", b"a\n1\n", false).assert_ok(202);
}

#[test]
fn a_crash_mid_upload_is_swept_after_the_idle_time() {
    let mut c = setup();
    let src = c.table("Crashed");
    let _sock = partial_upload(&c, &src, 2_000_000, 700_000);
    poll("two staged chunks", || (sql(&c.dir.0, "SELECT COUNT(*) FROM staged_upload_chunks").trim() == "2").then_some(()));
    c.s.child.kill().unwrap();
    c.s.child.wait().unwrap();
    assert_eq!(c.staged(), "1|2", "a crash leaves the staged rows behind");
    // Restarted with a sweep that treats anything idle as abandoned (the
    // default waits an hour); the maintenance loop runs at start.
    c.s = Server::start_with(&c.dir.0, &["--upload-sweep-after-ms", "0"]);
    poll("the sweep", || (c.staged() == "0|0").then_some(()));
    let q = upload_query(&c.t.business, &src, "p.csv", "csv");
    raw_send(&c.s, &c.t.key, Some("after-crash"), &q, "text/csv", b"a\n1\n", false).assert_ok(202);
    c.assert_nothing_staged();
}
