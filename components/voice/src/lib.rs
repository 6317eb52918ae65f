//! The voice area (spec operations 37-43). Built so far: the resolved call
//! context (40, `resolve.rs`), what a call to a contact or a number would
//! start from. Calls themselves (start, batch, list, report, transcript,
//! cancel), their job and the carrier come next (ARCHITECTURE.md, "Voice");
//! until then those operations answer `501 not_implemented`.
//!
//! Tenancy: every statement filters by `request.business-id`; another
//! business's agent or contact answers exactly like a missing one.

// On the native target (unit tests only) nothing calls the handlers.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

pub mod resolve;

use switchboard_guest::{fail, Failure, Guest, Request, Success};

struct Voice;

impl Guest for Voice {
    fn handle(req: Request) -> Result<Success, Failure> {
        match req.operation.as_str() {
            "resolveCallContext" => resolve::run(&req),
            other => Err(fail::not_implemented(other)),
        }
    }
}

// Native builds (unit tests) skip the export: its symbol names are only
// meaningful to the component linker.
#[cfg(target_arch = "wasm32")]
switchboard_guest::export!(Voice);
