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

use switchboard_guest::operations::messaging::Operation;
use switchboard_guest::{HResult, Request, Success};

/// One request of this area (the component's `handler` export).
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.parse::<Operation>()? {
        Operation::UploadMedia => media::upload(&req),
        Operation::SendMessage => messages::send(&req),
        Operation::GetMessage => messages::get(&req),
        Operation::GetMessageStats => stats::get(&req),
        Operation::SendPhotoappPrivateReply => private_reply::send(&req),
        Operation::GetAgentTest => agent_test::get(&req),
        Operation::SendAgentTestMessage => agent_test::say(&req),
        Operation::ResetAgentTest => agent_test::reset(&req),
        Operation::ListConversations => conversations::list(&req),
        Operation::GetConversation => conversations::get(&req),
        Operation::GetConversationThread => conversations::thread(&req),
        Operation::MarkConversationRead => conversations::mark_read(&req),
        Operation::UpdateConversation => conversations::handoff::update(&req),
        Operation::ListTeamMembers => conversations::team::list(&req),
        Operation::CreateConversationNote => conversations::notes::create(&req),
        Operation::ListSavedReplies => conversations::saved_replies::list(&req),
        Operation::CreateSavedReply => conversations::saved_replies::create(&req),
        Operation::UpdateSavedReply => conversations::saved_replies::update(&req),
        Operation::DeleteSavedReply => conversations::saved_replies::delete(&req),
    }
}
