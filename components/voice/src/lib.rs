//! The voice area (spec operations 37-43) as a library: its requests
//! (`calls.rs`: start, batch, list, report, transcript, cancel;
//! `resolve.rs`: the resolved call context) and its job (`jobs/`: one
//! `voice.call` per call, through the `carrier` and `ai` imports). The
//! component is `component/`; the dispatcher links the job.
//!
//! * `billing.rs`: reservations, charges and releases of microcredits.
//! * `settings.rs`: the business's settings of ours (operations 92-93,
//!   its default phone country).
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
pub mod settings;
pub mod stats;

use switchboard_guest::operations::voice::Operation;
use switchboard_guest::{HResult, Request, Success};

/// Every request of the area, by operation id.
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.parse::<Operation>()? {
        Operation::ListCalls => calls::list(&req),
        Operation::StartCall => calls::start(&req),
        Operation::StartCallBatch => calls::batch(&req),
        Operation::ResolveCallContext => resolve::run(&req),
        Operation::GetCall => calls::get(&req),
        Operation::DownloadTranscript => calls::transcript(&req),
        Operation::CancelCall => calls::cancel(&req),
        Operation::GetCredits => billing::credits(&req),
        Operation::GetCallStats => stats::calls(&req),
        Operation::GetCreditStats => stats::credits(&req),
        Operation::GetBusinessSettings => settings::get(&req),
        Operation::UpdateBusinessSettings => settings::update(&req),
    }
}
