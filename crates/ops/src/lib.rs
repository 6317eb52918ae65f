//! Operations: what every other host crate reports to and reads the time
//! from. The wall clock (`clock`), the structured log (`logging`), the
//! Prometheus metrics (`metrics`) and the per-key and per-business rate
//! limits (`limits`).
//!
//! Never: storage, HTTP serving, wasmtime, domain rules. This is the bottom
//! of the host's crates; it depends on nothing of ours but the gateway's
//! failure type.
//!
//! Entry points: `logging::init` and `metrics::install`, once at start.

pub mod clock;
pub mod limits;
pub mod logging;
pub mod metrics;
