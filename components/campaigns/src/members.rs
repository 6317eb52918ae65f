//! listMemberships (50), listActivities (51) and listRecipients (ours 90).

use serde_json::{json, Value};
use switchboard_channel_connections::Channel;
use switchboard_guest::db;
use switchboard_guest::row_struct;
use switchboard_guest::{fail, ok, page, params, req, HResult, Request, Success};

use crate::campaigns::campaign_id;
use crate::model;

/// A list of campaign `id` (which must exist): `select` (parameters ?1
/// business, ?2 campaign) narrowed by the query parameters of `filters`
/// (name, column, whether a uuid).
fn filtered(r: &Request, id: &str, select: &str, filters: &[(&str, &str, bool)]) -> HResult<(String, Vec<switchboard_guest::Value>)> {
    let biz = r.business_id.as_str();
    model::current(biz, id)?;
    let mut sql = select.to_string();
    let mut params = params![biz, id];
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
    let (rows, next) = page::by_id::<(String, String, String, Option<String>, String, i64, String)>(r, &sql, params, "m.id")?;
    let ids: Vec<String> = rows.iter().map(|row| row.0.clone()).collect();
    let history = model::history(biz, &ids)?;
    let memberships: Vec<Value> = rows
        .into_iter()
        .map(|(member, iteration, contact, contact_name, outcome, attempts, created_at)| {
            let mine: Vec<Value> = history.iter().filter(|(m, _)| *m == member).map(|(_, h)| h.clone()).collect();
            json!({
                "id": member,
                "campaignId": id,
                "iterationId": iteration,
                "contactId": contact,
                "contactName": contact_name,
                "outcome": outcome,
                "attempts": attempts,
                "history": mine,
                "createdAt": created_at,
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
    match req::query_nonempty(r, "channel").map(Channel::parse) {
        Some(Some(Channel::Voice)) => sql += " AND a.kind = 'call'",
        Some(Some(Channel::Chatapp)) => sql += " AND a.kind = 'message'",
        Some(_) => sql += " AND 0",
        None => {}
    }
    let (rows, next) = page::by_id_newest_first::<(String, String, String, Option<String>, String, Option<i64>, String, String)>(r, &sql, params, "a.id")?;
    let activities: Vec<Value> = rows
        .into_iter()
        .map(|(activity, iteration, contact, contact_name, status, connected_ms, occurred_at, kind)| {
            let call = kind == "call";
            json!({
                "id": activity,
                "campaignId": id,
                "iterationId": iteration,
                "contactId": contact,
                "contactName": contact_name,
                "channel": (if call { Channel::Voice } else { Channel::Chatapp }).name(),
                "kind": kind,
                "callId": if call { json!(activity) } else { Value::Null },
                "messageId": if call { Value::Null } else { json!(activity) },
                "status": status,
                // A call's connected time is never NULL (the messages' column is).
                "durationSeconds": if call { json!(switchboard_voice_area::model::duration_seconds(connected_ms.unwrap_or_default())) } else { Value::Null },
                "occurredAt": occurred_at,
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
        None => current.id,
        Some(it) => {
            let it = it.to_ascii_lowercase();
            let found: Option<String> = db::query_one_as("SELECT id FROM campaign_iterations WHERE business_id = ?1 AND campaign_id = ?2 AND id = ?3", &params![biz, &id, &it])?;
            found.ok_or_else(|| fail::not_found("iteration_not_found", format!("no iteration {it} in campaign {id}")))?
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
    let mut params = params![biz, &iteration];
    req::narrow(r, &mut sql, &mut params, &[("outcome", "m.outcome", false)])?;
    let (rows, next) = page::by_id::<RecipientRow>(r, &sql, params, "m.id")?;
    let recipients: Vec<Value> = rows
        .into_iter()
        .map(|row| {
            let call = row.call_id.zip(row.call_status).map(|(call_id, status)| {
                json!({
                    "id": call_id,
                    "status": status,
                    "durationSeconds": switchboard_voice_area::model::duration_seconds(row.connected_ms.unwrap_or(0)),
                    "endedBy": row.ended_by,
                })
            });
            let opening = row.message_id.zip(row.message_status).map(|(message_id, status)| json!({"messageId": message_id, "status": status}));
            let reply = row.reply_at.map(|at| json!({"text": row.reply_text, "receivedAt": at}));
            json!({
                "memberId": row.member_id,
                "iterationId": iteration,
                "contactId": row.contact_id,
                "contactExists": row.contact_exists,
                "name": row.name,
                "mobile": row.mobile,
                "outcome": row.outcome,
                "attempts": row.attempts,
                "call": call,
                "opening": opening,
                "reply": reply,
                "updatedAt": row.updated_at,
            })
        })
        .collect();
    ok(&json!({"recipients": recipients, "iterationId": iteration, "nextCursor": next}))
}

row_struct! {
    /// A row of [`recipients`]' statement: the member, its contact as it is
    /// now, its latest call and opening message, and the first reply.
    struct RecipientRow {
        member_id: String,
        contact_id: String,
        name: Option<String>,
        mobile: Option<String>,
        outcome: String,
        attempts: i64,
        call_id: Option<String>,
        /// NULL when the call is gone.
        call_status: Option<String>,
        connected_ms: Option<i64>,
        ended_by: Option<String>,
        message_id: Option<String>,
        message_status: Option<String>,
        reply_text: Option<String>,
        reply_at: Option<String>,
        updated_at: String,
        contact_exists: bool,
    }
}
