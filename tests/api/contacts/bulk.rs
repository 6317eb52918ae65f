//! Many contacts at once (ours): updateContacts over listed ids or every
//! contact matching the list's filters, and deleteContacts' `matching`;
//! the count the caller saw guards both.

use super::{setup, Ctx};
use serde_json::{json, Value};

impl Ctx {
    fn named(&self, name: &str, mobile: &str, cats: &[&str]) -> String {
        let r = self.k().fresh().post("/api/v1/contacts", &json!({"businessId": self.t.business, "name": name, "mobile": mobile, "categoryIds": cats}));
        r.assert_ok(201)["contact"]["id"].as_str().unwrap().to_string()
    }
    fn category_names(&self, id: &str) -> Vec<String> {
        let mut v: Vec<String> = self.get(id).assert_ok(200)["contact"]["categories"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
        v.sort();
        v
    }
    fn blocked(&self, id: &str) -> bool {
        self.get(id).assert_ok(200)["contact"]["communicationBlocked"].as_bool().unwrap()
    }
    fn bulk(&self, body: Value) -> crate::harness::Resp {
        let mut body = body;
        body["businessId"] = json!(self.t.business);
        self.k().fresh().patch("/api/v1/contacts", &body)
    }
}

#[test]
fn listed_contacts_join_a_category_and_are_blocked_once() {
    let c = setup();
    let leads = c.category("Leads");
    let vip = c.category("VIP");
    let a = c.named("Ann", "+14155550501", &[&leads]);
    let b = c.named("Ben", "+14155550502", &[&leads, &vip]);
    let other = c.named("Cat", "+14155550503", &[&leads]);
    let stranger = uuid::Uuid::new_v4().to_string();

    let r = c.bulk(json!({"contactIds": [a, b, stranger], "addCategoryIds": [vip]}));
    assert_eq!(r.assert_ok(200), &json!({"matched": 2, "updated": 1}), "Ben was in VIP already; the stranger is not counted");
    assert_eq!(c.category_names(&a), ["Leads", "VIP"]);
    assert_eq!(c.category_names(&b), ["Leads", "VIP"]);
    assert_eq!(c.category_names(&other), ["Leads"]);

    let r = c.bulk(json!({"contactIds": [a, b], "communicationBlocked": true, "addCategoryIds": [vip]}));
    assert_eq!(r.assert_ok(200), &json!({"matched": 2, "updated": 2}));
    assert!(c.blocked(&a) && c.blocked(&b) && !c.blocked(&other));
    // The same change again changes nothing.
    assert_eq!(c.bulk(json!({"contactIds": [a, b], "communicationBlocked": true})).assert_ok(200), &json!({"matched": 2, "updated": 0}));
    assert_eq!(c.bulk(json!({"contactIds": [a], "communicationBlocked": false})).assert_ok(200), &json!({"matched": 1, "updated": 1}));
    assert!(!c.blocked(&a) && c.blocked(&b));

    // The same Idempotency-Key answers the first result.
    let body = json!({"businessId": c.t.business, "contactIds": [other], "addCategoryIds": [vip]});
    let first = c.k().idem("bulk-once").patch("/api/v1/contacts", &body);
    let again = c.k().idem("bulk-once").patch("/api/v1/contacts", &body);
    assert_eq!(first.assert_ok(200), &json!({"matched": 1, "updated": 1}));
    assert_eq!(again.assert_ok(200), first.data());

    // An unknown category changes nothing.
    let r = c.bulk(json!({"contactIds": [a], "addCategoryIds": [stranger], "communicationBlocked": true}));
    r.assert_failure(404, "not_found");
    assert_eq!(r.code(), "category_not_found");
    assert!(!c.blocked(&a));
}

#[test]
fn every_contact_matching_the_filters_is_changed_when_the_count_is_the_one_seen() {
    let c = setup();
    let leads = c.category("Leads");
    let gold = c.category("Gold");
    let mut anns = Vec::new();
    for i in 0..7 {
        anns.push(c.named(&format!("Ann {i}"), &format!("+1415555061{i}"), &[&leads]));
    }
    let bob = c.named("Bob", "+14155550620", &[&leads]);
    // What a person sees: 7 Anns over several pages.
    let seen = c.list("&name=ann&limit=2&includeTotal=true");
    assert_eq!(seen.assert_ok(200)["total"], 7);

    // Another count than the one that matches now: nothing changes.
    let r = c.bulk(json!({"matching": {"name": "ann", "count": 6}, "addCategoryIds": [gold]}));
    r.assert_failure(409, "conflict");
    assert_eq!(r.code(), "contacts_changed");
    assert!(r.message().contains('7'), "{}", r.message());
    assert_eq!(c.category_names(&anns[0]), ["Leads"]);

    let r = c.bulk(json!({"matching": {"name": "ann", "count": 7}, "addCategoryIds": [gold], "communicationBlocked": true}));
    assert_eq!(r.assert_ok(200), &json!({"matched": 7, "updated": 7}));
    for a in &anns {
        assert_eq!(c.category_names(a), ["Gold", "Leads"]);
        assert!(c.blocked(a));
    }
    assert_eq!(c.category_names(&bob), ["Leads"]);
    assert!(!c.blocked(&bob));

    // A category and a mobile filter together; no filter is every contact.
    let r = c.bulk(json!({"matching": {"categoryId": gold, "search": "+1415555061", "count": 7}, "communicationBlocked": false}));
    assert_eq!(r.assert_ok(200), &json!({"matched": 7, "updated": 7}));
    // A count written as 8.0 is JSON Schema's integer too.
    let r = c.bulk(json!({"matching": {"count": 8.0}, "addCategoryIds": [gold]}));
    assert_eq!(r.assert_ok(200), &json!({"matched": 8, "updated": 1}));
    let counts = c.k().get(&format!("/api/v1/contacts/categories?businessId={}", c.t.business));
    let gold_count = counts.assert_ok(200)["categories"].as_array().unwrap().iter().find(|k| k["name"] == "Gold").unwrap()["contactCount"].clone();
    assert_eq!(gold_count, 8);

    // The filters' own rules, and an unknown category.
    c.bulk(json!({"matching": {"search": "ann", "count": 1}, "communicationBlocked": true})).assert_failure(400, "validation");
    let r = c.bulk(json!({"matching": {"categoryId": uuid::Uuid::new_v4().to_string(), "count": 0}, "communicationBlocked": true}));
    r.assert_failure(404, "not_found");
}

#[test]
fn delete_every_contact_matching_the_filters() {
    let c = setup();
    let leads = c.category("Leads");
    let mut doomed = Vec::new();
    for i in 0..5 {
        doomed.push(c.named(&format!("Old {i}"), &format!("+1415555070{i}"), &[&leads]));
    }
    let kept = c.named("Kept", "+14155550799", &[&leads]);
    let del = |body: Value| {
        let mut body = body;
        body["businessId"] = json!(c.t.business);
        c.k().fresh().delete("/api/v1/contacts", &body)
    };
    let r = del(json!({"matching": {"search": "+1415555070", "count": 4}}));
    r.assert_failure(409, "conflict");
    assert_eq!(r.code(), "contacts_changed");
    assert_eq!(c.get(&doomed[0]).status, 200, "nothing deleted");

    assert_eq!(del(json!({"matching": {"search": "+1415555070", "count": 5}})).assert_ok(200), &json!({"deleted": 5}));
    for d in &doomed {
        assert_eq!(c.get(d).status, 404);
    }
    assert_eq!(c.get(&kept).status, 200);
    assert_eq!(c.list("&includeTotal=true").assert_ok(200)["total"], 1);
    let cats = c.k().get(&format!("/api/v1/contacts/categories?businessId={}", c.t.business));
    assert_eq!(cats.assert_ok(200)["categories"][0]["contactCount"], 1, "their category links went with them");

    // Exactly one way of choosing.
    del(json!({"matching": {"count": 1}, "contactIds": [kept]})).assert_failure(400, "validation");
    del(json!({"matching": {}})).assert_failure(400, "validation");
}

#[test]
fn bodies_that_choose_nothing_or_change_nothing_are_refused() {
    let c = setup();
    let leads = c.category("Leads");
    let a = c.named("Ann", "+14155550801", &[&leads]);
    for body in [
        json!({"addCategoryIds": [leads]}),
        json!({"contactIds": [a]}),
        json!({"contactIds": [a], "matching": {"count": 1}, "communicationBlocked": true}),
        json!({"contactIds": [], "communicationBlocked": true}),
        json!({"contactIds": [a], "addCategoryIds": [], "communicationBlocked": true}),
        json!({"matching": {"count": -1}, "communicationBlocked": true}),
        json!({"matching": {"name": "a", "count": 1, "colour": "red"}, "communicationBlocked": true}),
        json!({"contactIds": [a], "communicationBlocked": "yes"}),
    ] {
        let r = c.bulk(body.clone());
        r.assert_failure(400, "validation");
        assert!(!r.message().is_empty(), "{body}");
    }
    assert!(!c.blocked(&a));
}
