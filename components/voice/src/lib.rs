//! The voice area (spec operations 37-43) as a library: its requests
//! (`calls.rs`: start, batch, list, report, transcript, cancel;
//! `resolve.rs`: the resolved call context) and its job (`jobs/`: one
//! `voice.call` per call, through the `carrier` and `ai` imports). The
//! component is `component/`; the dispatcher links the job.
//!
//! * `billing.rs`: reservations, charges and releases of microcredits.
//! * `model.rs`: how a call and its transcript read.
//! * `conversation.rs`: the spec's rules of a call in conversation as pure
//!   functions (what the agent says is the agent runtime's,
//!   `switchboard-agent-runtime`).
//!
//! Tenancy: every statement filters by the business id; another business's
//! agent, contact or call answers exactly like a missing one.

// On the native target (unit tests only) nothing calls the handlers.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod billing;
pub mod calls;
pub mod conversation;
pub mod jobs;
pub mod model;
pub mod resolve;
pub mod stats;

use switchboard_guest::{fail, HResult, Request, Success};

/// Every request of the area, by operation id.
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.as_str() {
        "listCalls" => calls::list(&req),
        "startCall" => calls::start(&req),
        "startCallBatch" => calls::batch(&req),
        "resolveCallContext" => resolve::run(&req),
        "getCall" => calls::get(&req),
        "downloadTranscript" => calls::transcript(&req),
        "cancelCall" => calls::cancel(&req),
        "getCredits" => billing::credits(&req),
        "getCallStats" => stats::calls(&req),
        "getCreditStats" => stats::credits(&req),
        other => Err(fail::not_implemented(other)),
    }
}
