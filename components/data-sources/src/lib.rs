//! The data-sources resource area (spec operations 17-23): structured and
//! unstructured sources, the built-in Contacts source, asset upload into a
//! new immutable ingestion version, inspect and resolve.
//!
//! Ingestion itself runs in the dispatcher (job kind `data-sources.ingest`,
//! `components/dispatcher/src/ingest*.rs`); the upload stores the bytes and
//! enqueues the job in the request's transaction. Activation (switching
//! `data_sources.active_version_id`) is `activate.rs`, compiled into both
//! this component and the dispatcher.
//!
//! Tenancy: every statement filters by `request.business-id`.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod activate;
mod chunking;
mod ingestions;
mod sources;
mod upload;

use switchboard_guest::{fail, Failure, Guest, Request, Success};

struct DataSources;

impl Guest for DataSources {
    fn handle(req: Request) -> Result<Success, Failure> {
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
}

#[cfg(target_arch = "wasm32")]
switchboard_guest::export!(DataSources);
