//! The webhooks resource area (spec operations 2-6): webhook subscriptions of
//! external automation for a connected chatapp phone number or photoapp
//! account. Delivery (the outbox, signing, retries) is not part of this
//! component; it will read `webhook_subscriptions` (migration 0007).
//!
//! Tenancy: every statement filters by `request.business-id`, which the host
//! has already matched against the caller's key; a subscription of another
//! business is indistinguishable from a missing one (`404
//! subscription_not_found`). The host has validated the body against the
//! operation's schema and runs every mutation in one transaction; the rules
//! the schema cannot express (the phone number or account must be connected
//! to this business, events of the subscription's own channel on update, the
//! callback URL policy, revoked subscriptions are final) are checked here,
//! all before the first write.
//!
//! Secrets: the signing secret (`whsec_` + 64 hex digits from the host's
//! CSPRNG) is returned only by create and rotate-secret. It is stored in
//! `webhook_subscriptions.signing_secret` for the future delivery job to sign
//! with; no response path of this component ever selects that column (see
//! [`subscriptions::SUB_COLS`]). Only the current secret is stored, so a
//! rotated-out secret stops signing at once; revoking clears it.

// On the native target (unit tests only) nothing calls the handlers.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod rules;

mod subscriptions;

use switchboard_guest::{fail, Failure, Guest, Request, Success};

struct Webhooks;

impl Guest for Webhooks {
    fn handle(req: Request) -> Result<Success, Failure> {
        match req.operation.as_str() {
            "listWebhookSubscriptions" => subscriptions::list(&req),
            "createWebhookSubscription" => subscriptions::create(&req),
            "updateWebhookSubscription" => subscriptions::update(&req),
            "revokeWebhookSubscription" => subscriptions::revoke(&req),
            "rotateWebhookSigningSecret" => subscriptions::rotate(&req),
            other => Err(fail::not_implemented(other)),
        }
    }
}

// Native builds (unit tests) skip the export: its symbol names are only
// meaningful to the component linker.
#[cfg(target_arch = "wasm32")]
switchboard_guest::export!(Webhooks);
