//! listChannels, getPhotoappConnection, disconnectPhotoapp,
//! getChannelAssignment, updateChannelAssignment, and the connection and
//! assignment helpers agent create shares.
//!
//! Connections are rows of `channel_connections`, read and written only by
//! the area's connections crate (`switchboard-channel-connections`, which
//! `admin channel connect` calls to connect); it never reads `token_ref`.

use serde::Deserialize;
use serde_json::{json, Value as J};
use switchboard_channel_connections::{self as connections, Channel};
use switchboard_guest::db::{self, Store};
use switchboard_guest::{fail, now, ok, params, req, Failure, HResult, Request, Success};

use crate::agents::{self, agent_not_found};
use crate::rules::quote;

/// (channel, label, live, assignment mode, availability), in listing
/// order. `live`: the channel is generally available; `ready` (per
/// business) is computed by [`readiness`].
const CHANNELS: [(Channel, &str, bool, &str, &str); 5] = [
    (Channel::Chatapp, "Chat app", true, "per_phone_number", "live"),
    (Channel::Voice, "Voice calls", true, "agent_only", "live"),
    (Channel::Photoapp, "Photo app", true, "per_account", "live"),
    (Channel::Sms, "SMS", false, "none", "coming_later"),
    (Channel::Other, "Other (agent only, no delivery)", false, "agent_only", "reserved"),
];

/// Connected chatapp phone numbers of the business: (phoneNumberId, label),
/// oldest connection first.
fn chatapp_numbers(biz: &str) -> HResult<Vec<(String, Option<String>)>> {
    connections::chatapp_numbers(&Store, biz)
}

fn chatapp_number_connected(biz: &str, phone: &str) -> HResult<bool> {
    connections::is_connected(&Store, biz, Channel::Chatapp.name(), phone)
}

/// The connected photoapp account of the business: (providerAccountId, username).
fn photoapp_account(biz: &str) -> HResult<Option<(String, Option<String>)>> {
    connections::photoapp_account(&Store, biz)
}

/// (live, ready) of a channel for this business: chatapp is ready with at
/// least one connected phone number, photoapp with a connected account,
/// voice always; sms (coming later) and other (reserved) never.
pub fn readiness(biz: &str, channel: Channel) -> HResult<(bool, bool)> {
    let live = CHANNELS.iter().find(|c| c.0 == channel).is_some_and(|c| c.2);
    let ready = match channel {
        Channel::Chatapp => !chatapp_numbers(biz)?.is_empty(),
        Channel::Photoapp => photoapp_account(biz)?.is_some(),
        Channel::Voice => true,
        Channel::Sms | Channel::Other => false,
    };
    Ok((live, ready))
}

/// The current assignment of one target: (aiAgentId, autoReplyEnabled, humanHandoffActive).
fn read_assignment(biz: &str, channel: Channel, target: &str) -> HResult<(Option<String>, bool, bool)> {
    Ok(db::query_one_as(
        "SELECT ai_agent_id, auto_reply_enabled, human_handoff_active FROM channel_assignments \
         WHERE business_id = ?1 AND channel = ?2 AND provider_id = ?3",
        &params![biz, channel, target],
    )?
    .unwrap_or((None, false, false)))
}

pub fn write_assignment(biz: &str, channel: Channel, target: &str, agent: Option<&str>, auto: bool, handoff: bool, now: &str) -> HResult<()> {
    db::execute(
        "INSERT INTO channel_assignments (business_id, channel, provider_id, ai_agent_id, auto_reply_enabled, human_handoff_active, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (business_id, channel, provider_id) DO UPDATE SET ai_agent_id = excluded.ai_agent_id, \
         auto_reply_enabled = excluded.auto_reply_enabled, human_handoff_active = excluded.human_handoff_active, updated_at = excluded.updated_at",
        &params![biz, channel, target, agent, auto, handoff, now],
    )?;
    Ok(())
}

/// Unassigns an (archived) agent everywhere.
pub fn clear_agent_assignments(biz: &str, agent: &str, now: &str) -> HResult<()> {
    db::execute("UPDATE channel_assignments SET ai_agent_id = NULL, updated_at = ?3 WHERE business_id = ?1 AND ai_agent_id = ?2", &params![biz, agent, now])?;
    Ok(())
}

fn not_supported(channel: Channel) -> Failure {
    let why = match channel {
        Channel::Sms => "sms is coming later; assignment is not supported until that provider is enabled",
        Channel::Voice => "voice agents are selected per call, not assigned to a channel",
        _ => "`other` is a reserved agent-only channel without delivery",
    };
    // Not a malformed request: this deployment has no provider for it.
    fail::failure(409, "configuration", "channel_assignment_not_supported", format!("channel `{channel}` does not support assignments: {why}"), false)
}

