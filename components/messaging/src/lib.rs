//! The messaging area (spec operations 7-9): image media upload, message
//! send (queued) and the message delivery state ([`handle`]; see `media.rs`
//! and `messages.rs` for the rules), the console's agent testing (ours,
//! 57-59, `agent_test.rs`), photoapp private replies to comments (ours,
//! 75, `private_reply.rs`), the inbox (ours, 61-65 and 76-81,
//! `conversations/`), and its background work ([`jobs`], run
//! by the dispatcher): inbound chatapp and photoapp messages, the agent's
//! auto-reply, and delivery of outbound messages through the provider behind
//! the `messenger` interface with the delivery events. `conversation.rs` is
//! the one place a message finds its conversation and is stored or queued.
//!
//! This crate is a library: the component is `component/` (package
//! `switchboard-messaging`, world `messaging-area`), and the dispatcher
//! links [`jobs`].

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod agent_test;
pub mod conversation;
pub mod conversations;
pub mod jobs;
pub mod media;
mod messages;
mod private_reply;
mod stats;
pub mod status;

use switchboard_guest::{fail, HResult, Request, Success};

/// One request of this area (the component's `handler` export).
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.as_str() {
        "uploadMedia" => media::upload(&req),
        "sendMessage" => messages::send(&req),
        "getMessage" => messages::get(&req),
        "getMessageStats" => stats::get(&req),
        "sendPhotoappPrivateReply" => private_reply::send(&req),
        "getAgentTest" => agent_test::get(&req),
        "sendAgentTestMessage" => agent_test::say(&req),
        "resetAgentTest" => agent_test::reset(&req),
        "listConversations" => conversations::list(&req),
        "getConversation" => conversations::get(&req),
        "getConversationThread" => conversations::thread(&req),
        "markConversationRead" => conversations::mark_read(&req),
        "updateConversation" => conversations::handoff::update(&req),
        "listTeamMembers" => conversations::team::list(&req),
        "createConversationNote" => conversations::notes::create(&req),
        "listSavedReplies" => conversations::saved_replies::list(&req),
        "createSavedReply" => conversations::saved_replies::create(&req),
        "updateSavedReply" => conversations::saved_replies::update(&req),
        "deleteSavedReply" => conversations::saved_replies::delete(&req),
        other => Err(fail::not_implemented(other)),
    }
}
