//! listWebhookSubscriptions, createWebhookSubscription,
//! updateWebhookSubscription, revokeWebhookSubscription,
//! rotateWebhookSigningSecret.
//!
//! Status: `active` on create; PATCH moves `active` <-> `paused`; DELETE
//! makes it `revoked` for good (the stored secret is cleared, update and
//! rotate answer `409 subscription_revoked`, a second DELETE answers the same
//! revoked record). Lists show subscriptions in effect (`active` and
//! `paused`); revoked ones are not listed.

use serde::Deserialize;
use serde_json::{json, Value as J};
use switchboard_guest::db::{self};
use switchboard_guest::row_struct;
use switchboard_guest::{created, fail, ids, new_id, now, ok, page, params, req, Failure, HResult, Request, Success};

use crate::rules::{self, quote, Channel};

/// The columns every response is rendered from. `signing_secret` is
/// deliberately absent: no response path selects it; only the future
/// delivery job reads it (to sign).
pub const SUB_COLS: &str = "id, business_id, channel, phone_number_id, provider_account_id, callback_url, events_json, status, \
                            external_automation, secret_last4, created_at, updated_at, revoked_at";

pub(crate) fn not_found() -> Failure {
    fail::not_found("subscription_not_found", "webhook subscription not found")
}

pub(crate) fn revoked(id: &str) -> Failure {
    fail::conflict("subscription_revoked", format!("webhook subscription `{id}` is revoked; revocation is permanent, create a new subscription"))
}

row_struct! {
    /// A subscription row, selected with [`SUB_COLS`].
    pub(crate) struct Subscription {
        id: String,
        business_id: String,
        /// Chatapp or photoapp (the table's check).
        channel: Channel,
        phone_number_id: Option<String>,
        provider_account_id: Option<String>,
        callback_url: String,
        events_json: String,
        /// `active`, `paused` or `revoked`.
        pub(crate) status: String,
        external_automation: bool,
        secret_last4: String,
        created_at: String,
        updated_at: String,
        revoked_at: Option<String>,
    }
}

fn render(r: Subscription) -> J {
    let events: J = serde_json::from_str(&r.events_json).unwrap_or_else(|_| J::Array(Vec::new()));
    json!({
        "id": r.id,
        "businessId": r.business_id,
        "channel": r.channel.name(),
        "phoneNumberId": r.phone_number_id,
        "providerAccountId": r.provider_account_id,
        "callbackUrl": r.callback_url,
        "events": events,
        "status": r.status,
        "externalAutomation": r.external_automation,
        "secretLast4": r.secret_last4,
        "createdAt": r.created_at,
        "updatedAt": r.updated_at,
        "revokedAt": r.revoked_at,
    })
}

/// The subscription `id` of the business (any status), or 404.
pub(crate) fn load(biz: &str, id: &str) -> HResult<Subscription> {
    db::query_one_as(&format!("SELECT {SUB_COLS} FROM webhook_subscriptions WHERE business_id = ?1 AND id = ?2"), &params![biz, id])?.ok_or_else(not_found)
}

pub(crate) fn path_id(req: &Request) -> HResult<&str> {
    req::path_uuid(req, "subscriptionId", "subscription_not_found", "webhook subscription")
}

/// A fresh copy-once secret from the host's CSPRNG.
fn new_secret() -> String {
    rules::secret_from(&ids::random_bytes(32))
}

