//! Which adapter answers a call: [`Providers`], the process's embedded
//! adapters and the plugins that stand in for them per business, and
//! [`ProviderCall`], one component call's view of them. The interface files
//! implement their imports' `Host` traits on that view (wasmtime's
//! `HasData` idiom, as `wasmtime-wasi-http` does with its `WasiHttpView`),
//! so they never name the call's own state; `imports.rs` hands the view out
//! ([`crate::engine::imports::provider_call`]).

use super::adapter::{Adapter, Interface, Provider, Settings, Unavailable};
use crate::engine::providers::ai::endpoint::ServerAi;
use crate::plugins::choice::{self, Choice};
use crate::plugins::registry::Registry;
use crate::plugins::sealed::Keys;
use std::collections::HashMap;
use std::sync::Arc;
use wasmtime::component::HasData;

/// The embedded adapters linked into this process, one per interface, and
/// the plugins that may stand in for them per business.
pub struct Providers {
    pub(super) defaults: HashMap<&'static str, (Adapter, Settings)>,
    pub plugins: Registry,
    /// The server's own AI, asked when a business chose no `ai` plugin.
    pub server_ai: ServerAi,
    /// Opens a business's secret plugin settings.
    pub keys: Keys,
}

impl Providers {
    /// No default adapter, for tests of a call's state that reach no provider.
    #[cfg(test)]
    pub(crate) fn none(plugins: Registry) -> Providers {
        Providers { defaults: HashMap::new(), plugins, server_ai: ServerAi::default(), keys: Default::default() }
    }

    /// The adapter of `P` that answers for `business`, with its settings.
    pub fn adapter_for<P: Provider>(&self, conn: &crate::db::Connection, business: &str) -> Result<(Arc<P>, Settings), Unavailable> {
        match self.plugin_for::<P>(conn, business)? {
            Some(chosen) => Ok(chosen),
            None => self.embedded::<P>(),
        }
    }

    /// The embedded default of `P`, with the `serve` flags' settings.
    pub fn embedded<P: Provider>(&self) -> Result<(Arc<P>, Settings), Unavailable> {
        let (adapter, settings) = self.defaults.get(P::NAME).ok_or(Unavailable::NotConfigured)?;
        Ok((adapter.clone().downcast::<P>().map_err(|_| Unavailable::Mismatch)?, settings.clone()))
    }

    /// The business's plugin for `P`, if it chose one.
    pub fn plugin_for<P: Provider>(&self, conn: &crate::db::Connection, business: &str) -> Result<Option<(Arc<P>, Settings)>, Unavailable> {
        let read = choice::read(conn, business, Interface::of::<P>()).map_err(|e| {
            tracing::error!(interface = P::NAME, businessId = business, error = %e, "provider choice unreadable");
            Unavailable::Store
        })?;
        let Some(choice) = read else {
            return Ok(None);
        };
        self.chosen::<P>(&choice, business).map(Some)
    }

    /// The loaded plugin of `choice` as `P`, with its settings opened.
    pub fn chosen<P: Provider>(&self, choice: &Choice, business: &str) -> Result<(Arc<P>, Settings), Unavailable> {
        let loaded = self.plugins.get(&choice.plugin).ok_or_else(|| Unavailable::PluginNotLoaded(choice.plugin.clone()))?;
        let adapter = loaded.provider.clone().downcast::<P>().map_err(|_| Unavailable::Mismatch)?;
        // The reason names the setting and the key's variable, never a value.
        let settings = choice.open(&self.keys).map_err(|e| {
            tracing::error!(interface = P::NAME, businessId = business, error = %format!("{e:#}"), "plugin settings of business do not open");
            Unavailable::SettingsSealed
        })?;
        Ok((adapter, Arc::new(settings)))
    }
}

/// What a provider import answers a prepare step.
pub const PROVIDER_REFUSED_IN_PREPARE: &str = "a prepare step runs before the transaction: it may not call a provider";

/// One component call's view of the providers: what a provider import
/// needs of the call (a request or a job step) and nothing else.
pub struct ProviderCall<'a> {
    pub providers: &'a Providers,
    /// The business the call runs for (whose adapters answer it).
    pub business_id: &'a str,
    /// The log prefix of the call (component and request or job).
    pub log_context: &'a str,
    /// The call's connection (none in a prepare step).
    pub conn: Option<&'a crate::db::Connection>,
    /// A prepare step: it runs before the write transaction and must never
    /// reach a provider.
    pub preparing: bool,
}

impl ProviderCall<'_> {
    /// The connection a provider import reads the business's choices on,
    /// or, in a prepare step, [`PROVIDER_REFUSED_IN_PREPARE`]. Every
    /// provider import asks for it before it does anything else.
    pub fn connection(&self) -> Result<&crate::db::Connection, &'static str> {
        if self.preparing {
            return Err(PROVIDER_REFUSED_IN_PREPARE);
        }
        Ok(self.conn.expect("a call's connection is set while it runs"))
    }
}

/// The provider imports' `HasData`: their host side is a [`ProviderCall`].
pub struct ProviderImports;

impl HasData for ProviderImports {
    type Data<'a> = ProviderCall<'a>;
}
