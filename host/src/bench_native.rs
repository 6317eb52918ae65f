//! The benchmark baseline (`--bench-baseline` only): `GET /contacts/{id}`
//! answered natively by the host after the same gateway checks, with the
//! same queries the contacts component runs, so bench/ can show what the
//! component boundary costs.

use crate::db::{self, SqlValue};
use crate::pipeline::{Answer, App};
use switchboard_gateway::errors::success_envelope;
use switchboard_gateway::{Failure, Incoming};

pub fn handle(app: &App, incoming: Incoming, request_id: &str) -> Answer {
    let a = match app.gateway.admit(incoming, &app.keys()) {
        Ok(a) if a.op.id == switchboard_gateway::operations::OperationId::GetContact => a,
        Ok(_) => return Answer::failure(&Failure::not_found("route_not_found", "only getContact has a native baseline"), request_id),
        Err(f) => return Answer::failure(&f, request_id),
    };
    let business = a.business_id.clone().unwrap_or_default();
    let id = a.path_params[0].1.clone();
    let Ok(db) = app.db_for(&business) else { return Answer::failure(&Failure::internal("storage"), request_id) };
    let Ok(conn) = db.conn() else { return Answer::failure(&Failure::internal("storage"), request_id) };
    let p = || vec![SqlValue::Text(business.clone()), SqlValue::Text(id.clone())];
    let _ = db::execute(&conn, "BEGIN READONLY", vec![]);
    let contact = db::query_rows(&conn, "SELECT id, mobile, name, fields_json, communication_blocked, created_at, updated_at FROM contacts WHERE business_id = ?1 AND id = ?2", p());
    let cats = db::query_rows(&conn, "SELECT c.id, c.name FROM contact_categories cc JOIN categories c ON c.id = cc.category_id WHERE cc.business_id = ?1 AND cc.contact_id = ?2 ORDER BY c.name", p());
    let activity = db::query_rows(&conn, "SELECT channel, COUNT(*), MAX(occurred_at) FROM timeline_entries WHERE business_id = ?1 AND contact_id = ?2 GROUP BY channel", p());
    let _ = db::execute(&conn, "ROLLBACK", vec![]);
    let (Ok(contact), Ok(cats), Ok(activity)) = (contact, cats, activity) else {
        return Answer::failure(&Failure::internal("storage"), request_id);
    };
    let Some(row) = contact.into_iter().next() else {
        return Answer::failure(&Failure::not_found("contact_not_found", "no such contact"), request_id);
    };
    let t = |v: &SqlValue| match v {
        SqlValue::Text(s) => serde_json::Value::String(s.clone()),
        SqlValue::Integer(i) => serde_json::Value::from(*i),
        _ => serde_json::Value::Null,
    };
    let mut act = serde_json::Map::new();
    for ch in ["chatapp", "photoapp", "voice"] {
        let r = activity.iter().find(|r| matches!(&r[0], SqlValue::Text(c) if c == ch));
        act.insert(ch.into(), serde_json::json!({"count": r.map(|r| t(&r[1])).unwrap_or(0.into()), "lastActivityAt": r.map(|r| t(&r[2]))}));
    }
    let fields: serde_json::Value = match &row[3] {
        SqlValue::Text(s) => serde_json::from_str(s).unwrap_or_default(),
        _ => serde_json::json!({}),
    };
    let data = serde_json::json!({"contact": {
        "id": t(&row[0]), "mobile": t(&row[1]), "name": t(&row[2]), "fields": fields,
        "communicationBlocked": matches!(row[4], SqlValue::Integer(1)),
        "categories": cats.iter().map(|c| serde_json::json!({"id": t(&c[0]), "name": t(&c[1])})).collect::<Vec<_>>(),
        "activity": act, "createdAt": t(&row[5]), "updatedAt": t(&row[6]),
    }, "campaignSummary": null});
    Answer { status: 200, content_type: "application/json", body: success_envelope(&data.to_string(), request_id), headers: Vec::new(), operation: "getContact(native)", download: None }
}
