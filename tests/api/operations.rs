//! The operation table, walked row by row against the real binary: every
//! operation is answered by the area its id is listed under, never by a
//! 501 (an area without it, or a component this build lacks). The areas'
//! `handle` match their ids exhaustively (a missing arm does not compile)
//! and the gateway's unit tests pin the table to the ids; this walks the
//! rows a request can reach without a body: every read and every delete
//! by query, with unknown ids, so each answer is the area's own (a page, a
//! `*_not_found`, a rule of its own). The operations with a body reach
//! their areas in their own areas' tests, and the fuzzer sends each one
//! schema-valid bodies (tests/fuzz/run.py: never a 5xx).

use crate::harness::*;
use switchboard_gateway::operations::{Component, OPERATIONS};

/// Codes a component never answers with: the request path's refusals
/// (admission) and the host's or the edge's answer for an area it lacks.
const NOT_FROM_AN_AREA: &[&str] = &[
    "not_implemented",
    "not_served_at_edge",
    "invalid_request",
    "malformed_query",
    "invalid_path_parameter",
    "business_id_required",
    "business_mismatch",
    "missing_scope",
    "unexpected_body",
    "body_required",
    "idempotency_key_required",
    "route_not_found",
    "method_not_allowed",
    "authentication_required",
];

/// A value a required query parameter's schema accepts: its first enum
/// value, or `id` for a uuid.
fn value_for(name: &str, schema: &str, id: &str) -> String {
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
    if let Some(first) = schema["enum"].get(0) {
        return first.as_str().unwrap().to_string();
    }
    assert_eq!(schema["format"], "uuid", "a required query parameter `{name}` this walk cannot fill: add its value here");
    id.to_string()
}

#[test]
fn every_operation_without_a_body_is_answered_by_its_area() {
    let dir = DataDir::new();
    let s = Server::start(&dir.0);
    let t = tenant(&dir.0, "all");
    let mut walked = 0;
    for op in OPERATIONS.iter().filter(|o| o.request.is_none() && !o.session_only()) {
        let id = uuid::Uuid::new_v4().to_string();
        let mut url = op.path.to_string();
        while let Some(start) = url.find('{') {
            let end = start + url[start..].find('}').unwrap();
            url.replace_range(start..=end, &id);
        }
        let query: Vec<String> =
            op.query.iter().filter(|q| q.required).map(|q| format!("{}={}", q.name, if q.name == "businessId" { t.business.clone() } else { value_for(q.name, q.schema, &id) })).collect();
        if !query.is_empty() {
            url = format!("{url}?{}", query.join("&"));
        }
        let k = if op.method.is_mutation() { s.as_key(&t.key).fresh() } else { s.as_key(&t.key) };
        let r = k.send(op.method.as_str(), &url, None);
        assert!(r.status < 500 && !NOT_FROM_AN_AREA.contains(&r.code()), "{} ({}) was not answered by its area: {} {}", op.id, op.component, r.status, r.text);
        if op.component == Component::Gateway {
            r.assert_ok(op.success_status[0]);
        }
        walked += 1;
    }
    assert!(walked >= 38, "{walked} operations walked");
}
