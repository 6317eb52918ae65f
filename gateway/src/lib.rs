//! The portable request path of Switchboard. This crate knows nothing of
//! hyper or wasmtime: it routes, authenticates (through the `KeyDirectory`
//! trait), checks tenancy and scopes, checks `Idempotency-Key` syntax,
//! validates against the OpenAPI document and builds envelopes; it runs
//! a mutation's idempotency flow and renders a component's outcome
//! (`exchange`) with the statements of `storage`. The host (or the edge
//! build) supplies I/O.

mod admit;
pub mod auth;
pub mod base_url;
pub mod canonical;
mod component_request;
pub mod contract;
pub mod errors;
pub mod exchange;
pub mod idempotency;
pub mod links;
pub mod openapi;
pub mod operations;
pub mod rate_limit;
pub mod storage;
pub mod validate;
pub mod write_node;

pub use admit::{api_key_refused, console_session, Admitted, Gateway, Incoming, KeyDirectory, KeyRecord, SessionRecord};
pub use errors::Failure;
pub use operations::{Operation, OPERATIONS};
