//! Runtime: wasmtime and everything a component imports. The engine with
//! its pooling allocator, limits and precompiled-artifact cache, the
//! embedded components (built by build.rs), the host side of the platform
//! imports, the provider adapters (messenger, carrier, AI; one file per
//! interface) and plugins, outbound HTTP with its public-target policy, and
//! the vector table of grounded agents.
//!
//! Never: HTTP serving, admission, envelopes, the job runner's claims.
//! Callers hand it a call or a job step and a connection; it answers with
//! the component's outcome.
//!
//! Entry point: `engine::Components` (`call`, `run_job`).

pub mod compiled;
pub mod engine;
pub mod knowledge;
pub mod outbound;
pub mod plugins;
pub mod recording_links;
pub mod runtime_settings;

// The lower crates under the names the modules here use.
use switchboard_ops::{clock, metrics};
use switchboard_storage::db;