/// The phone number (chatapp) or account (photoapp) an assignment applies
/// to. A missing `phoneNumberId` means the business's only connected number;
/// a missing `providerAccountId` means the connected account. `prefix` names
/// the body field's parent (`assignment.` in agent create).
pub fn resolve_target(biz: &str, channel: Channel, phone: Option<&str>, account: Option<&str>, prefix: &str) -> HResult<String> {
    match channel {
        Channel::Chatapp => {
            if account.is_some() {
                return Err(fail::validation("provider_account_id_not_allowed", format!("`{prefix}providerAccountId` applies to photoapp only; chatapp assignments name a `{prefix}phoneNumberId`")));
            }
            match phone {
                Some(p) if chatapp_number_connected(biz, p)? => Ok(p.to_string()),
                Some(p) => Err(fail::not_found("phone_number_not_connected", format!("`{prefix}phoneNumberId` `{}` is not a connected chatapp phone number of this business", quote(p, 64)))),
                None => {
                    let mut numbers = chatapp_numbers(biz)?;
                    match numbers.len() {
                        0 => Err(fail::conflict("phone_number_not_connected", "no chatapp phone number is connected to this business; connect one before assigning an agent")),
                        1 => Ok(numbers.remove(0).0),
                        // A matter of state (several numbers are connected), not of the request's shape.
                        _ => Err(fail::conflict("phone_number_id_required", format!("`{prefix}phoneNumberId` is required: this business has several connected chatapp phone numbers"))),
                    }
                }
            }
        }
        Channel::Photoapp => {
            if phone.is_some() {
                return Err(fail::validation("phone_number_id_not_allowed", format!("`{prefix}phoneNumberId` applies to chatapp only; photoapp assignments name a `{prefix}providerAccountId`")));
            }
            match (photoapp_account(biz)?, account) {
                (Some((acct, _)), None) => Ok(acct),
                (Some((acct, _)), Some(a)) if a == acct => Ok(acct),
                (_, Some(a)) => {
                    Err(fail::not_found("photoapp_account_not_connected", format!("`{prefix}providerAccountId` `{}` is not the connected photoapp account of this business", quote(a, 64))))
                }
                (None, None) => Err(fail::conflict("photoapp_account_not_connected", "no photoapp account is connected to this business; connect one before assigning an agent")),
            }
        }
        other => Err(not_supported(other)),
    }
}

pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let numbers = chatapp_numbers(biz)?;
    let account = photoapp_account(biz)?;
    let mut channels = Vec::new();
    for (channel, label, live, mode, availability) in CHANNELS {
        let connections: Vec<J> = match channel {
            Channel::Chatapp => numbers
                .iter()
                .map(|(p, l)| {
                    let (agent, _, _) = read_assignment(biz, channel, p)?;
                    Ok(json!({"phoneNumberId": p, "providerAccountId": null, "label": l, "aiAgentId": agent}))
                })
                .collect::<HResult<_>>()?,
            Channel::Photoapp => match &account {
                Some((a, u)) => {
                    let (agent, _, _) = read_assignment(biz, channel, a)?;
                    vec![json!({"phoneNumberId": null, "providerAccountId": a, "label": u, "aiAgentId": agent})]
                }
                None => Vec::new(),
            },
            _ => Vec::new(),
        };
        let ready = match channel {
            Channel::Chatapp | Channel::Photoapp => !connections.is_empty(),
            Channel::Voice => true,
            Channel::Sms | Channel::Other => false,
        };
        channels.push(json!({
            "key": channel.name(), "label": label, "live": live, "ready": ready, "assignmentMode": mode,
            "availability": availability, "connections": connections,
        }));
    }
    ok(&json!({"channels": channels, "nextCursor": null}))
}

/// Metadata of the business's photoapp connection (the latest one), never
/// its token: `status` is `connected`, `disconnected` or `not_connected`.
fn photoapp_json(biz: &str) -> HResult<J> {
    Ok(match connections::latest_photoapp(&Store, biz)? {
        None => json!({"status": "not_connected", "connected": false, "providerAccountId": null, "username": null,
                       "connectedAt": null, "disconnectedAt": null}),
        Some(c) => {
            let connected = c.status == "connected";
            json!({
                "status": c.status,
                "connected": connected,
                "providerAccountId": c.account,
                "username": c.username,
                "connectedAt": if connected { J::from(c.connected_at) } else { J::Null },
                "disconnectedAt": c.disconnected_at,
            })
        }
    })
}

