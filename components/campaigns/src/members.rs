//! listMemberships (50) and listActivities (51).

use serde_json::{json, Value};
use switchboard_guest::db::RowExt;
use switchboard_guest::{ok, page, req, HResult, Request, Success};

use crate::campaigns::campaign_id;
use crate::model;

/// A list of campaign `id` (which must exist): `select` (parameters ?1
/// business, ?2 campaign) narrowed by the query parameters of `filters`
/// (name, column, whether a uuid).
fn filtered(r: &Request, id: &str, select: &str, filters: &[(&str, &str, bool)]) -> HResult<(String, Vec<switchboard_guest::Value>)> {
    let biz = r.business_id.as_str();
    model::current(biz, id)?;
    let mut sql = select.to_string();
    let mut params: Vec<switchboard_guest::Value> = vec![biz.into(), id.into()];
    req::narrow(r, &mut sql, &mut params, filters)?;
    Ok((sql, params))
}

/// 50: members with their outcome, attempts and history; every iteration
/// of the campaign (in sequence, then admission order) or one
/// (`iterationId`), optionally of one `outcome`.
pub fn memberships(r: &Request) -> HResult<Success> {
    let (biz, id) = (r.business_id.as_str(), campaign_id(r)?);
    let (sql, params) = filtered(
        r,
        &id,
        "SELECT m.id, m.iteration_id, m.contact_id, m.contact_name, m.outcome, m.attempts, m.created_at FROM campaign_members m \
         WHERE m.business_id = ?1 AND m.campaign_id = ?2",
        &[("iterationId", "m.iteration_id", true), ("outcome", "m.outcome", false)],
    )?;
    // Member ids begin with their iteration's creation time, so id order is
    // iteration order, then admission order.
    let (rows, next) = page::by_id(r, &sql, params, "m.id")?;
    let ids: Vec<String> = rows.iter().map(|row| row.text(0)).collect();
    let history = model::history(biz, &ids)?;
    let memberships: Vec<Value> = rows
        .iter()
        .map(|row| {
            let mine: Vec<Value> = history.iter().filter(|(m, _)| *m == row.text(0)).map(|(_, h)| h.clone()).collect();
            json!({
                "id": row.text(0),
                "campaignId": id,
                "iterationId": row.text(1),
                "contactId": row.text(2),
                "contactName": row.opt_text(3),
                "outcome": row.text(4),
                "attempts": row.int(5),
                "history": mine,
                "createdAt": row.text(6),
            })
        })
        .collect();
    ok(&json!({"memberships": memberships, "nextCursor": next}))
}

/// 51: the campaign's calls and opening messages, retries included (one
/// activity each, its id the call's or the message's), newest first,
/// filtered by contact, iteration, channel or status.
pub fn activities(r: &Request) -> HResult<Success> {
    let id = campaign_id(r)?;
    let (mut sql, params) = filtered(
        r,
        &id,
        "SELECT a.id, a.iteration_id, a.contact_id, a.contact_name, a.status, a.connected_ms, a.created_at, a.kind FROM ( \
           SELECT c.id, c.iteration_id, c.contact_id, c.contact_name, c.status, c.connected_ms, c.created_at, 'call' AS kind \
           FROM calls c WHERE c.business_id = ?1 AND c.campaign_id = ?2 \
           UNION ALL \
           SELECT k.id, o.iteration_id, o.contact_id, o.contact_name, k.status, NULL, k.created_at, 'message' \
           FROM campaign_openings o JOIN messages k ON k.business_id = o.business_id AND k.id = o.message_id \
           WHERE o.business_id = ?1 AND o.campaign_id = ?2) a WHERE 1 = 1",
        &[("contactId", "a.contact_id", true), ("iterationId", "a.iteration_id", true), ("status", "a.status", false)],
    )?;
    match req::query_nonempty(r, "channel") {
        Some("voice") => sql += " AND a.kind = 'call'",
        Some("chatapp") => sql += " AND a.kind = 'message'",
        Some(_) => sql += " AND 0",
        None => {}
    }
    let (rows, next) = page::by_id_newest_first(r, &sql, params, "a.id")?;
    let activities: Vec<Value> = rows
        .iter()
        .map(|row| {
            let call = row.text(7) == "call";
            json!({
                "id": row.text(0),
                "campaignId": id,
                "iterationId": row.text(1),
                "contactId": row.text(2),
                "contactName": row.opt_text(3),
                "channel": if call { "voice" } else { "chatapp" },
                "kind": row.text(7),
                "callId": if call { json!(row.text(0)) } else { Value::Null },
                "messageId": if call { Value::Null } else { json!(row.text(0)) },
                "status": row.text(4),
                "durationSeconds": if call { json!(switchboard_voice_area::model::duration_seconds(row.int(5))) } else { Value::Null },
                "occurredAt": row.text(6),
            })
        })
        .collect();
    ok(&json!({"activities": activities, "nextCursor": next}))
}
