//! Sandbox-only HTTP routes, served only with `serve --sandbox-routes`:
//! `POST /sandbox/v1/chatapp/inbound` injects an inbound chatapp message the
//! way the provider's webhook would (a durable `messaging.inbound` job). It
//! takes an API key with `chatapp:write` of the business that owns the number.

use crate::admin::{enqueue_inbound, InboundRefusal};
use crate::pipeline::{Answer, App};
use serde::Deserialize;
use switchboard_gateway::errors::success_envelope;
use switchboard_gateway::{auth, Failure, KeyDirectory};

pub const INBOUND_PATH: &str = "/sandbox/v1/chatapp/inbound";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InboundBody {
    phone_number_id: String,
    from: String,
    text: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    provider_message_id: Option<String>,
}

pub fn inbound(app: &App, method: &str, authorization: Option<&str>, body: &[u8], request_id: &str) -> Answer {
    let fail = |f: Failure| Answer::failure(&f, request_id);
    if method != "POST" {
        return fail(Failure::new(405, "validation", "method_not_allowed", "use POST").with_header("Allow", "POST".into()));
    }
    let Some(token) = auth::bearer_token(authorization).filter(|t| auth::looks_like_key(t)) else {
        return fail(Failure::authentication("send an API key as `Authorization: Bearer <key>`"));
    };
    let key = match app.db.find_by_hash(&auth::hash_key(token)) {
        Ok(Some(k)) if !k.revoked => k,
        Ok(_) => return fail(Failure::authentication("the API key is not valid")),
        Err(f) => return fail(f),
    };
    if !key.scopes.iter().any(|s| s == "chatapp:write") {
        return fail(Failure::authorization("missing_scope", "this API key lacks the scope `chatapp:write`"));
    }
    let body: InboundBody = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return fail(Failure::validation("invalid_request", format!("invalid body: {e}"))),
    };
    match enqueue_inbound(
        &app.db,
        Some(&key.business_id),
        &body.phone_number_id,
        &body.from,
        &body.text,
        body.name.as_deref(),
        body.provider_message_id.as_deref(),
    ) {
        Ok(data) => Answer {
            status: 202,
            content_type: "application/json",
            body: success_envelope(&data.to_string(), request_id),
            headers: Vec::new(),
            operation: "sandboxInbound",
        },
        Err(InboundRefusal::Invalid(m)) => fail(Failure::validation("invalid_request", m)),
        Err(InboundRefusal::NotConnected(m)) => fail(Failure::not_found("phone_number_not_connected", m)),
        Err(InboundRefusal::Storage(_)) => fail(Failure::new(503, "capacity", "storage_unavailable", "storage is busy; retry shortly")),
    }
}
