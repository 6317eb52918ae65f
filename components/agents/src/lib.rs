//! The agents resource area (spec operations 10-16 and 35-36): agents per
//! channel, the channel list with readiness, the photoapp connection and
//! channel assignments.
//!
//! Tenancy: every statement filters by `request.business-id`, which the host
//! has already matched against the caller's key; an id of another business is
//! indistinguishable from a missing one. The host has validated the body
//! against the operation's schema and runs every mutation in one transaction;
//! the rules the schema cannot express (ids that must exist, field keys of a
//! source, declared placeholders, channel-specific settings) are checked
//! here, all before the first write.
//!
//! Provider connections (a chatapp phone number, a photoapp account) are
//! written by `switchboard admin channel connect`; their token reference is
//! never selected by this component.

// On the native target (unit tests only) nothing calls the handlers.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod rules;

mod agents;
mod body;
mod channels;

use switchboard_guest::operations::agents::Operation;
use switchboard_guest::{Failure, Request, Success};

/// The area's requests (the component in component/ exports this; the
/// edge build links it).
pub fn handle(req: Request) -> Result<Success, Failure> {
    match req.operation.parse::<Operation>()? {
        Operation::ListChannels => channels::list(&req),
        Operation::GetPhotoappConnection => channels::get_photoapp(&req),
        Operation::DisconnectPhotoapp => channels::disconnect_photoapp(&req),
        Operation::ListAgents => agents::list(&req),
        Operation::CreateAgent => agents::create(&req),
        Operation::UpdateAgent => agents::update(&req),
        Operation::ArchiveAgent => agents::archive(&req),
        Operation::GetChannelAssignment => channels::get_assignment(&req),
        Operation::UpdateChannelAssignment => channels::update_assignment(&req),
    }
}
