//! The edge's configuration, read once from its environment.

use crate::{forward, limits};

/// The edge's configuration, from its environment (`wasmtime serve --env`,
/// spin.toml's `environment`).
pub struct Settings {
    /// `SWITCHBOARD_WRITE_NODE`, when set.
    pub write_node: Option<Result<forward::Node, String>>,
    /// Authenticated reads go to the write node too (the default with one;
    /// `SWITCHBOARD_EDGE_READS=primary` runs them here, at the primary).
    pub reads_at_node: bool,
    /// `SWITCHBOARD_EDGE_DEADLINE_MS` (9,000 by default: set it a little
    /// below the runtime's own limit): no wait on the primary or the write
    /// node goes past it, and the answer is then ours (503/504).
    pub deadline_ns: u64,
    /// The rate limits of requests run here (None: off).
    pub rates: Option<limits::Rates>,
}

pub fn settings() -> &'static Settings {
    static SETTINGS: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(|| {
        let write_node = forward::Node::from_env();
        let reads = std::env::var("SWITCHBOARD_EDGE_READS").unwrap_or_default();
        let reads_at_node = write_node.is_some() && reads.trim() != "primary";
        let deadline_ms: u64 = std::env::var("SWITCHBOARD_EDGE_DEADLINE_MS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(9_000);
        Settings { write_node, reads_at_node, deadline_ns: deadline_ms.saturating_mul(1_000_000), rates: limits::Rates::from_env() }
    })
}
