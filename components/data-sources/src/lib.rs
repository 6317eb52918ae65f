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

use switchboard_guest::{fail, HResult, Request, Success};

/// One request of this area (the component's `handler` export).
pub fn handle(req: Request) -> HResult<Success> {
    match req.operation.as_str() {
        "listDataSources" => sources::list(&req),
        "createDataSource" => sources::create(&req),
        "updateDataSource" => sources::update(&req),
        "archiveDataSource" => sources::archive(&req),
        "uploadDataSourceAsset" => upload::run(&req),
        "inspectIngestion" => ingestions::inspect(&req),
        "resolveIngestion" => ingestions::resolve(&req),
        other => Err(fail::not_implemented(other)),
    }
}

/// The area's prepare steps, run before the write transaction (see
/// `handler.prepare` in the WIT): a JSON upload's base64, decoded.
pub fn prepare(req: Request) -> HResult<Vec<u8>> {
    match req.operation.as_str() {
        "uploadDataSourceAsset" => upload::prepare(&req),
        _ => switchboard_guest::no_prepare_step(req),
    }
}
