//! An owner manages who may log in (host/src/console/team.rs): invite with
//! a one-time setup link, set a role, remove; a business keeps an owner.

use crate::console::{assert_code, user, Browser, PASSWORD};
use crate::harness::*;
use serde_json::json;

#[test]
fn an_owner_invites_sets_roles_and_removes_users() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let a = tenant(&dir.0, "all");
    let b = tenant(&dir.0, "all");
    let me = user(&dir.0, &a.business, "owner@a.example", "owner")["userId"].as_str().unwrap().to_string();
    user(&dir.0, &a.business, "viewer@a.example", "viewer");
    let theirs = user(&dir.0, &b.business, "owner@b.example", "owner")["userId"].as_str().unwrap().to_string();
    let mut owner = Browser::login(&s, "owner@a.example");

    let listed = owner.get("/console/api/users");
    let emails: Vec<&str> = listed.data()["users"].as_array().unwrap().iter().map(|u| u["email"].as_str().unwrap()).collect();
    assert_eq!(emails, ["owner@a.example", "viewer@a.example"], "only this business's users");

    // An invitation: a setup link (a path, once) that sets the password.
    let r = owner.post("/console/api/users", json!({"email": " New@A.example ", "role": "viewer"}));
    let d = r.assert_ok(201).clone();
    assert_eq!((d["email"].as_str(), d["role"].as_str()), (Some("new@a.example"), Some("viewer")));
    let link = d["setupLink"].as_str().unwrap();
    let token = link.strip_prefix("/console/#setup=").unwrap_or_else(|| panic!("{link}"));
    let invited = d["userId"].as_str().unwrap().to_string();
    let mut anon = Browser::new(&s);
    anon.post("/console/api/password", json!({"token": token, "password": PASSWORD})).assert_ok(200);
    let mut newcomer = Browser::login(&s, "new@a.example");
    assert_eq!(newcomer.get("/console/api/session").data()["role"], "viewer");
    assert_code(&owner.post("/console/api/users", json!({"email": "new@a.example", "role": "owner"})), 409, "conflict", "user_exists");
    // An address another business uses: the answer says nothing of it (it
    // looks like any invitation), and its link sets no password (issue 50).
    let r = owner.post("/console/api/users", json!({"email": "owner@b.example", "role": "owner"}));
    let fake = r.assert_ok(201).clone();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&fake), keys(&d), "the same fields as a real invitation: {fake}");
    assert!(!r.text.contains("exist") && !r.text.contains("another"), "{}", r.text);
    let token = fake["setupLink"].as_str().unwrap().strip_prefix("/console/#setup=").unwrap();
    assert_code(&anon.post("/console/api/password", json!({"token": token, "password": PASSWORD})), 404, "not_found", "setup_link_invalid");
    Browser::login(&s, "owner@b.example");
    for (body, field) in [(json!({"email": "not an address", "role": "viewer"}), "email"), (json!({"email": "x@a.example", "role": "admin"}), "role")] {
        let r = owner.post("/console/api/users", body);
        assert_code(&r, 400, "validation", "invalid_request");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.text);
    }
    assert_code(&owner.post("/console/api/users", json!({"email": "x@a.example"})), 400, "validation", "invalid_body");

    // A role change ends their sessions; the next login has the new role.
    owner.send("PATCH", &format!("/console/api/users/{invited}"), Some(json!({"role": "owner"}))).assert_ok(200);
    assert_code(&newcomer.get("/console/api/session"), 401, "authentication", "session_expired");
    let mut newcomer = Browser::login(&s, "new@a.example");
    assert_eq!(newcomer.get("/console/api/session").data()["role"], "owner");
    assert_code(&owner.send("PATCH", &format!("/console/api/users/{invited}"), Some(json!({"role": "god"}))), 400, "validation", "invalid_request");

    // Removal: they can no longer log in.
    owner.send("DELETE", &format!("/console/api/users/{invited}"), None).assert_ok(200);
    assert_code(&newcomer.get("/console/api/session"), 401, "authentication", "session_expired");
    let r = Browser::new(&s).post("/console/api/session", json!({"email": "new@a.example", "password": PASSWORD}));
    assert_eq!(r.status, 401, "{}", r.text);
    let listed = owner.get("/console/api/users");
    let gone = listed.data()["users"].as_array().unwrap().iter().find(|u| u["userId"] == json!(invited)).unwrap().clone();
    assert!(gone["disabledAt"].is_string(), "{gone}");
    assert_code(&owner.send("DELETE", &format!("/console/api/users/{invited}"), None), 404, "not_found", "user_not_found");

    // The business keeps an owner; another business's users are not found.
    assert_code(&owner.send("DELETE", &format!("/console/api/users/{me}"), None), 409, "conflict", "last_owner");
    assert_code(&owner.send("PATCH", &format!("/console/api/users/{me}"), Some(json!({"role": "viewer"}))), 409, "conflict", "last_owner");
    assert_code(&owner.send("DELETE", &format!("/console/api/users/{theirs}"), None), 404, "not_found", "user_not_found");
    assert_code(&owner.send("PATCH", &format!("/console/api/users/{theirs}"), Some(json!({"role": "viewer"}))), 404, "not_found", "user_not_found");

    // Only an owner's session, with its CSRF token.
    let mut viewer = Browser::login(&s, "viewer@a.example");
    assert_code(&viewer.get("/console/api/users"), 403, "authorization", "owner_role_required");
    assert_code(&viewer.post("/console/api/users", json!({"email": "v@a.example", "role": "owner"})), 403, "authorization", "owner_role_required");
    assert_code(&owner.without_csrf("POST", "/console/api/users", Some(json!({"email": "c@a.example", "role": "viewer"}))), 403, "authorization", "csrf_token_invalid");
    assert_code(&s.as_key(&a.key).get("/console/api/users"), 401, "authentication", "session_required");
    assert_code(&owner.send("PUT", "/console/api/users", Some(json!({}))), 405, "validation", "method_not_allowed");
    assert_code(&owner.send("POST", "/console/api/users", None), 415, "validation", "unsupported_media_type");
}
