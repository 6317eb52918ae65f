//! The messaging resource area (spec operations 7-9): image media upload,
//! message send (queued; the dispatcher's `messaging.deliver` job hands it to the provider behind the `messenger`
//! interface and emits the delivery events) and the
//! message delivery state. See `media.rs` and `messages.rs` for the rules;
//! `contact.rs` is the one place a message finds its contact and
//! conversation (the dispatcher's inbound job includes it by path).

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod contact;
pub mod media;
mod messages;

use switchboard_guest::{fail, Failure, Guest, Request, Success};

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
switchboard_guest::export!(Messaging);