/// Subscriptions in effect (active and paused), in creation order.
pub fn list(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let (rows, next) = page::by_id::<Subscription>(req, &format!("SELECT {SUB_COLS} FROM webhook_subscriptions WHERE business_id = ?1 AND status <> 'revoked'"), params![biz], "id")?;
    ok(&json!({"subscriptions": rows.into_iter().map(render).collect::<Vec<_>>(), "nextCursor": next}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateBody {
    channel: Option<String>,
    phone_number_id: Option<String>,
    provider_account_id: Option<String>,
    callback_url: String,
    events: Vec<String>,
    external_automation: bool,
}

fn connected(biz: &str, channel: Channel, provider_id: &str) -> HResult<bool> {
    Ok(db::query_one("SELECT 1 FROM channel_connections WHERE business_id = ?1 AND channel = ?2 AND provider_id = ?3 AND status = 'connected'", &params![biz, channel, provider_id])?.is_some())
}

/// Creates an active subscription for a phone number (chatapp) or account
/// (photoapp) connected to this business; 201 with the copy-once secret.
pub fn create(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let b: CreateBody = req::body(req)?;
    // The schema chose the shape; without `channel` it is told by the id field.
    let named = b.channel.as_deref().map(rules::subscription_channel);
    let channel = match (named, b.phone_number_id.is_some(), b.provider_account_id.is_some()) {
        (Some(Some(Channel::Chatapp)), _, false) | (None, true, false) => Channel::Chatapp,
        (Some(Some(Channel::Photoapp)), false, _) | (None, false, true) => Channel::Photoapp,
        _ => return Err(fail::validation("invalid_subscription_shape", "a chatapp subscription names `phoneNumberId`, a photoapp subscription names `providerAccountId`; send exactly one")),
    };
    if !b.external_automation {
        return Err(fail::validation("external_automation_required", "`externalAutomation` must be true"));
    }
    rules::check_callback_url(&b.callback_url)?;
    rules::check_events(channel, &b.events)?;
    let (phone, account) = match channel {
        Channel::Chatapp => {
            let p = b.phone_number_id.clone().unwrap_or_default();
            if !connected(biz, Channel::Chatapp, &p)? {
                return Err(fail::not_found("phone_number_not_connected", format!("`phoneNumberId` `{}` is not a connected chatapp phone number of this business", quote(&p, 64))));
            }
            (Some(p), None)
        }
        _ => {
            let a = b.provider_account_id.clone().unwrap_or_default();
            if !connected(biz, Channel::Photoapp, &a)? {
                return Err(fail::not_found("photoapp_account_not_connected", format!("`providerAccountId` `{}` is not the connected photoapp account of this business", quote(&a, 64))));
            }
            (None, Some(a))
        }
    };
    let id = new_id();
    let now = now();
    let secret = new_secret();
    db::execute(
        "INSERT INTO webhook_subscriptions (id, business_id, channel, phone_number_id, provider_account_id, callback_url, events_json, \
         status, external_automation, signing_secret, secret_last4, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'active', 1, ?8, ?9, ?10, ?10)",
        &params![&id, biz, channel, phone, account, &b.callback_url, J::from(b.events.clone()).to_string(), &secret, rules::last4(&secret), &now],
    )?;
    created(&json!({"subscription": render(load(biz, &id)?), "signingSecret": secret}))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateBody {
    callback_url: Option<String>,
    events: Option<Vec<String>>,
    status: Option<String>,
}

/// Changes the callback URL, the events (of the subscription's own channel)
/// and/or the status (`active` <-> `paused`). A revoked subscription is final.
pub fn update(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let id = path_id(req)?;
    let b: UpdateBody = req::body(req)?;
    let row = load(biz, id)?;
    if row.status == "revoked" {
        return Err(revoked(id));
    }
    if b.callback_url.is_none() && b.events.is_none() && b.status.is_none() {
        return Err(fail::validation("nothing_to_update", "send at least one of `callbackUrl`, `events`, `status`"));
    }
    if let Some(u) = &b.callback_url {
        rules::check_callback_url(u)?;
    }
    if let Some(ev) = &b.events {
        rules::check_events(row.channel, ev)?;
    }
    if let Some(s) = b.status.as_deref() {
        if s != "active" && s != "paused" {
            return Err(fail::validation("invalid_status", "`status` must be `active` or `paused`; revoke with DELETE"));
        }
    }
    db::execute(
        "UPDATE webhook_subscriptions SET callback_url = COALESCE(?3, callback_url), events_json = COALESCE(?4, events_json), \
         status = COALESCE(?5, status), updated_at = ?6 WHERE business_id = ?1 AND id = ?2 AND status <> 'revoked'",
        &params![biz, id, b.callback_url, b.events.map(|e| J::from(e).to_string()), b.status, now()],
    )?;
    ok(&json!({"subscription": render(load(biz, id)?)}))
}

/// Revokes permanently and clears the stored secret; revoking a revoked
/// subscription answers the same record.
pub fn revoke(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let id = path_id(req)?;
    let row = load(biz, id)?;
    if row.status != "revoked" {
        let now = now();
        db::execute(
            "UPDATE webhook_subscriptions SET status = 'revoked', signing_secret = NULL, revoked_at = ?3, updated_at = ?3 \
             WHERE business_id = ?1 AND id = ?2",
            &params![biz, id, &now],
        )?;
    }
    ok(&json!({"subscription": render(load(biz, id)?)}))
}

/// Replaces the secret (the old one is gone at once: only the current one
/// is stored); 200 with the new copy-once secret. Paused subscriptions
/// rotate too; revoked ones do not.
pub fn rotate(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let id = path_id(req)?;
    let row = load(biz, id)?;
    if row.status == "revoked" {
        return Err(revoked(id));
    }
    let secret = new_secret();
    db::execute(
        "UPDATE webhook_subscriptions SET signing_secret = ?3, secret_last4 = ?4, updated_at = ?5 WHERE business_id = ?1 AND id = ?2",
        &params![biz, id, &secret, rules::last4(&secret), now()],
    )?;
    ok(&json!({"subscription": render(load(biz, id)?), "signingSecret": secret}))
}
