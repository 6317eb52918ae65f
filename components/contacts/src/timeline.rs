//! getContactTimeline: a contact's cross-channel history, newest first.

use serde_json::json;
use switchboard_guest::cursor::Cursor;
use switchboard_guest::db;
use switchboard_guest::{ok, params, req, HResult, Request, Success, Value};

use crate::model;

pub fn get(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let contact = req::path_uuid(req, "contactId", "contact_not_found", "contact")?;
    let limit = req::limit(req, 50, 200)?;
    let cursor = req::query_nonempty(req, "cursor").map(Cursor::parse).transpose()?;
    let campaign = req::query_uuid(req, "campaignId")?;

    if db::query_one("SELECT 1 FROM contacts WHERE business_id = ?1 AND id = ?2", &params![biz, contact])?.is_none() {
        return Err(model::contact_not_found());
    }

    let mut sql = String::from(
        "SELECT id, channel, kind, direction, occurred_at, campaign_id, summary_json FROM timeline_entries \
         WHERE business_id = ?1 AND contact_id = ?2",
    );
    let mut params: Vec<Value> = params![biz, contact];
    if let Some(c) = campaign {
        params.push(c.into());
        sql += &format!(" AND campaign_id = ?{}", params.len());
    }
    if let Some(c) = &cursor {
        params.push(c.key.as_str().into());
        params.push(c.id.as_str().into());
        let (k, i) = (params.len() - 1, params.len());
        sql += &format!(" AND (occurred_at < ?{k} OR (occurred_at = ?{k} AND id < ?{i}))");
    }
    sql += &format!(" ORDER BY occurred_at DESC, id DESC LIMIT {}", limit + 1);

    // The channel as stored (chatapp, photoapp, voice, sms or other; the column is not checked).
    type Entry = (String, String, String, Option<String>, String, Option<String>, String);
    let mut rows: Vec<Entry> = db::query_as(&sql, &params)?;
    let next = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|(id, _, _, _, occurred_at, _, _)| Cursor::new(occurred_at.clone(), id.clone()).encode())
    } else {
        None
    };
    let entries: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|(id, channel, kind, direction, occurred_at, campaign_id, summary)| {
            let summary = match serde_json::from_str::<serde_json::Value>(&summary) {
                Ok(v @ serde_json::Value::Object(_)) => v,
                _ => json!({}),
            };
            json!({
                "id": id,
                "channel": channel,
                "kind": kind,
                "direction": direction,
                "occurredAt": occurred_at,
                "campaignId": campaign_id,
                "summary": summary,
            })
        })
        .collect();
    ok(&json!({"entries": entries, "nextCursor": next}))
}
