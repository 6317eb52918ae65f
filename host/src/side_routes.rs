//! The routes beside the API's operations, in one `matchit` table (the
//! operations have the gateway's): the OpenAPI document, the probes and
//! metrics, signed recording links, provider webhooks, the sandbox routes
//! and the bench baseline. The console routes itself (`console::serves`):
//! its pages and assets are its own list.

use std::sync::LazyLock;

/// What a side route is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    OpenApi,
    Healthz,
    Readyz,
    Metrics,
    /// A signed recording link (`recordings.rs` checks the rest of it).
    Recording,
    /// A provider's webhook (`provider_events.rs` reads its business).
    ProviderEvents,
    /// Only with `--sandbox-routes`.
    Sandbox,
    /// Only with `--bench-baseline`: the native mirror of an operation.
    BenchNative,
}

static TABLE: LazyLock<matchit::Router<Side>> = LazyLock::new(|| {
    let mut t = matchit::Router::new();
    let routes = [
        ("/api/v1/openapi.json", Side::OpenApi),
        (crate::probes::HEALTHZ_PATH, Side::Healthz),
        (crate::probes::READYZ_PATH, Side::Readyz),
        (crate::probes::METRICS_PATH, Side::Metrics),
        ("/recordings/{*link}", Side::Recording),
        ("/providers/v1/{*events}", Side::ProviderEvents),
        (crate::sandbox::INBOUND_PATH, Side::Sandbox),
        (crate::sandbox::PHOTOAPP_INBOUND_PATH, Side::Sandbox),
        (crate::sandbox::PHOTOAPP_REACTIONS_PATH, Side::Sandbox),
        (crate::sandbox::PHOTOAPP_REFERRALS_PATH, Side::Sandbox),
        (crate::sandbox::PHOTOAPP_COMMENTS_PATH, Side::Sandbox),
        ("/_bench/native/{*operation}", Side::BenchNative),
    ];
    for (path, side) in routes {
        t.insert(path, side).unwrap_or_else(|e| panic!("side route {path}: {e}"));
    }
    t
});

/// The side route `path` names, if any (whatever the node serves: the
/// caller checks the settings that switch sandbox and bench routes on).
pub(crate) fn side_route(path: &str) -> Option<Side> {
    TABLE.at(path).ok().map(|m| *m.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_routes_are_found_by_path() {
        assert_eq!(side_route("/api/v1/openapi.json"), Some(Side::OpenApi));
        assert_eq!(side_route("/healthz"), Some(Side::Healthz));
        assert_eq!(side_route("/recordings/c/c.wav"), Some(Side::Recording));
        assert_eq!(side_route("/recordings/"), None, "a catch-all needs something to catch");
        assert_eq!(side_route("/providers/v1/b/messenger/events"), Some(Side::ProviderEvents));
        assert_eq!(side_route("/sandbox/v1/chatapp/inbound"), Some(Side::Sandbox));
        assert_eq!(side_route("/_bench/native/contacts/x"), Some(Side::BenchNative));
        assert_eq!(side_route("/api/v1/contacts"), None);
        assert_eq!(side_route("/console"), None);
    }
}
