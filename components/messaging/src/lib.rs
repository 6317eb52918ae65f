//! The messaging resource area (spec operations 7-9): image media upload,
//! message send (queued; the dispatcher's `messaging.deliver` job hands it to the provider behind the `messenger`
//! interface and emits the delivery events) and the
//! message delivery state. See `media.rs` and `messages.rs` for the rules;
//! `contact.rs` is the one place a message finds its contact and
//! conversation (the dispatcher's inbound job includes it by path).

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    // Every import but `messenger` is the guest crate's, so its helpers (db,
    // req, fail, ...) work here; `messenger` and the handler export are
    // generated for this world.
    wit_bindgen::generate!({
        world: "messaging-area",
        path: "../../wit",
        with: {
            "switchboard:platform/types@0.1.0": switchboard_guest::bindings::switchboard::platform::types,
            "switchboard:platform/store@0.1.0": switchboard_guest::bindings::switchboard::platform::store,
            "switchboard:platform/jobs@0.1.0": switchboard_guest::bindings::switchboard::platform::jobs,
            "switchboard:platform/clock@0.1.0": switchboard_guest::bindings::switchboard::platform::clock,
            "switchboard:platform/ids@0.1.0": switchboard_guest::bindings::switchboard::platform::ids,
            "switchboard:platform/log@0.1.0": switchboard_guest::bindings::switchboard::platform::log,
        },
    });
}

pub mod contact;
pub mod media;
mod messages;

use bindings::exports::switchboard::platform::handler::Guest;
use switchboard_guest::{fail, Failure, Request, Success};

struct Messaging;

impl Guest for Messaging {
    fn handle(req: Request) -> Result<Success, Failure> {
        match req.operation.as_str() {
            "uploadMedia" => media::upload(&req),
            "sendMessage" => messages::send(&req),
            "getMessage" => messages::get(&req),
            other => Err(fail::not_implemented(other)),
        }
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(Messaging with_types_in bindings);
