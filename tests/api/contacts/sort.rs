//! listContacts' `sort` (ours): every order pages completely and in order
//! with ties on its key, cursors say which order made them, `includeTotal`.

use super::{mobiles, setup, Ctx};
use crate::harness::*;
use serde_json::Value;

/// Every page of the list under `query`, `limit` at a time: the contacts
/// and the cursors that led to them.
fn all_pages(c: &Ctx, query: &str, limit: u32) -> (Vec<Value>, Vec<String>) {
    let mut out = Vec::new();
    let mut cursors = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let extra = match &cursor {
            Some(k) => format!("{query}&limit={limit}&cursor={k}"),
            None => format!("{query}&limit={limit}"),
        };
        let r = c.list(&extra);
        let d = r.assert_ok(200);
        let page = d["contacts"].as_array().unwrap();
        assert!(page.len() <= limit as usize);
        out.extend(page.iter().cloned());
        match d["nextCursor"].as_str() {
            Some(k) => {
                assert!(!page.is_empty());
                cursors.push(k.to_string());
                cursor = Some(k.to_string());
            }
            None => return (out, cursors),
        }
        assert!(out.len() <= 100, "the list never ends");
    }
}

/// What SQLite's NOCASE compares: A to Z folded, every other byte as is.
fn nocase(s: &str) -> String {
    s.to_ascii_lowercase()
}

#[test]
fn every_sort_pages_completely_in_order_with_ties_broken_by_id() {
    let c = setup();
    let cat = c.category("All");
    // Names tied in either case, and names beyond A to Z.
    let names = ["ada", "Bob", "Ada", "zed", "ADA", "Émile", "bob", "Zoë", "Ada", "Cy"];
    let mut ids = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let mobile = format!("+1415555{:04}", (7 * i + 3) % 10 * 100 + i);
        let r = c.k().fresh().post("/api/v1/contacts", &serde_json::json!({"businessId": c.t.business, "name": n, "mobile": mobile, "categoryIds": [cat]}));
        ids.push(r.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string());
    }
    let key = |v: &Value, sort: &str| -> (String, String) {
        let id = v["id"].as_str().unwrap().to_string();
        match sort.trim_start_matches('-') {
            "name" => (nocase(v["name"].as_str().unwrap()), id),
            "mobile" => (v["mobile"].as_str().unwrap().to_string(), id),
            _ => (id.clone(), id),
        }
    };
    for sort in ["createdAt", "-createdAt", "name", "-name", "mobile", "-mobile"] {
        for limit in [1, 3, 4] {
            let (listed, cursors) = all_pages(&c, &format!("&sort={sort}"), limit);
            let got: Vec<String> = listed.iter().map(|v| v["id"].as_str().unwrap().to_string()).collect();
            let mut unique = got.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{sort} by {limit}: every contact once ({got:?})");
            let mut expected: Vec<(String, String)> = listed.iter().map(|v| key(v, sort)).collect();
            expected.sort();
            if sort.starts_with('-') {
                expected.reverse();
            }
            let keys: Vec<(String, String)> = listed.iter().map(|v| key(v, sort)).collect();
            assert_eq!(keys, expected, "{sort} by {limit}: in order, ties by id");
            // A cursor names its order (none for the default, as before).
            for k in &cursors {
                match sort {
                    "createdAt" => assert!(!k.contains('~'), "{k}"),
                    _ => assert!(k.starts_with(&format!("{sort}~")), "{k}"),
                }
            }
        }
    }
    // The default is the order the list always had: creation (id) order,
    // with the same cursors.
    let (default, cursors) = all_pages(&c, "", 3);
    let (created, same) = all_pages(&c, "&sort=createdAt", 3);
    assert_eq!(default, created);
    assert_eq!(cursors, same);
    let got: Vec<&str> = default.iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert_eq!(got, ids.iter().map(String::as_str).collect::<Vec<_>>(), "oldest first");

    // Sorting keeps the filters: the Adas by name, then by mobile.
    let (adas, _) = all_pages(&c, "&sort=-mobile&name=ada", 2);
    let m: Vec<&str> = adas.iter().map(|v| v["mobile"].as_str().unwrap()).collect();
    let mut sorted = m.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(m, sorted);
    assert_eq!(adas.len(), 4);
}

