//! The campaigns area (spec operations 44-54) as a library: its requests
//! and its job. The component is `component/`; the dispatcher links the job.
//!
//! * `campaigns.rs`: create (45, with `audience.rs`: who is admitted),
//!   list (44), read (46), start/pause/cancel (47).
//! * `iterations.rs`: the iteration list (48) and follow-ups (49).
//! * `members.rs`: memberships (50), attributed activities (51) and an
//!   iteration's recipients with their calls, openings and replies (ours 90).
//! * `model.rs`: how campaigns, iterations and members read and move.
//! * `summaries.rs`: AI summary runs (52, 53: estimate, confirm), priced
//!   by `material.rs` (what is assessed of a contact); `export.rs`: the
//!   CSV of conclusions (54).
//! * `jobs/`: `campaigns.dispatch`, one per running iteration: it claims
//!   members (a fenced claim each) while the business has free lines and
//!   starts their calls through the voice area, settles ended calls into
//!   outcomes and retries, and completes the iteration;
//!   `campaigns.summarize`, one per confirmed summary run.
//!
//! Tenancy: every statement filters by the business id; another business's
//! campaign, agent or contact answers exactly like a missing one.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod audience;
pub mod campaigns;
pub mod export;
pub mod iterations;
pub mod jobs;
pub mod material;
pub mod members;
pub mod model;
pub mod summaries;
pub mod window;

use switchboard_guest::operations::campaigns::Operation;
use switchboard_guest::{HResult, Request, Success};

/// Every request of the area, by operation id.
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.parse::<Operation>()? {
        Operation::ListCampaigns => campaigns::list(&req),
        Operation::CreateCampaign => campaigns::create(&req),
        Operation::PreviewCampaignAdmission => campaigns::preview(&req),
        Operation::GetCampaign => campaigns::get(&req),
        Operation::UpdateCampaign => campaigns::update(&req),
        Operation::ListIterations => iterations::list(&req),
        Operation::CreateIteration => iterations::create(&req),
        Operation::ListMemberships => members::memberships(&req),
        Operation::ListActivities => members::activities(&req),
        Operation::ListRecipients => members::recipients(&req),
        Operation::ListSummaryRuns => summaries::list(&req),
        Operation::CreateSummaryRun => summaries::create(&req),
        Operation::ExportCampaign => export::csv(&req),
    }
}
