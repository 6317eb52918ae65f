//! The provider registry: every provider interface (the network that carries
//! messages, the carrier that places calls, the AI that writes agent turns)
//! is one file here implementing [`Provider`]: its world's bindings, its
//! embedded default component (which `--component-override` replaces), its
//! `serve` settings flag, what a plugin template of it declares, how it
//! links, and the host side of the import the areas call. `interfaces!`
//! below is the one list that composes them (Spin's factors, in small):
//! nothing else names the set, not the plugin registry, the command line nor
//! `admin provider`.
//!
//! Which adapter answers is decided per business and call
//! ([`Providers::adapter_for`]): the plugin the business chose
//! (`provider_choices`, set by `switchboard admin provider use`, loaded from
//! `serve --plugin-dir` by [`crate::plugins::Registry`]) with that
//! business's settings, else the embedded default with the `serve` flags'
//! settings.
//!
//! Adding a provider interface: its WIT (the contract: `kit/wit/<name>.wit`,
//! a world in `kit/wit/worlds.wit`, the import in the platform worlds), its
//! default adapter `components/sandbox-<name>/` (build.rs embeds every
//! `sandbox-*` component), one file here (`ai/mod.rs` is the worked example),
//! and one line in `interfaces!`.
//!
//! The files: [`adapter`] (what every interface and adapter shares: the
//! `Provider` trait, `Interface`, `CallLimits`, `Fault`, `Settings`,
//! `Unavailable`), [`calls`] (one call into an adapter, in a store of its
//! own), [`adapters`] (which adapter answers a business: `Providers`, and a
//! component call's view of them, `ProviderCall`, which the interface files
//! implement their imports on), one file per interface, and this one: the
//! list.

pub mod adapter;
pub mod adapters;
pub mod calls;

/// Every provider interface: `module::Type` (the type implements
/// [`Provider`]; the module links its import with `add_to_linker`), one
/// line each, in the order `admin provider show` lists them. The only place
/// that knows the whole set.
macro_rules! interfaces {
    ($($module:ident :: $provider:ident,)*) => {
        $(pub mod $module;)*
        impl Interface {
            /// Every provider interface.
            pub const ALL: [Interface; [$(stringify!($module)),*].len()] = [$(Interface::of::<$module::$provider>()),*];
            const NAMES: &'static [&'static str] = &[$(<$module::$provider as Provider>::NAME),*];
        }

        /// Links every provider import into the linker of area components
        /// and the dispatcher; `view` is the call's [`ProviderCall`].
        pub fn add_to_linker<T: 'static>(linker: &mut Linker<T>, view: fn(&mut T) -> ProviderCall<'_>) -> Result<()> {
            $($module::add_to_linker(linker, view)?;)*
            Ok(())
        }
    };
}

interfaces! {
    messenger::Messenger,
    carrier::Carrier,
    ai::Ai,
}

pub use adapter::{Adapter, CallLimits, Fault, Interface, Provider, ProviderSettings, Settings, SettingsFlag, Unavailable, PROVIDER_DEADLINE};
pub use adapters::{ProviderCall, Providers};
use anyhow::Result;
pub use calls::{provider_http, settings};
use std::collections::HashMap;
use std::sync::Arc;
use wasmtime::component::{Component, Linker};
use wasmtime::Engine;

impl Interface {
    /// The interface named `name`.
    pub fn named(name: &str) -> Option<Interface> {
        Interface::ALL.into_iter().find(|i| i.name() == name)
    }
}

impl<'de> serde::Deserialize<'de> for Interface {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Interface, D::Error> {
        let name = String::deserialize(d)?;
        Interface::named(&name).ok_or_else(|| serde::de::Error::unknown_variant(&name, Interface::NAMES))
    }
}

impl Providers {
    /// Takes each interface's default component out of `compiled` (the
    /// embedded one or its override) and links it into its world.
    pub fn load(
        engine: &Engine,
        compiled: &mut HashMap<String, Component>,
        mut settings: ProviderSettings,
        plugins: crate::plugins::Registry,
        server_ai: ai::ServerAi,
        keys: crate::plugins::sealed::Keys,
    ) -> Result<Providers> {
        let mut defaults = HashMap::new();
        for interface in Interface::ALL {
            if let Some(c) = compiled.remove(interface.component()) {
                let adapter = interface.link(engine, &c, CallLimits::embedded(interface.component()))?;
                defaults.insert(interface.name(), (adapter, Arc::new(settings.remove(interface.name()).unwrap_or_default())));
            }
        }
        Ok(Providers { defaults, plugins, server_ai, keys })
    }
}