#[test]
fn a_page_resumes_after_its_last_contact_while_contacts_come_and_go() {
    let c = setup();
    let cat = c.category("All");
    for (i, n) in ["Bea", "Dan", "Fay", "Hal"].iter().enumerate() {
        c.k().fresh().post("/api/v1/contacts", &serde_json::json!({"businessId": c.t.business, "name": n, "mobile": format!("+1415555020{i}"), "categoryIds": [cat]})).assert_ok(201);
    }
    let first = c.list("&sort=name&limit=2");
    let d = first.assert_ok(200);
    let names: Vec<&str> = d["contacts"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Bea", "Dan"]);
    let cursor = d["nextCursor"].as_str().unwrap().to_string();
    // Dan goes and Cal (before the cursor) and Eve (after it) come.
    let dan = d["contacts"][1]["id"].as_str().unwrap().to_string();
    c.k().fresh().delete("/api/v1/contacts", &serde_json::json!({"businessId": c.t.business, "contactIds": [dan]})).assert_ok(200);
    for (n, m) in [("Cal", "+14155550210"), ("Eve", "+14155550211")] {
        c.k().fresh().post("/api/v1/contacts", &serde_json::json!({"businessId": c.t.business, "name": n, "mobile": m, "categoryIds": [cat]})).assert_ok(201);
    }
    let next = c.list(&format!("&sort=name&limit=10&cursor={cursor}"));
    let names: Vec<String> = next.assert_ok(200)["contacts"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["Eve", "Fay", "Hal"]);
}

#[test]
fn bad_sorts_and_cursors_are_refused_in_words() {
    let c = setup();
    let cat = c.category("All");
    for i in 0..3 {
        c.contact(&format!("+1415555030{i}"), &[&cat]);
    }
    for bad in ["age", "Name", "+name", "name,mobile", "--name"] {
        let r = c.list(&format!("&sort={bad}"));
        r.assert_failure(400, "validation");
        assert!(r.message().contains("sort"), "{}", r.text);
    }
    c.list("&includeTotal=yes").assert_failure(400, "validation");
    for bad in ["nope", "name~~", "name~Q~0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b", "createdAt~0190f6b1-1c2d-7e3f-8a9b-0c1d2e3f4a5b"] {
        let r = c.list(&format!("&sort=name&cursor={bad}"));
        r.assert_failure(400, "validation");
        assert!(r.text.contains("cursor"), "{}", r.text);
    }
    // A cursor of one order given with another: 400, saying both.
    let made = |sort: &str| c.list(&format!("&sort={sort}&limit=1")).assert_ok(200)["nextCursor"].as_str().unwrap().to_string();
    for (from, to) in [("name", "-name"), ("name", "mobile"), ("createdAt", "-createdAt"), ("-createdAt", "createdAt"), ("mobile", "createdAt")] {
        let cursor = made(from);
        let r = c.list(&format!("&sort={to}&cursor={cursor}"));
        r.assert_failure(400, "validation");
        assert_eq!(r.code(), "cursor_sort_mismatch", "{}", r.text);
        assert!(r.message().contains(from) && r.message().contains(to), "{}", r.message());
        // Without a sort, the default's.
        if to == "createdAt" {
            assert_eq!(c.list(&format!("&cursor={cursor}")).code(), "cursor_sort_mismatch");
        }
    }
}

#[test]
fn include_total_counts_every_page_of_the_filters() {
    let c = setup();
    let a = c.category("A");
    let b = c.category("B");
    for i in 0..5 {
        c.contact(&format!("+1415555040{i}"), &[&a]);
    }
    c.contact("+14155550499", &[&b]);
    let r = c.list("&includeTotal=true&limit=2");
    let d = r.assert_ok(200);
    assert_eq!(d["total"], 6);
    assert_eq!(mobiles(&r).len(), 2);
    let cursor = d["nextCursor"].as_str().unwrap();
    assert_eq!(c.list(&format!("&includeTotal=true&limit=2&cursor={cursor}")).assert_ok(200)["total"], 6);
    assert_eq!(c.list(&format!("&includeTotal=true&categoryId={a}")).assert_ok(200)["total"], 5);
    assert_eq!(c.list("&includeTotal=true&search=%2B1415555040").assert_ok(200)["total"], 5);
    assert!(c.list("&limit=2").assert_ok(200).get("total").is_none(), "only when asked");
    assert!(c.list("&includeTotal=false").assert_ok(200).get("total").is_none());
}

#[test]
fn the_documents_cursor_pattern_is_the_components() {
    let s = Server::start(&DataDir::new().0);
    let doc = s.req().get("/api/v1/openapi.json");
    let params = doc.body["paths"]["/api/v1/contacts"]["get"]["parameters"].as_array().unwrap().clone();
    let cursor = params.iter().find(|p| p["name"] == "cursor").unwrap();
    let source = include_str!("../../../components/contacts/src/order.rs");
    let start = source.find("pub const CURSOR_PATTERN: &str = \"").unwrap() + "pub const CURSOR_PATTERN: &str = \"".len();
    let literal = &source[start..start + source[start..].find("\";").unwrap()];
    assert_eq!(cursor["schema"]["pattern"].as_str().unwrap(), literal.replace("\\\\", "\\"));
    assert_eq!(doc.body["components"]["schemas"]["ContactCursor"]["pattern"], cursor["schema"]["pattern"]);
    let sort = params.iter().find(|p| p["name"] == "sort").unwrap();
    assert_eq!(sort["schema"]["default"], "createdAt");
}
