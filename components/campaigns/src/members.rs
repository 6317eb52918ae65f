//! listMemberships (50), listActivities (51) and listRecipients (ours 90).

use serde_json::{json, Value};
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{fail, ok, page, req, HResult, Request, Success};

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

/// Ours 90: an iteration's recipients (the current one, or `iterationId`),
/// in admission order, optionally of one `outcome`: each with the contact
/// as it is now (its name and mobile; null once deleted), its outcome and
/// attempts, its latest call (voice) or opening message (chatapp) with
/// their states, and a chatapp contact's first reply after that opening.
pub fn recipients(r: &Request) -> HResult<Success> {
    let (biz, id) = (r.business_id.as_str(), campaign_id(r)?);
    let current = model::current(biz, &id)?;
    let iteration = match req::query_uuid(r, "iterationId")? {
        None => current.text(0),
        Some(it) => {
            let it = it.to_ascii_lowercase();
            let found = db::query_one("SELECT id FROM campaign_iterations WHERE business_id = ?1 AND campaign_id = ?2 AND id = ?3", &[biz.into(), id.as_str().into(), it.as_str().into()])?;
            found.ok_or_else(|| fail::not_found("iteration_not_found", format!("no iteration {it} in campaign {id}")))?.text(0)
        }
    };
    let mut sql = String::from(
        "SELECT m.id, m.contact_id, COALESCE(c.name, m.contact_name), c.mobile, m.outcome, m.attempts, \
                m.call_id, cl.status, cl.connected_ms, cl.ended_by, m.message_id, k.status, \
                (SELECT i.text FROM messages i WHERE i.business_id = k.business_id AND i.conversation_id = k.conversation_id \
                   AND i.direction = 'inbound' AND i.created_at > k.created_at ORDER BY i.created_at, i.id LIMIT 1), \
                (SELECT i.created_at FROM messages i WHERE i.business_id = k.business_id AND i.conversation_id = k.conversation_id \
                   AND i.direction = 'inbound' AND i.created_at > k.created_at ORDER BY i.created_at, i.id LIMIT 1), \
                m.updated_at, c.id IS NOT NULL \
         FROM campaign_members m \
         LEFT JOIN contacts c ON c.business_id = m.business_id AND c.id = m.contact_id \
         LEFT JOIN calls cl ON cl.business_id = m.business_id AND cl.id = m.call_id \
         LEFT JOIN messages k ON k.business_id = m.business_id AND k.id = m.message_id \
         WHERE m.business_id = ?1 AND m.iteration_id = ?2",
    );
    let mut params: Vec<switchboard_guest::Value> = vec![biz.into(), iteration.as_str().into()];
    req::narrow(r, &mut sql, &mut params, &[("outcome", "m.outcome", false)])?;
    let (rows, next) = page::by_id(r, &sql, params, "m.id")?;
    let recipients: Vec<Value> = rows
        .iter()
        .map(|row| {
            let call = row.opt_text(6).filter(|_| row.opt_text(7).is_some()).map(|call_id| {
                json!({
                    "id": call_id,
                    "status": row.text(7),
                    "durationSeconds": switchboard_voice_area::model::duration_seconds(row.opt_int(8).unwrap_or(0)),
                    "endedBy": row.opt_text(9),
                })
            });
            let opening = row.opt_text(10).filter(|_| row.opt_text(11).is_some()).map(|message_id| json!({"messageId": message_id, "status": row.text(11)}));
            let reply = row.opt_text(13).map(|at| json!({"text": row.opt_text(12), "receivedAt": at}));
            json!({
                "memberId": row.text(0),
                "iterationId": iteration,
                "contactId": row.text(1),
                "contactExists": row.boolean(15),
                "name": row.opt_text(2),
                "mobile": row.opt_text(3),
                "outcome": row.text(4),
                "attempts": row.int(5),
                "call": call,
                "opening": opening,
                "reply": reply,
                "updatedAt": row.text(14),
            })
        })
        .collect();
    ok(&json!({"recipients": recipients, "iterationId": iteration, "nextCursor": next}))
}
