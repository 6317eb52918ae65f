//! The data-sources area (spec operations 17-23): structured and
//! unstructured sources, the built-in Contacts source, asset upload into a
//! new immutable ingestion version, inspect and resolve ([`handle`]), and
//! the ingestion that turns an upload into rows ([`jobs`], kind
//! `data-sources.ingest`, run by the dispatcher). The upload stores the
//! bytes and enqueues the job in the request's transaction. Activation
//! (switching `data_sources.active_version_id`) is `activate.rs`, used by
//! resolve and by the job's last step.
//!
//! This crate is a library: the component is `component/` (package
//! `switchboard-data-sources`), and the dispatcher links [`jobs`].
//!
//! Tenancy: every statement filters by `request.business-id`.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod activate;
mod ingestions;
pub mod jobs;
mod sources;
mod upload;

use switchboard_guest::operations::data_sources::{Operation, Prepared};
use switchboard_guest::{HResult, Request, Success};

/// One request of this area (the component's `handler` export).
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.parse::<Operation>()? {
        Operation::ListDataSources => sources::list(&req),
        Operation::CreateDataSource => sources::create(&req),
        Operation::UpdateDataSource => sources::update(&req),
        Operation::ArchiveDataSource => sources::archive(&req),
        Operation::UploadDataSourceAsset => upload::run(&req),
        Operation::InspectIngestion => ingestions::inspect(&req),
        Operation::ResolveIngestion => ingestions::resolve(&req),
    }
}

/// The area's prepare steps, run before the write transaction (see
/// `handler.prepare` in the WIT): a JSON upload's base64, decoded.
pub fn prepare(req: Request) -> HResult<Vec<u8>> {
    match switchboard_guest::prepared::<Prepared>(&req)? {
        Prepared::UploadDataSourceAsset => upload::prepare(&req),
    }
}
