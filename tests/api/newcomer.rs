//! What a newcomer met (issue 51, point 6): the answers the docs promise
//! in words, on the real binary.

use crate::harness::*;
use serde_json::json;

#[test]
fn a_search_by_name_is_refused_in_words_and_a_contact_needs_a_category() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    // `search` takes the digits of a mobile; the refusal says so and
    // points at `name`, without a regular expression.
    let r = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&search=Ada", t.business));
    r.assert_failure(400, "validation");
    assert!(r.message().contains("must be the digits of a mobile number") && r.message().contains("`name`"), "{}", r.text);
    assert!(!r.message().contains('^') && !r.message().contains("pattern"), "{}", r.text);
    // A contact without categoryIds is refused naming it.
    let r = s.as_key(&t.key).fresh().post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Ada", "mobile": "+447700900123"}));
    r.assert_failure(400, "validation");
    assert!(r.message().contains("`categoryIds` is required"), "{}", r.text);
    // With one, it is made, and `name` finds it in either case.
    let cat = s.as_key(&t.key).fresh().post("/api/v1/contacts/categories", &json!({"businessId": t.business, "name": "Leads"})).assert_ok(201)["category"]["id"].clone();
    s.as_key(&t.key).fresh().post("/api/v1/contacts", &json!({"businessId": t.business, "name": "Ada", "mobile": "+447700900123", "categoryIds": [cat]})).assert_ok(201);
    let found = s.as_key(&t.key).get(&format!("/api/v1/contacts?businessId={}&name=ada", t.business));
    assert_eq!(found.assert_ok(200)["contacts"].as_array().unwrap().len(), 1, "{}", found.text);
}