pub fn get_photoapp(req: &Request) -> HResult<Success> {
    ok(&photoapp_json(&req.business_id)?)
}

/// Revokes use of the photoapp connection: the token reference and the
/// provider account assets (username, cached assets) are cleared, the
/// account's assignment is removed. Idempotent.
pub fn disconnect_photoapp(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    connections::disconnect_photoapp(&Store, biz)?;
    ok(&photoapp_json(biz)?)
}

/// Active agents of a channel, as assignable.
fn assignable(biz: &str, channel: Channel) -> HResult<Vec<J>> {
    let rows: Vec<(String, String, String, String)> =
        db::query_as("SELECT id, name, reference_name, status FROM agents WHERE business_id = ?1 AND channel = ?2 AND status = 'active' ORDER BY id", &params![biz, channel])?;
    Ok(rows.into_iter().map(|(id, name, reference_name, status)| json!({"id": id, "name": name, "referenceName": reference_name, "status": status})).collect())
}

fn assignment_json(biz: &str, channel: Channel, target: Option<&str>) -> HResult<J> {
    let (agent, auto, handoff) = match target {
        Some(t) => read_assignment(biz, channel, t)?,
        None => (None, false, false),
    };
    let (phone, account) = match channel {
        Channel::Chatapp => (target, None),
        Channel::Photoapp => (None, target),
        _ => (None, None),
    };
    Ok(json!({
        "channel": channel.name(),
        "phoneNumberId": phone,
        "providerAccountId": account,
        "aiAgentId": agent,
        "autoReplyEnabled": auto,
        "humanHandoffActive": handoff,
        "assignableAgents": assignable(biz, channel)?,
    }))
}

/// The assignment of a channel: for chatapp the given connected phone number
/// (or the first connected one; null when none), for photoapp the connected
/// account; plus the active agents of the channel.
pub fn get_assignment(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let channel = req::query_nonempty(req, "channel").ok_or_else(|| fail::validation("invalid_query_parameter", "query parameter `channel` is required"))?;
    let channel = Channel::parse(channel).ok_or_else(|| fail::validation("invalid_query_parameter", "query parameter `channel` must be one of chatapp, voice, photoapp, sms, other"))?;
    let phone = req::query_nonempty(req, "phoneNumberId");
    if phone.is_some() && channel != Channel::Chatapp {
        return Err(fail::validation("phone_number_id_not_allowed", "query parameter `phoneNumberId` applies to channel chatapp only"));
    }
    let target = match channel {
        Channel::Chatapp => match phone {
            Some(p) if chatapp_number_connected(biz, p)? => Some(p.to_string()),
            Some(p) => {
                return Err(fail::not_found("phone_number_not_connected", format!("query parameter `phoneNumberId` `{}` is not a connected chatapp phone number of this business", quote(p, 64))))
            }
            None => chatapp_numbers(biz)?.into_iter().next().map(|n| n.0),
        },
        Channel::Photoapp => photoapp_account(biz)?.map(|a| a.0),
        _ => None,
    };
    ok(&assignment_json(biz, channel, target.as_deref())?)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AssignmentUpdate {
    channel: String,
    phone_number_id: Option<String>,
    provider_account_id: Option<String>,
    ai_agent_id: Option<String>,
    #[serde(default)]
    auto_reply_enabled: bool,
    #[serde(default)]
    human_handoff_active: bool,
}

/// Sets the whole assignment of one phone number (chatapp) or account
/// (photoapp): an absent or null `aiAgentId` unassigns; the flags default to
/// false. Only active agents of the same channel can be assigned.
pub fn update_assignment(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let b: AssignmentUpdate = req::body(req)?;
    let channel = crate::body::channel(&b.channel)?;
    let target = resolve_target(biz, channel, b.phone_number_id.as_deref(), b.provider_account_id.as_deref(), "")?;
    if let Some(id) = b.ai_agent_id.as_deref() {
        let row = agents::load_row(biz, id)?.ok_or_else(|| agent_not_found(id))?;
        if row.channel != channel {
            return Err(fail::validation("agent_channel_mismatch", format!("`aiAgentId`: agent `{id}` is a `{}` agent and cannot be assigned to channel `{channel}`", row.channel)));
        }
        if row.status != "active" {
            return Err(fail::conflict("agent_archived", format!("`aiAgentId`: agent `{id}` is archived and cannot be assigned")));
        }
    }
    write_assignment(biz, channel, &target, b.ai_agent_id.as_deref(), b.auto_reply_enabled, b.human_handoff_active, &now())?;
    ok(&assignment_json(biz, channel, Some(&target))?)
}
