//! The webhooks area (spec operations 2-6, and our 55-56: the delivery log
//! and redelivery, `deliveries.rs`): webhook subscriptions of
//! external automation for a connected chatapp phone number or photoapp
//! account ([`handle`]), and their delivery ([`jobs`], kind
//! `webhooks.deliver`, run by the dispatcher: signing, retries, the
//! `webhook_attempts` record). The event outbox itself (the kind's payload,
//! the fan-out every area calls, the contract version) is in the shared
//! library (`switchboard_guest::events`), so no area imports this one.
//!
//! This crate is a library: the component is `component/` (package
//! `switchboard-webhooks`), and the dispatcher links [`jobs`].
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
//! `webhook_subscriptions.signing_secret` for the delivery job to sign
//! with; no response path of this component ever selects that column (see
//! [`subscriptions::SUB_COLS`]). Only the current secret is stored, so a
//! rotated-out secret stops signing at once; revoking clears it.

// On the native target (unit tests only) nothing calls the handlers.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod jobs;
pub mod rules;

mod deliveries;
mod subscriptions;

use switchboard_guest::operations::webhooks::Operation;
use switchboard_guest::{HResult, Request, Success};

/// One request of this area (the component's `handler` export).
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.parse::<Operation>()? {
        Operation::ListWebhookSubscriptions => subscriptions::list(&req),
        Operation::CreateWebhookSubscription => subscriptions::create(&req),
        Operation::UpdateWebhookSubscription => subscriptions::update(&req),
        Operation::RevokeWebhookSubscription => subscriptions::revoke(&req),
        Operation::RotateWebhookSigningSecret => subscriptions::rotate(&req),
        Operation::ListWebhookDeliveries => deliveries::list(&req),
        Operation::RedeliverWebhookEvent => deliveries::redeliver(&req),
    }
}
