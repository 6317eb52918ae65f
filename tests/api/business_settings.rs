//! A business's settings of ours (operations 92 and 93, `GET` and `PATCH
//! /business-settings`): the default phone country the console's phone
//! inputs take a number without "+" in, with its calling code; checked
//! as ISO 3166-1 alpha-2 codes of countries with a calling code; read
//! with `contacts:read`, changed with `contacts:write` (a console owner,
//! not a support agent).

use crate::console::{assert_code, user, Browser};
use crate::harness::*;
use serde_json::{json, Value};

#[test]
fn the_default_phone_country_is_kept_checked_and_documented() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let key = s.as_key(&t.key);
    let schemas = document_schemas();
    let path = format!("/api/v1/business-settings?businessId={}", t.business);
    let read = || -> Value {
        let r = key.get(&path);
        assert_documented(&schemas, "GET", &path, &r);
        r.assert_ok(200)["settings"].clone()
    };
    assert_eq!(read(), json!({"defaultPhoneCountry": null, "defaultCallingCode": null, "updatedAt": null}), "none until set");

    let set = |country: Value| key.patch("/api/v1/business-settings", &json!({"businessId": t.business, "defaultPhoneCountry": country}));
    for (country, code) in [("GB", "44"), ("US", "1"), ("KE", "254")] {
        let r = set(json!(country));
        assert_documented(&schemas, "PATCH", "/api/v1/business-settings", &r);
        let got = r.assert_ok(200)["settings"].clone();
        assert_eq!((got["defaultPhoneCountry"].as_str(), got["defaultCallingCode"].as_str()), (Some(country), Some(code)));
        assert!(got["updatedAt"].is_string());
        assert_eq!(read()["defaultPhoneCountry"], country, "kept");
    }

    // Refused, each with a clear error, nothing written.
    for bad in [json!("us"), json!("USA"), json!(""), json!(1)] {
        let r = set(bad.clone());
        r.assert_failure(400, "validation");
        assert!(r.message().contains("defaultPhoneCountry"), "{bad}: {}", r.text);
    }
    for not_a_country in ["XX", "UK", "AQ"] {
        let r = set(json!(not_a_country));
        assert_eq!((r.status, r.code()), (400, "unknown_phone_country"), "{}", r.text);
        assert!(r.message().contains("ISO 3166-1 alpha-2"), "{}", r.text);
    }
    key.patch("/api/v1/business-settings", &json!({"businessId": t.business})).assert_failure(400, "validation");
    key.patch("/api/v1/business-settings", &json!({"businessId": t.business, "defaultPhoneCountry": "DE", "other": 1})).assert_failure(400, "validation");
    assert_eq!(read()["defaultPhoneCountry"], "KE", "no refused change was written");

    // null: none again (each browser's country).
    assert_eq!(set(Value::Null).assert_ok(200)["settings"]["defaultCallingCode"], Value::Null);

    // Reading takes contacts:read; changing contacts:write.
    let reader = admin(&dir.0, &["key", "create", "--business", &t.business, "--scopes", "contacts:read"])["apiKey"].as_str().unwrap().to_string();
    s.as_key(&reader).get(&path).assert_ok(200);
    s.as_key(&reader).patch("/api/v1/business-settings", &json!({"businessId": t.business, "defaultPhoneCountry": "FR"})).assert_failure(403, "authorization");
    // In the console: an owner changes it, a support agent reads it only.
    user(&dir.0, &t.business, "owner@settings.example", "owner");
    user(&dir.0, &t.business, "agent@settings.example", "agent");
    let mut owner = Browser::login(&s, "owner@settings.example");
    owner.send("PATCH", "/api/v1/business-settings", Some(json!({"businessId": t.business, "defaultPhoneCountry": "FR"}))).assert_ok(200);
    let mut agent = Browser::login(&s, "agent@settings.example");
    assert_eq!(agent.get(&path).assert_ok(200)["settings"]["defaultCallingCode"], "33");
    assert_code(&agent.send("PATCH", "/api/v1/business-settings", Some(json!({"businessId": t.business, "defaultPhoneCountry": "DE"}))), 403, "authorization", "missing_scope");
}
