//! The contacts resource area (spec operations 24-34): contacts, categories,
//! CSV import, the cross-channel timeline and participant links.
//!
//! Tenancy: every statement filters by `request.business-id`, which the host
//! has already matched against the caller's key. The host has validated the
//! body against the operation's schema; rules the schema cannot express
//! (custom field keys, trimmed names, E.164 after separator removal, category
//! ownership) are checked here.

// On the native target (unit tests only) nothing calls the handlers.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

/// The CSV reader lives in the shared `switchboard-tabular` crate.
pub use switchboard_tabular::csv;
pub mod fields;

mod bulk;
mod categories;
mod contacts;
mod import;
mod model;
mod order;
mod participants;
mod timeline;

use switchboard_guest::operations::contacts::{Operation, Prepared};
use switchboard_guest::{Failure, Request, Success};

/// The area's requests (the component in component/ exports this; the
/// edge build links it).
pub fn handle(req: Request) -> Result<Success, Failure> {
    match req.operation.parse::<Operation>()? {
        Operation::ListContacts => contacts::list(&req),
        Operation::CreateContact => contacts::create(&req),
        Operation::DeleteContacts => contacts::delete(&req),
        Operation::UpdateContacts => bulk::update(&req),
        Operation::ImportContacts => import::run(&req),
        Operation::ListCategories => categories::list(&req),
        Operation::CreateCategory => categories::create(&req),
        Operation::DeleteCategory => categories::delete(&req),
        Operation::GetContact => contacts::get(&req),
        Operation::UpdateContact => contacts::update(&req),
        Operation::GetContactTimeline => timeline::get(&req),
        Operation::LinkParticipantContact => participants::link(&req),
    }
}

/// The area's prepare steps, run before the write transaction (see
/// `handler.prepare` in the WIT): the CSV of an import.
pub fn prepare(req: Request) -> Result<Vec<u8>, Failure> {
    match switchboard_guest::prepared::<Prepared>(&req)? {
        Prepared::ImportContacts => import::prepare(&req),
    }
}
