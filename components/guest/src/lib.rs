//! Shared guest-side code for Switchboard resource-area components.
//!
//! * [`bindings`]: the `wit-bindgen` bindings of world `area-library`
//!   (`../../wit/worlds.wit`): every import an area may use (store, jobs,
//!   clock, ids, log, http-out, ai, messenger, carrier) and the job-step types, so the
//!   requests and the job code of every area share one set of types. A
//!   component implements [`Guest`] and calls
//!   `switchboard_guest::export!(MyComponent);`; it imports only what it calls.
//! * Small helpers every component reuses: failures ([`fail`]), SQL access and
//!   row reading ([`db`]), request access ([`req`]), opaque cursors
//!   ([`cursor`]), the upload chunk size ([`chunking`]), downloads in
//!   streamed pieces ([`download`]); from the binding-free
//!   `switchboard-formats` crate, the one E.164 check and normalisation
//!   ([`e164`]), the one UUID check ([`is_uuid`]) and times ([`time`]:
//!   RFC 3339 with milliseconds and calendar dates on chrono).
//! * Job kinds and job steps: every area's kinds, payloads and options are
//!   declared in `switchboard-job-kinds` ([`job_kinds`], also linked by the
//!   host); [`job`] enqueues them ([`job::enqueue`]), reads a running job
//!   back typed ([`job::AreaJob`]) and has the step helpers (`retry` with
//!   backoff).
//! * The cross-area rules, each written once: resolving or creating a
//!   contact by mobile and linking categories ([`contact`]), appending to a
//!   contact's timeline ([`timeline`]), the grounding index agent turns
//!   read through the agent runtime ([`knowledge`]), fanning an event out to webhook
//!   subscriptions and the contract version ([`events`]).
//!
//! The pure modules (`cursor`, `base64url`) have no host calls and are
//! unit-tested on the native target (`cargo test -p switchboard-guest`).

pub mod bindings {
    wit_bindgen::generate!({
        world: "area-library",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "switchboard_guest::bindings",
        // The provider package (clock, ids, log, messenger, carrier) too.
        generate_all,
    });
}

pub mod base64url;
pub mod campaign_summary;
pub use switchboard_chunking as chunking;
pub use switchboard_formats::{e164, time};
pub use switchboard_job_kinds as job_kinds;
/// Every operation's id, and each area's `Operation` and `Prepared`
/// enums, which its `handle` and `prepare` match exhaustively.
pub use switchboard_operation_ids as operations;
pub mod contact;
pub mod cursor;
pub mod db;
pub mod download;
pub mod events;
pub mod fail;
pub mod job;
pub mod knowledge;
pub mod page;
pub mod req;
pub mod stats;
pub mod timeline;

pub use bindings::export;
pub use bindings::exports::switchboard::platform::handler::Guest;
pub use bindings::switchboard::platform::store::StoreError;
pub use bindings::switchboard::platform::types::{Failure, Request, Success};
pub use bindings::switchboard::platform::{http_out, job_types, jobs, recording_links, store};
pub use bindings::switchboard::provider::{ai, carrier, clock, ids, log, messenger};
/// The one SQL value of every area's statements, bound and read
/// ([`db`] converts it to the `store` import's value at the WIT edge).
pub use switchboard_sql::{params, row_struct, Columns, FromRow, FromValue, Mismatch, Value};

/// The component of an area whose code is a library crate (requests as
/// `pub fn handle(req) -> HResult<Success>`, which parses
/// `req.operation` as its area's [`operations`] enum and matches it, jobs
/// as `pub mod jobs` linked by the dispatcher):
/// `switchboard_guest::area_component!(my_area::handle);`
/// is the whole wrapper crate. The export lives only in the wrapper, so the
/// dispatcher can link the area library without exporting its handler.
///
/// An area with operations that parse a large body before the write (its
/// `Prepared` in [`operations`]) names its prepare step too:
/// `area_component!(my_area::handle, my_area::prepare);` with `pub fn
/// prepare(req) -> HResult<Vec<u8>>`, which matches [`prepared`]'s enum
/// (see `handler.prepare` in the WIT); without one, `prepare` answers
/// [`no_prepare_step`].
#[macro_export]
macro_rules! area_component {
    ($handle:path) => {
        $crate::area_component!($handle, $crate::no_prepare_step);
    };
    ($handle:path, $prepare:path) => {
        struct Component;

        impl $crate::Guest for Component {
            fn handle(req: $crate::Request) -> ::core::result::Result<$crate::Success, $crate::Failure> {
                $handle(req)
            }
            fn prepare(req: $crate::Request) -> ::core::result::Result<::std::vec::Vec<u8>, $crate::Failure> {
                $prepare(req)
            }
        }

        // Native builds (unit tests) skip the export: its symbol names are
        // only meaningful to the component linker.
        #[cfg(target_arch = "wasm32")]
        $crate::export!(Component);
    };
}

/// The prepare step of an area (or an operation) that has none: the host
/// asked for one the operation table promised and the area does not have.
pub fn no_prepare_step(req: Request) -> HResult<Vec<u8>> {
    Err(no_prepare(&req))
}

fn no_prepare(req: &Request) -> Failure {
    fail::internal("no_prepare_step", format!("{} has no prepare step in this component", req.operation))
}

/// The request's operation as the area's `Prepared` (its `prepare`
/// matches it); one without a prepare step is [`no_prepare_step`]'s
/// failure.
pub fn prepared<P: std::str::FromStr>(req: &Request) -> HResult<P> {
    req.operation.parse().map_err(|_| no_prepare(req))
}

/// An operation that is not the area's (`req.operation.parse::<Operation>()?`
/// in its `handle`): 501, as for an area this build does not have.
impl From<operations::UnknownOperation> for Failure {
    fn from(e: operations::UnknownOperation) -> Failure {
        fail::not_implemented(&e.0)
    }
}

/// The result type of a handler and of every helper that can fail a request.
pub type HResult<T> = Result<T, Failure>;

/// A success with `status` whose `data` is the JSON object `data`.
/// `data` must serialise to a JSON object (a `json!({...})` or a struct).
pub fn success(status: u16, data: &impl serde::Serialize) -> HResult<Success> {
    // Straight into a byte buffer: `to_string` (Display) goes through a
    // formatter adapter and is markedly slower for large answers.
    let data_json = serde_json::to_string(data).map_err(|_| crate::fail::internal("serialisation_failed", "the answer could not be serialised"))?;
    Ok(Success { status, data_json, body: None })
}

/// `200 OK` with `data`.
pub fn ok(data: &impl serde::Serialize) -> HResult<Success> {
    success(200, data)
}

/// `201 Created` with `data`.
pub fn created(data: &impl serde::Serialize) -> HResult<Success> {
    success(201, data)
}

/// A fresh uuid v7 from the host (time ordered).
pub fn new_id() -> String {
    ids::uuid_v7()
}

/// The current time as RFC 3339 UTC with milliseconds, from the host.
pub fn now() -> String {
    clock::now_rfc3339()
}

pub use switchboard_formats::is_uuid;
