//! Provider interface `messenger` (wit/messenger.wit): the network that
//! carries chatapp and photoapp messages. World `messenger-provider`; the
//! embedded default is the `sandbox-messenger` component, replaced by a real
//! adapter with `--component-override sandbox-messenger=FILE`. The host
//! answers the areas' `messenger` import by calling it in a small store of
//! its own (a trap becomes a retryable `provider_unavailable`).

use super::{ProviderState, PROVIDER_DEADLINE};
use crate::engine::dispatcher_world::switchboard::platform::messenger;
use crate::engine::imports::RequestState;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store};

mod world {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "messenger-provider",
        with: {
            "switchboard:platform/clock": crate::engine::switchboard::platform::clock,
            "switchboard:platform/ids": crate::engine::switchboard::platform::ids,
            "switchboard:platform/log": crate::engine::switchboard::platform::log,
        },
    });
}
use world::exports::switchboard::platform::messenger as provider;
use world::switchboard::platform::settings;

/// The embedded default, and the name `--component-override` replaces.
pub const COMPONENT: &str = "sandbox-messenger";

/// The linked messaging provider.
pub struct Messenger {
    engine: Engine,
    pre: world::MessengerProviderPre<ProviderState>,
    settings: Arc<HashMap<String, String>>,
}

impl Messenger {
    pub fn link(engine: &Engine, component: &Component, settings: Arc<HashMap<String, String>>) -> Result<Messenger> {
        let mut linker: Linker<ProviderState> = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        world::MessengerProvider::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
        let pre = linker.instantiate_pre(component).map_err(anyhow::Error::from).with_context(|| format!("linking component {COMPONENT}"))?;
        Ok(Messenger { engine: engine.clone(), pre: world::MessengerProviderPre::new(pre)?, settings })
    }

    /// Calls the provider in a fresh, bounded store of its own.
    fn call<T>(&self, context: &str, f: impl FnOnce(&provider::Guest, &mut Store<ProviderState>) -> wasmtime::Result<T>) -> Result<T, messenger::ProviderError> {
        let mut store = Store::new(&self.engine, ProviderState::new(COMPONENT, self.settings.clone()));
        store.limiter(|s| &mut s.limits);
        store.set_epoch_deadline(crate::engine::deadline_ticks(PROVIDER_DEADLINE));
        let result = self.pre.instantiate(&mut store).and_then(|inst| f(inst.switchboard_platform_messenger(), &mut store));
        result.map_err(|e| {
            crate::logging::line("error", &format!("{context} messaging provider trapped: {e:#}"));
            messenger::ProviderError { code: "provider_unavailable".into(), message: "the messaging provider failed".into(), retryable: true, reference: None }
        })
    }
}

pub fn add_to_linker(linker: &mut Linker<RequestState>) -> Result<()> {
    Ok(messenger::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?)
}

impl settings::Host for ProviderState {
    fn get(&mut self, name: String) -> Option<String> {
        super::get_setting(self, &name)
    }
}

fn provider_error(e: provider::ProviderError) -> messenger::ProviderError {
    messenger::ProviderError { code: e.code, message: e.message, retryable: e.retryable, reference: e.reference }
}

fn no_messenger() -> messenger::ProviderError {
    messenger::ProviderError { code: "provider_not_configured".into(), message: "no messaging provider is linked in this build".into(), retryable: false, reference: None }
}

/// `messenger`: the linked provider component answers.
impl messenger::Host for RequestState {
    fn upload_media(&mut self, m: messenger::Media) -> Result<messenger::StoredMedia, messenger::ProviderError> {
        let providers = self.providers().clone();
        let p = providers.messenger.as_ref().ok_or_else(no_messenger)?;
        let m = provider::Media { channel: m.channel, sender_id: m.sender_id, mime_type: m.mime_type, file_name: m.file_name, sha256_hex: m.sha256_hex, bytes: m.bytes };
        let stored = p.call(self.log_context(), |g, s| g.call_upload_media(s, &m))?.map_err(provider_error)?;
        Ok(messenger::StoredMedia { provider_media_id: stored.provider_media_id, provider_status: stored.provider_status, expires_at_ms: stored.expires_at_ms })
    }

    fn submit(&mut self, m: messenger::OutboundMessage) -> Result<String, messenger::ProviderError> {
        let providers = self.providers().clone();
        let p = providers.messenger.as_ref().ok_or_else(no_messenger)?;
        let m = provider::OutboundMessage {
            message_id: m.message_id,
            channel: m.channel,
            sender_id: m.sender_id,
            recipient: m.recipient,
            kind: m.kind,
            text: m.text,
            provider_media_id: m.provider_media_id,
        };
        p.call(self.log_context(), |g, s| g.call_submit(s, &m))?.map_err(provider_error)
    }

    fn reply_to_comment(&mut self, r: messenger::CommentReply) -> Result<String, messenger::ProviderError> {
        let providers = self.providers().clone();
        let p = providers.messenger.as_ref().ok_or_else(no_messenger)?;
        let r = provider::CommentReply { reply_id: r.reply_id, channel: r.channel, sender_id: r.sender_id, comment_id: r.comment_id, commenter: r.commenter, text: r.text };
        p.call(self.log_context(), |g, s| g.call_reply_to_comment(s, &r))?.map_err(provider_error)
    }

    fn track(&mut self, provider_message_id: String, recipient: String, last_status: String) -> Result<messenger::Progress, messenger::ProviderError> {
        let providers = self.providers().clone();
        let p = providers.messenger.as_ref().ok_or_else(no_messenger)?;
        let progress = p.call(self.log_context(), |g, s| g.call_track(s, &provider_message_id, &recipient, &last_status))?.map_err(provider_error)?;
        Ok(messenger::Progress {
            report: progress.report.map(|r| messenger::StatusReport { status: r.status, provider_status: r.provider_status, failure: r.failure.map(provider_error) }),
            check_after_ms: progress.check_after_ms,
        })
    }
}
