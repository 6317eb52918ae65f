//! No request stalls other tenants: limits are checked in time linear in
//! the input, and a body that trickles in never holds the write gate.

use crate::harness::*;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn category(s: &Server, t: &Tenant) -> String {
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "All"}));
    r.data()["category"]["id"].as_str().unwrap().to_string()
}

fn create_contact(s: &Server, t: &Tenant, cat: &str, mobile: &str) -> Resp {
    s.as_key(&t.key).fresh().post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Bea", "mobile": mobile, "categoryIds": [cat]}))
}

#[test]
fn a_hundred_thousand_column_import_is_refused_at_once_and_another_tenant_writes() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let (a, b) = (tenant(&dir.0, "all"), tenant(&dir.0, "all"));
    let (cat_a, cat_b) = (category(&s, &a), category(&s, &b));
    let mut csv = String::from("mobile");
    for i in 0..100_000 {
        csv.push_str(&format!(",c{i}"));
    }
    csv.push_str("\n+15550100001");
    csv.push_str(&",x".repeat(100_000));
    csv.push('\n');
    let body = json!({"businessId": a.business, "categoryIds": [cat_a], "csv": csv});
    let (base, key) = (s.base.clone(), a.key.clone());
    let import = std::thread::spawn(move || {
        reqwest::blocking::Client::new()
            .post(format!("{base}/api/v1/contacts/imports"))
            .bearer_auth(key)
            .header("Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(&body)
            .send()
            .map(|r| (r.status().as_u16(), r.text().unwrap_or_default()))
            .unwrap()
    });
    // Another tenant's write meanwhile: committed, not 503 behind the import.
    create_contact(&s, &b, &cat_b, "+15550100002").assert_ok(201);
    let (status, text) = import.join().unwrap();
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("too_many_columns") && text.contains("100000 custom field columns"), "{text}");
    assert_eq!(sql(&dir.0, &format!("SELECT count(*) FROM contacts WHERE business_id = '{}'", a.business)).trim(), "0");
}

#[test]
fn an_upload_that_trickles_its_body_holds_up_no_one() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let (a, b) = (tenant(&dir.0, "all"), tenant(&dir.0, "all"));
    let cat_b = category(&s, &b);
    let src = s.as_key(&a.key).fresh().post("/api/v1/data-sources", &json!({"businessId": a.business, "name": "Slow", "class": "structured", "kind": "table"}));
    let src = src.assert_ok(201)["dataSource"]["id"].as_str().unwrap().to_string();
    let file = b"sku,price\nA1,10\nB2,20\nC3,30\n".to_vec();
    let addr = s.base.trim_start_matches("http://").to_string();
    let path = format!("/api/v1/data-sources/upload?businessId={}&dataSourceId={src}&fileName=slow.csv&format=csv", a.business);
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let key = a.key.clone();
    let upload = std::thread::spawn(move || {
        let mut tcp = TcpStream::connect(addr).unwrap();
        write!(
            tcp,
            "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nIdempotency-Key: {}\r\nContent-Type: text/csv\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            uuid::Uuid::new_v4(),
            file.len()
        )
        .unwrap();
        // One byte every 60 ms: about two seconds for the whole body.
        for byte in &file {
            tcp.write_all(&[*byte]).unwrap();
            std::thread::sleep(Duration::from_millis(60));
        }
        finished.store(true, Ordering::SeqCst);
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        answer
    });
    std::thread::sleep(Duration::from_millis(300));
    // Tenant b writes (twice) while a's body is still arriving.
    create_contact(&s, &b, &cat_b, "+15550100003").assert_ok(201);
    create_contact(&s, &b, &cat_b, "+15550100004").assert_ok(201);
    assert!(!done.load(Ordering::SeqCst), "b's writes were answered while a's upload was still trickling");
    let answer = upload.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
}
