//! The contacts component (operations 24-33) over HTTP.

use crate::harness::*;
use serde_json::{json, Value};

mod bulk;
mod sort;

struct Ctx {
    s: Server,
    t: Tenant,
    _dir: DataDir,
}

fn setup() -> Ctx {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    Ctx { s, t, _dir: dir }
}

impl Ctx {
    fn k(&self) -> Req<'_> {
        self.s.as_key(&self.t.key)
    }
    fn category(&self, name: &str) -> String {
        let r = self.k().fresh().post("/api/v1/contacts/categories", &json!({"businessId": self.t.business, "name": name}));
        assert!(r.status == 201 || r.status == 200, "{}", r.text);
        r.data()["category"]["id"].as_str().unwrap().to_string()
    }
    fn contact(&self, mobile: &str, cats: &[&str]) -> String {
        let r = self.k().fresh().post("/api/v1/contacts", &json!({"businessId": self.t.business, "name": format!("Person {mobile}"), "mobile": mobile, "categoryIds": cats}));
        r.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string()
    }
    fn list(&self, extra: &str) -> Resp {
        self.k().get(&format!("/api/v1/contacts?businessId={}{extra}", self.t.business))
    }
    fn get(&self, id: &str) -> Resp {
        self.k().get(&format!("/api/v1/contacts/{id}?businessId={}", self.t.business))
    }
}

fn mobiles(r: &Resp) -> Vec<String> {
    r.data()["contacts"].as_array().unwrap().iter().map(|c| c["mobile"].as_str().unwrap().to_string()).collect()
}

#[test]
fn create_read_update_and_search() {
    let c = setup();
    let leads = c.category("Leads");
    let vip = c.category("VIP");
    let r = c.k().fresh().post(
        "/api/v1/contacts",
        &json!({"businessId": c.t.business, "name": "Ada Lovelace", "mobile": "+447700900123", "categoryIds": [leads],
                "fields": {"city": "London", "tier": "gold"}}),
    );
    let contact = &r.assert_ok(201)["contact"];
    let id = contact["id"].as_str().unwrap().to_string();
    assert_eq!(contact["mobile"], "+447700900123");
    assert_eq!(contact["fields"]["city"], "London");
    assert_eq!(contact["communicationBlocked"], false);
    assert_eq!(contact["categories"][0]["id"], json!(leads));

    // The same mobile twice is a conflict.
    let dup = c.k().fresh().post("/api/v1/contacts", &json!({"businessId": c.t.business, "name": "X", "mobile": "+447700900123", "categoryIds": [vip]}));
    dup.assert_failure(409, "conflict");

    let read = c.get(&id);
    let d = read.assert_ok(200);
    assert_eq!(d["contact"]["name"], "Ada Lovelace");
    for ch in ["chatapp", "photoapp", "voice"] {
        assert_eq!(d["contact"]["activity"][ch]["count"], 0, "{ch}");
    }

    // Update: name, fields merge (null removes), categories replace, blocked.
    let u = c
        .k()
        .fresh()
        .patch(&format!("/api/v1/contacts/{id}"), &json!({"businessId": c.t.business, "name": "Ada K.", "fields": {"tier": null, "lang": "en"}, "categoryIds": [vip], "communicationBlocked": true}));
    let uc = &u.assert_ok(200)["contact"];
    assert_eq!(uc["name"], "Ada K.");
    assert_eq!(uc["fields"], json!({"city": "London", "lang": "en"}));
    assert_eq!(uc["communicationBlocked"], true);
    let cats: Vec<&Value> = uc["categories"].as_array().unwrap().iter().map(|c| &c["id"]).collect();
    assert_eq!(cats, vec![&json!(vip)]);
    // An update must change something, and may not empty the categories.
    c.k().fresh().patch(&format!("/api/v1/contacts/{id}"), &json!({"businessId": c.t.business})).assert_failure(400, "validation");
    c.k().fresh().patch(&format!("/api/v1/contacts/{id}"), &json!({"businessId": c.t.business, "categoryIds": []})).assert_failure(400, "validation");

    c.contact("+15550001111", &[&leads]);
    // Search by mobile: encoded plus (a prefix), raw digits (anywhere), and an
    // unencoded plus (a space in a query string: digits anywhere).
    assert_eq!(mobiles(&c.list("&search=%2B447700900123")), vec!["+447700900123"]);
    assert_eq!(mobiles(&c.list("&search=447700")), vec!["+447700900123"]);
    assert_eq!(mobiles(&c.list("&search=+1555")), vec!["+15550001111"]);
    assert!(mobiles(&c.list("&search=%2B999")).is_empty());
    // Filter by category.
    assert_eq!(mobiles(&c.list(&format!("&categoryId={vip}"))), vec!["+447700900123"]);
}

