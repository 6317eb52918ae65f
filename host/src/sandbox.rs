//! Sandbox-only HTTP routes, served only with `serve --sandbox-routes`:
//! `POST /sandbox/v1/chatapp/inbound` and `POST /sandbox/v1/photoapp/inbound`
//! inject an inbound message the way the provider's webhook would (a durable
//! inbound job); `POST /sandbox/v1/photoapp/reactions` and `…/referrals` a
//! photoapp user's reaction to a message or arrival from an ad or a post,
//! and `…/comments` a public comment on one of the account's posts.
//! They take an API key of the business that owns the number (scope
//! `chatapp:write`) or the account (scope `photoapp:write`).

use crate::admin::{enqueue_inbound, enqueue_photoapp_signal, Inbound, InboundRefusal, PhotoappSignal, Sender};
use crate::pipeline::{Answer, App};
use serde::Deserialize;
use switchboard_gateway::{auth, Failure, KeyDirectory};

pub const INBOUND_PATH: &str = "/sandbox/v1/chatapp/inbound";
pub const PHOTOAPP_INBOUND_PATH: &str = "/sandbox/v1/photoapp/inbound";
pub const PHOTOAPP_REACTIONS_PATH: &str = "/sandbox/v1/photoapp/reactions";
pub const PHOTOAPP_REFERRALS_PATH: &str = "/sandbox/v1/photoapp/referrals";
pub const PHOTOAPP_COMMENTS_PATH: &str = "/sandbox/v1/photoapp/comments";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReactionBody {
    photoapp_account_id: String,
    from: String,
    reaction: String,
    #[serde(default)]
    message_id: Option<String>,
    #[serde(default)]
    removed: bool,
    /// When the user reacted (RFC 3339); default: now.
    #[serde(default)]
    occurred_at: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CommentBody {
    photoapp_account_id: String,
    from: String,
    text: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    post_id: Option<String>,
    #[serde(default)]
    comment_id: Option<String>,
    /// When it was written (RFC 3339); default: now.
    #[serde(default)]
    occurred_at: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReferralBody {
    photoapp_account_id: String,
    from: String,
    source: String,
    #[serde(default)]
    ad_id: Option<String>,
    #[serde(default)]
    post_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InboundBody {
    #[serde(default)]
    phone_number_id: Option<String>,
    #[serde(default)]
    photoapp_account_id: Option<String>,
    from: String,
    text: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    provider_message_id: Option<String>,
}

pub fn inbound(app: &App, path: &str, method: &str, authorization: Option<&str>, body: &[u8], request_id: &str) -> Answer {
    let fail = |f: Failure| Answer::failure(&f, request_id);
    if method != "POST" {
        return fail(Failure::new(405, "validation", "method_not_allowed", "use POST").with_header("Allow", "POST".into()));
    }
    let Some(token) = auth::bearer_token(authorization).filter(|t| auth::looks_like_key(t)) else {
        return fail(Failure::authentication("send an API key as `Authorization: Bearer <key>`"));
    };
    let key = match app.keys().find_by_hash(&auth::hash_key(token)) {
        Ok(Some(k)) if !k.revoked => k,
        Ok(_) => return fail(Failure::authentication("the API key is not valid")),
        Err(f) => return fail(f),
    };
    let photoapp = path != INBOUND_PATH;
    let scope = if photoapp { "photoapp:write" } else { "chatapp:write" };
    if !key.scopes.iter().any(|s| s == scope) {
        return fail(Failure::authorization("missing_scope", format!("this API key lacks the scope `{scope}`")));
    }
    if [PHOTOAPP_REACTIONS_PATH, PHOTOAPP_REFERRALS_PATH, PHOTOAPP_COMMENTS_PATH].contains(&path) {
        return answer(signal(app, &key.business_id, path, body), request_id);
    }
    let body: InboundBody = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return fail(Failure::validation("invalid_request", format!("invalid body: {e}"))),
    };
    let to = match (photoapp, &body.phone_number_id, &body.photoapp_account_id) {
        (false, Some(n), None) => Sender::Chatapp(n),
        (true, None, Some(a)) => Sender::Photoapp(a),
        (false, ..) => return fail(Failure::validation("invalid_request", "a chatapp inbound message needs `phoneNumberId` (and no `photoappAccountId`)")),
        (true, ..) => return fail(Failure::validation("invalid_request", "a photoapp inbound message needs `photoappAccountId` (and no `phoneNumberId`)")),
    };
    let m = Inbound { to, from: &body.from, text: &body.text, name: body.name.as_deref(), provider_message_id: body.provider_message_id.as_deref() };
    let code = if photoapp { "photoapp_account_not_connected" } else { "phone_number_not_connected" };
    let db = match app.db_for(&key.business_id) {
        Ok(db) => db,
        Err(f) => return fail(f),
    };
    answer(enqueue_inbound(&db, Some(&key.business_id), &m).map_err(|r| refusal(r, code)), request_id)
}

/// A reaction, a referral or a comment of the business's photoapp account.
fn signal(app: &App, business: &str, path: &str, body: &[u8]) -> Result<serde_json::Value, Failure> {
    let invalid = |e: serde_json::Error| Failure::validation("invalid_request", format!("invalid body: {e}"));
    let not_connected = |r| refusal(r, "photoapp_account_not_connected");
    let db = app.db_for(business)?;
    if path == PHOTOAPP_REACTIONS_PATH {
        let b: ReactionBody = serde_json::from_slice(body).map_err(invalid)?;
        let s = PhotoappSignal::Reaction { reaction: &b.reaction, message_id: b.message_id.as_deref(), removed: b.removed, occurred_at: b.occurred_at.as_deref() };
        enqueue_photoapp_signal(&db, Some(business), &b.photoapp_account_id, &b.from, &s).map_err(not_connected)
    } else if path == PHOTOAPP_COMMENTS_PATH {
        let b: CommentBody = serde_json::from_slice(body).map_err(invalid)?;
        let s = PhotoappSignal::Comment { text: &b.text, name: b.name.as_deref(), post_id: b.post_id.as_deref(), comment_id: b.comment_id.as_deref(), occurred_at: b.occurred_at.as_deref() };
        enqueue_photoapp_signal(&db, Some(business), &b.photoapp_account_id, &b.from, &s).map_err(not_connected)
    } else {
        let b: ReferralBody = serde_json::from_slice(body).map_err(invalid)?;
        let s = PhotoappSignal::Referral { source: &b.source, ad_id: b.ad_id.as_deref(), post_id: b.post_id.as_deref() };
        enqueue_photoapp_signal(&db, Some(business), &b.photoapp_account_id, &b.from, &s).map_err(not_connected)
    }
}

fn refusal(r: InboundRefusal, not_connected: &str) -> Failure {
    match r {
        InboundRefusal::Invalid(m) => Failure::validation("invalid_request", m),
        InboundRefusal::NotConnected(m) => Failure::not_found(not_connected, m),
        InboundRefusal::Storage(_) => crate::pipeline::unavailable(),
    }
}

/// 202 with the enqueued job, or the failure.
fn answer(result: Result<serde_json::Value, Failure>, request_id: &str) -> Answer {
    Answer::of_route(result, 202, "sandboxInbound", request_id)
}
