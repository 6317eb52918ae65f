//! The edge's configuration, read once from its environment.

use crate::limits;
use wasip2::http::types::Scheme;

/// The edge's configuration, from its environment (`wasmtime serve --env`,
/// spin.toml's `environment`).
pub struct Settings {
    /// `SWITCHBOARD_WRITE_NODE`, when set.
    pub write_node: Option<Result<Node, String>>,
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
        let write_node = Node::from_env();
        let reads = std::env::var("SWITCHBOARD_EDGE_READS").unwrap_or_default();
        let reads_at_node = write_node.is_some() && reads.trim() != "primary";
        let deadline_ms: u64 = std::env::var("SWITCHBOARD_EDGE_DEADLINE_MS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(9_000);
        Settings { write_node, reads_at_node, deadline_ns: deadline_ms.saturating_mul(1_000_000), rates: limits::Rates::from_env() }
    })
}

/// Where the write node is.
pub struct Node {
    pub scheme: Scheme,
    pub authority: String,
    /// The URL's path, without a trailing slash ("" for the root).
    pub prefix: String,
}

impl Node {
    /// From `SWITCHBOARD_WRITE_NODE`; `None` when unset or empty.
    pub fn from_env() -> Option<Result<Node, String>> {
        let url = std::env::var("SWITCHBOARD_WRITE_NODE").ok().filter(|u| !u.trim().is_empty())?;
        Some(Node::parse(url.trim()))
    }

    fn parse(url: &str) -> Result<Node, String> {
        let u = switchboard_gateway::base_url::BaseUrl::parse("SWITCHBOARD_WRITE_NODE", url)?;
        Ok(Node { scheme: if u.https { Scheme::Https } else { Scheme::Http }, authority: u.authority, prefix: u.prefix })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_node_url_needs_a_scheme_and_a_host() {
        let n = Node::parse("http://10.0.0.5:8081/").unwrap();
        assert_eq!((n.authority.as_str(), n.prefix.as_str()), ("10.0.0.5:8081", ""));
        assert_eq!(Node::parse("https://writes.example/api/").unwrap().prefix, "/api");
        for bad in ["10.0.0.5:8081", "ftp://x", "http://", "http://user:pw@x"] {
            assert!(Node::parse(bad).is_err(), "{bad}");
        }
    }
}
