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

use switchboard_guest::{fail, Failure, Request, Success};

/// The area's requests (the component in component/ exports this; the
/// edge build links it).
pub fn handle(req: Request) -> Result<Success, Failure> {
    match req.operation.as_str() {
        "listContacts" => contacts::list(&req),
        "createContact" => contacts::create(&req),
        "deleteContacts" => contacts::delete(&req),
        "updateContacts" => bulk::update(&req),
        "importContacts" => import::run(&req),
        "listCategories" => categories::list(&req),
        "createCategory" => categories::create(&req),
        "deleteCategory" => categories::delete(&req),
        "getContact" => contacts::get(&req),
        "updateContact" => contacts::update(&req),
        "getContactTimeline" => timeline::get(&req),
        "linkParticipantContact" => participants::link(&req),
        other => Err(fail::not_implemented(other)),
    }
}

/// The area's prepare steps, run before the write transaction (see
/// `handler.prepare` in the WIT): the CSV of an import.
pub fn prepare(req: Request) -> Result<Vec<u8>, Failure> {
    match req.operation.as_str() {
        "importContacts" => import::prepare(&req),
        _ => switchboard_guest::no_prepare_step(req),
    }
}