/// Operation 24's `name` (ours): names containing the text, A to Z in
/// either case, wildcards matching themselves, pages and the other filters
/// as for any list; a bad value is a validation failure in words.
#[test]
fn search_by_name() {
    let c = setup();
    let cat = c.category("People");
    let other = c.category("Other");
    for (name, mobile, cats) in [
        ("Ana Lima", "+15550002001", vec![&cat]),
        ("JOANA", "+15550002002", vec![&cat]),
        ("Bob", "+15550002003", vec![&cat]),
        ("50% Off_Co", "+15550002004", vec![&cat]),
        ("Élodie", "+15550002005", vec![&cat]),
        ("Mariana", "+4477009002006", vec![&other]),
    ] {
        let r = c.k().fresh().post("/api/v1/contacts", &json!({"businessId": c.t.business, "name": name, "mobile": mobile, "categoryIds": cats}));
        r.assert_ok(201);
    }
    let names = |extra: &str| -> Vec<String> {
        let r = c.list(extra);
        r.assert_ok(200)["contacts"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names("&name=ana"), vec!["Ana Lima", "JOANA", "Mariana"]);
    assert_eq!(names("&name=%20aNa%20"), vec!["Ana Lima", "JOANA", "Mariana"], "trimmed, either case");
    assert_eq!(names("&name=%25"), vec!["50% Off_Co"], "a percent sign matches itself");
    assert_eq!(names("&name=_"), vec!["50% Off_Co"], "an underscore matches itself");
    assert_eq!(names("&name=%C3%89lo"), vec!["Élodie"]);
    assert!(names("&name=zz").is_empty());
    assert_eq!(names(&format!("&name=ana&categoryId={cat}")), vec!["Ana Lima", "JOANA"], "with a category");
    assert_eq!(names("&name=ana&search=%2B1555"), vec!["Ana Lima", "JOANA"], "with a mobile search");
    // Pages of a name search visit each match once.
    let first = c.list("&name=a&limit=2");
    let d = first.assert_ok(200);
    assert_eq!(d["contacts"].as_array().unwrap().len(), 2);
    let cursor = d["nextCursor"].as_str().unwrap().to_string();
    let rest = names(&format!("&name=a&limit=200&cursor={cursor}"));
    assert_eq!(rest, vec!["Mariana"]);
    // Too long: refused before the component, with the rule in the message.
    let long = c.list(&format!("&name={}", "x".repeat(101)));
    long.assert_failure(400, "validation");
    assert!(long.text.contains("100"), "{}", long.text);
    c.list("&name=").assert_failure(400, "validation");
}

#[test]
fn cursor_pagination_visits_every_contact_once() {
    let c = setup();
    let cat = c.category("All");
    let mut csv = String::from("mobile,name\n");
    for i in 0..25 {
        csv.push_str(&format!("+1555000{:04},P{i}\n", i));
    }
    c.k().fresh().post("/api/v1/contacts/imports", &json!({"businessId": c.t.business, "categoryIds": [cat], "csv": csv})).assert_ok(200);
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let extra = match &cursor {
            Some(cur) => format!("&limit=10&cursor={cur}"),
            None => "&limit=10".to_string(),
        };
        let r = c.list(&extra);
        let d = r.assert_ok(200);
        seen.extend(mobiles(&r));
        pages += 1;
        match d["nextCursor"].as_str() {
            Some(n) => cursor = Some(n.to_string()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let unique: std::collections::HashSet<_> = seen.iter().collect();
    assert_eq!(seen.len(), 25);
    assert_eq!(unique.len(), 25);
    let bad = c.list("&cursor=garbage!!");
    bad.assert_failure(400, "validation");
}

#[test]
fn categories_counts_reuse_and_confirmed_delete() {
    let c = setup();
    let r1 = c.k().fresh().post("/api/v1/contacts/categories", &json!({"businessId": c.t.business, "name": "Leads"}));
    let leads = r1.assert_ok(201)["category"]["id"].as_str().unwrap().to_string();
    // An existing name is reused, not duplicated.
    let r2 = c.k().fresh().post("/api/v1/contacts/categories", &json!({"businessId": c.t.business, "name": "Leads"}));
    assert_eq!(r2.assert_ok(200)["category"]["id"], json!(leads));
    let other = c.category("Other");
    c.contact("+15550000001", &[&leads]);
    c.contact("+15550000002", &[&leads, &other]);

    let list = c.k().get(&format!("/api/v1/contacts/categories?businessId={}", c.t.business));
    let cats = list.assert_ok(200)["categories"].as_array().unwrap().clone();
    assert_eq!(cats.len(), 2);
    let count = |id: &str| cats.iter().find(|x| x["id"] == json!(id)).unwrap()["contactCount"].clone();
    assert_eq!(count(&leads), 2);
    assert_eq!(count(&other), 1);

    // The name must be confirmed exactly.
    let r = c.k().fresh().delete("/api/v1/contacts/categories", &json!({"businessId": c.t.business, "categoryId": leads, "confirmName": "leads"}));
    r.assert_failure(409, "conflict");
    assert_eq!(r.code(), "confirmation_mismatch");
    // A contact whose only category is Leads would be left with none.
    let r = c.k().fresh().delete("/api/v1/contacts/categories", &json!({"businessId": c.t.business, "categoryId": leads, "confirmName": "Leads"}));
    r.assert_failure(409, "conflict");
    // Deleting Other is fine: its contact keeps Leads.
    let r = c.k().fresh().delete("/api/v1/contacts/categories", &json!({"businessId": c.t.business, "categoryId": other, "confirmName": "Other"}));
    r.assert_ok(200);
    let list = c.list("");
    for contact in list.data()["contacts"].as_array().unwrap() {
        assert!(!contact["categories"].as_array().unwrap().is_empty());
    }
}

#[test]
fn delete_selected_or_by_category() {
    let c = setup();
    let a = c.category("A");
    let b = c.category("B");
    let x = c.contact("+15550000001", &[&a]);
    c.contact("+15550000002", &[&a, &b]);
    c.contact("+15550000003", &[&b]);
    let r = c.k().fresh().delete("/api/v1/contacts", &json!({"businessId": c.t.business, "contactIds": [x, uuid::Uuid::new_v4().to_string()]}));
    assert_eq!(r.assert_ok(200)["deleted"], 1);
    c.get(&x).assert_failure(404, "not_found");
    // Both shapes at once is invalid.
    c.k().fresh().delete("/api/v1/contacts", &json!({"businessId": c.t.business, "contactIds": [x], "categoryId": b})).assert_failure(400, "validation");
    let r = c.k().fresh().delete("/api/v1/contacts", &json!({"businessId": c.t.business, "categoryId": b}));
    assert_eq!(r.assert_ok(200)["deleted"], 2);
    assert!(mobiles(&c.list("")).is_empty());
}

#[test]
fn csv_import_merges_and_reports_bad_rows() {
    let c = setup();
    let cat = c.category("Imported");
    let vip = c.category("VIP");
    let existing = c.contact("+447700900001", &[&vip]);
    let csv = "\u{feff}Name,Mobile,City\r\n\
               Ada,+44 7700 900001,London\r\n\
               Grace,+1 (555) 010-0002,\"New York, NY\"\r\n\
               Bad Number,12345,Nowhere\r\n\
               Ragged,+15550100003\r\n\
               \"Quote \"\"Q\"\" Person\",+15550100004,Paris\r\n\
               Grace Again,+15550100002,Boston\r\n";
    let r = c.k().fresh().post("/api/v1/contacts/imports", &json!({"businessId": c.t.business, "categoryIds": [cat], "csv": csv}));
    let d = r.assert_ok(200);
    assert_eq!(d["totalRows"], 6, "{d}");
    assert_eq!(d["created"], 2, "{d}");
    assert_eq!(d["failed"], 2, "{d}");
    let errors = d["errors"].as_array().unwrap();
    let rows: Vec<i64> = errors.iter().map(|e| e["row"].as_i64().unwrap()).collect();
    assert_eq!(rows, vec![4, 5], "header is row 1: {d}");
    // The existing mobile was merged, not duplicated: it now has both categories.
    let ada = c.get(&existing);
    let cats: Vec<String> = ada.data()["contact"]["categories"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap().to_string()).collect();
    assert!(cats.contains(&cat) && cats.contains(&vip));
    assert_eq!(ada.data()["contact"]["fields"]["City"], "London", "other columns become custom fields named by their header");
    let all = mobiles(&c.list(""));
    assert_eq!(all.len(), 3, "{all:?}");
    let q = c.list("&search=%2B15550100004");
    assert_eq!(q.data()["contacts"][0]["name"], "Quote \"Q\" Person");

    // No mobile column at all.
    let r = c.k().fresh().post("/api/v1/contacts/imports", &json!({"businessId": c.t.business, "categoryIds": [cat], "csv": "name,city\nA,B\n"}));
    r.assert_failure(400, "validation");
    // Unknown category.
    let r = c.k().fresh().post("/api/v1/contacts/imports", &json!({"businessId": c.t.business, "categoryIds": [uuid::Uuid::new_v4().to_string()], "csv": "mobile\n+15550100009\n"}));
    r.assert_failure(404, "not_found");
    assert!(c.list("&search=%2B15550100009").data()["contacts"].as_array().unwrap().is_empty(), "nothing partial was written");
}

#[test]
fn hundred_thousand_row_import() {
    let c = setup();
    let cat = c.category("Bulk");
    let mut csv = String::with_capacity(4 << 20);
    csv.push_str("mobile,name,ref\n");
    for i in 0..100_000 {
        csv.push_str(&format!("+1444{:07},Person {i},R{i}\n", i));
    }
    let r = c.k().fresh().post("/api/v1/contacts/imports", &json!({"businessId": c.t.business, "categoryIds": [cat], "csv": csv}));
    let d = r.assert_ok(200);
    assert_eq!(d["created"], 100_000);
    assert_eq!(d["failed"], 0);
    let cats = c.k().get(&format!("/api/v1/contacts/categories?businessId={}", c.t.business));
    assert_eq!(cats.data()["categories"][0]["contactCount"], 100_000);
    let one = c.list("&search=%2B14440099999");
    assert_eq!(one.data()["contacts"][0]["fields"]["ref"], "R99999");
}

/// Issue 41: an import's CSV is parsed in the component's prepare step,
/// before the write transaction, so the write gate is not held while a
/// ~10 MB body is parsed: another business's creates are answered while
/// the import is still being parsed. (Not timed: the test counts the
/// creates answered before the import's answer, once the node shows the
/// import in its prepare step.)
#[test]
fn a_large_import_is_parsed_before_the_write_transaction() {
    let c = setup();
    let other = tenant(&c._dir.0, "all");
    let cat = c.category("Big");
    let other_cat = c.s.as_key(&other.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": other.business, "name": "Walk-ins"})).assert_ok(201)["category"]["id"].clone();
    // Just under the 10 MiB body limit (a newline is two bytes in JSON).
    // One row in 100 is valid, the others fail their mobile: the writes
    // are few and the parse is most of the work.
    let mut csv = String::with_capacity(10 << 20);
    csv.push_str("mobile,name,city\n");
    let (mut rows, mut valid) = (0u64, 0u64);
    while csv.len() as u64 + rows < (10 << 20) - 4096 {
        if rows % 100 == 0 {
            csv.push_str(&format!("+1555{valid:07},Person {rows},Town\n"));
            valid += 1;
        } else {
            csv.push_str(&format!("555{rows:07},Person {rows},Town\n"));
        }
        rows += 1;
    }
    let body = json!({"businessId": c.t.business, "categoryIds": [cat], "csv": csv});
    assert!(body.to_string().len() < 10 << 20);

    let answered = std::sync::atomic::AtomicBool::new(false);
    let (import, during) = std::thread::scope(|scope| {
        let import = scope.spawn(|| {
            let r = c.k().fresh().post("/api/v1/contacts/imports", &body);
            answered.store(true, std::sync::atomic::Ordering::SeqCst);
            r
        });
        poll("the import's prepare step", || (c.s.metric("switchboard_prepares_in_flight") >= 1.0).then_some(()));
        // Creates of another business, one after another, until the import
        // answers; those answered before it did ran while it was parsed.
        let mut during = 0;
        let mut n = 0;
        while !answered.load(std::sync::atomic::Ordering::SeqCst) {
            let r =
                c.s.as_key(&other.key).fresh().post("/api/v1/contacts", &json!({"businessId": other.business, "name": format!("P{n}"), "mobile": format!("+1666{n:07}"), "categoryIds": [other_cat]}));
            r.assert_ok(201);
            n += 1;
            if !answered.load(std::sync::atomic::Ordering::SeqCst) {
                during += 1;
            }
            // Under the key's rate limit (100 a second): a fast machine
            // answers creates quicker than that, and a 429 proves nothing.
            std::thread::sleep(std::time::Duration::from_millis(15));
        }
        (import.join().unwrap(), during)
    });
    let d = import.assert_ok(200);
    assert_eq!(d["totalRows"], rows);
    assert_eq!(d["created"], valid);
    assert_eq!(d["failed"], rows - valid);
    assert_eq!(d["errors"].as_array().unwrap().len(), 1000);
    assert_eq!(d["errors"][0]["code"], "invalid_mobile");
    assert_eq!(d["errors"][0]["row"], 3, "row 2 is the first valid one");
    assert_eq!(d["errorsTruncated"], true);
    assert!(during >= 1, "no create of another business was answered while the import was parsed");
    eprintln!("{during} creates answered while the import was parsed");
    // One prepare step ran, the import's; a create has none.
    assert_eq!(c.s.metric(r#"switchboard_prepare_seconds_count{operation="importContacts"}"#), 1.0);
    assert_eq!(c.s.metric(r#"switchboard_prepare_seconds_count{operation="createContact"}"#), 0.0);
    assert_eq!(c.s.metric("switchboard_prepares_in_flight"), 0.0);
    let one = c.list(&format!("&search=%2B1555{:07}", valid - 1));
    assert_eq!(one.data()["contacts"][0]["categories"][0]["id"], json!(cat));
}

#[test]
fn timeline_shape_and_bounds() {
    let c = setup();
    let cat = c.category("T");
    let id = c.contact("+15550000001", &[&cat]);
    let r = c.k().get(&format!("/api/v1/contacts/{id}/timeline?businessId={}", c.t.business));
    let d = r.assert_ok(200);
    assert_eq!(d["entries"], json!([]));
    assert!(d["nextCursor"].is_null());
    c.k().get(&format!("/api/v1/contacts/{id}/timeline?businessId={}&limit=500", c.t.business)).assert_failure(400, "validation");
    let missing = uuid::Uuid::new_v4();
    c.k().get(&format!("/api/v1/contacts/{missing}/timeline?businessId={}", c.t.business)).assert_failure(404, "not_found");
}

/// A key of business A never reads, changes or confirms the existence of
/// business B's records, on every contacts operation.
#[test]
fn tenants_are_isolated_on_every_contacts_operation() {
    let c = setup();
    let b_cat = c.category("B-only");
    let b_contact = c.contact("+15550000042", &[&b_cat]);
    let a = tenant(&c._dir.0, "all");
    let ka = || c.s.as_key(&a.key);
    let a_cat = {
        let r = ka().fresh().post("/api/v1/contacts/categories", &json!({"businessId": a.business, "name": "B-only"}));
        let id = r.assert_ok(201)["category"]["id"].as_str().unwrap().to_string();
        assert_ne!(id, b_cat, "same name in another business is another category");
        id
    };
    let ab = &a.business;
    // Reads: B's ids look exactly like ids that do not exist.
    let nonexistent = uuid::Uuid::new_v4().to_string();
    for id in [&b_contact, &nonexistent] {
        let r = ka().get(&format!("/api/v1/contacts/{id}?businessId={ab}"));
        r.assert_failure(404, "not_found");
        assert_eq!(r.code(), "contact_not_found");
        let r = ka().get(&format!("/api/v1/contacts/{id}/timeline?businessId={ab}"));
        r.assert_failure(404, "not_found");
        let r = ka().fresh().patch(&format!("/api/v1/contacts/{id}"), &json!({"businessId": ab, "name": "pwned"}));
        r.assert_failure(404, "not_found");
    }
    assert!(ka().get(&format!("/api/v1/contacts?businessId={ab}")).data()["contacts"].as_array().unwrap().is_empty());
    assert!(ka().get(&format!("/api/v1/contacts?businessId={ab}&search=%2B15550000042")).data()["contacts"].as_array().unwrap().is_empty());
    let r = ka().get(&format!("/api/v1/contacts?businessId={ab}&categoryId={b_cat}"));
    r.assert_failure(404, "not_found");
    assert_eq!(r.code(), "category_not_found", "a foreign category looks like a missing one");
    let cats = ka().get(&format!("/api/v1/contacts/categories?businessId={ab}"));
    assert_eq!(cats.data()["categories"].as_array().unwrap().len(), 1);
    // Writes naming B's records.
    let r = ka().fresh().post("/api/v1/contacts", &json!({"businessId": ab, "name": "x", "mobile": "+15550000043", "categoryIds": [b_cat]}));
    r.assert_failure(404, "not_found");
    // The same mobile is free in A: uniqueness is per business and says nothing about B.
    let r = ka().fresh().post("/api/v1/contacts", &json!({"businessId": ab, "name": "x", "mobile": "+15550000042", "categoryIds": [a_cat]}));
    r.assert_ok(201);
    let r = ka().fresh().delete("/api/v1/contacts", &json!({"businessId": ab, "contactIds": [b_contact]}));
    assert_eq!(r.assert_ok(200)["deleted"], 0);
    let r = ka().fresh().delete("/api/v1/contacts", &json!({"businessId": ab, "categoryId": b_cat}));
    assert!(r.status == 404 || r.data()["deleted"] == 0, "{}", r.text);
    let r = ka().fresh().post("/api/v1/contacts/imports", &json!({"businessId": ab, "categoryIds": [b_cat], "csv": "mobile\n+15550000044\n"}));
    r.assert_failure(404, "not_found");
    let r = ka().fresh().delete("/api/v1/contacts/categories", &json!({"businessId": ab, "categoryId": b_cat, "confirmName": "B-only"}));
    r.assert_failure(404, "not_found");
    // B's data is untouched.
    let still = c.get(&b_contact);
    assert_eq!(still.assert_ok(200)["contact"]["name"], "Person +15550000042");
    let bcats = c.k().get(&format!("/api/v1/contacts/categories?businessId={}", c.t.business));
    assert_eq!(bcats.data()["categories"][0]["contactCount"], 1);
}
