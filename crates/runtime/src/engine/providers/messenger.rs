//! Provider interface `messenger` (wit/messenger.wit): the network that
//! carries chatapp and photoapp messages. World `messenger-provider`; the
//! embedded default is the `sandbox-messenger` component (replaced for the
//! whole process with `--component-override sandbox-messenger=FILE`), a
//! business may choose a messenger plugin instead. The host answers the
//! areas' `messenger` import by calling the business's adapter in a small
//! store of its own ([`calls::call`]), and hands a provider's pushed
//! webhooks to it ([`Messenger::receive`]).

use super::adapter::{CallLimits, Provider, Settings, SettingsFlag, Unavailable};
use super::adapters::{ProviderCall, ProviderImports, Providers};
use super::calls::{self, ProviderState};
use crate::engine::bindings::dispatcher_world::switchboard::provider::messenger;
use anyhow::Result;
use std::sync::Arc;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Engine, Store};

pub mod world {
    crate::engine::providers::calls::provider_world!("switchboard:provider/messenger-provider");
}
use world::exports::switchboard::provider::messenger as provider;
pub use world::exports::switchboard::provider::messenger_webhooks::Pushed;

/// A linked messaging adapter (embedded or a plugin).
pub struct Messenger {
    engine: Engine,
    pre: world::MessengerProviderPre<ProviderState>,
    limits: CallLimits,
}

impl Provider for Messenger {
    const NAME: &'static str = "messenger";
    const WORLD: &'static str = "messenger-provider";
    const COMPONENT: &'static str = "sandbox-messenger";
    const SETTINGS: Option<SettingsFlag> =
        Some(SettingsFlag { long: "messenger-setting", env_prefix: "SWITCHBOARD_MESSENGER_", help: "A setting of the messaging provider component (also SWITCHBOARD_MESSENGER_<NAME>); repeatable." });
    const TEMPLATE_SETTINGS: &'static [&'static str] = &["step-delay-ms"];

    fn link(engine: &Engine, component: &Component, limits: CallLimits) -> Result<Messenger> {
        let pre = calls::instance_pre(engine, component, &limits, |l| world::MessengerProvider::add_to_linker::<_, HasSelf<_>>(l, |s| s))?;
        Ok(Messenger { engine: engine.clone(), pre: world::MessengerProviderPre::new(pre)?, limits })
    }
}

/// Links the `messenger` import the areas and the dispatcher call; its host
/// side is on the call's [`ProviderCall`] (below).
pub fn add_to_linker<T: 'static>(linker: &mut Linker<T>, view: fn(&mut T) -> ProviderCall<'_>) -> Result<()> {
    Ok(messenger::add_to_linker::<T, ProviderImports>(linker, view)?)
}

impl Providers {
    /// The messenger that answers for `business`, with its settings.
    pub fn messenger_for(&self, conn: &crate::db::Connection, business: &str) -> Result<(Arc<Messenger>, Settings), Unavailable> {
        self.adapter_for::<Messenger>(conn, business)
    }
}

impl Messenger {
    /// Calls the adapter in a fresh, bounded store of its own.
    fn call<T>(
        &self,
        settings: Settings,
        context: &str,
        f: impl FnOnce(&world::MessengerProvider, &mut Store<ProviderState>) -> wasmtime::Result<Result<T, provider::ProviderError>>,
    ) -> Result<T, messenger::ProviderError> {
        let answer = calls::call(&self.engine, &self.limits, settings, context, |store, instantiated| {
            let instance = self.pre.instantiate(&mut *store)?;
            instantiated();
            f(&instance, store)
        });
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(provider_error(e)),
            Err(fault) => {
                let (code, message, retryable) = fault.error(&self.limits, "provider_unavailable", "messaging provider");
                Err(messenger::ProviderError { code, message, retryable, reference: None })
            }
        }
    }

    /// Whether this adapter is a plugin (only plugins take provider webhooks).
    pub fn is_plugin(&self) -> bool {
        self.limits.plugin
    }

    /// A plugin's answer must look like an id: 1 to 256 printable characters.
    fn id(&self, id: String) -> Result<String, messenger::ProviderError> {
        if (1..=256).contains(&id.len()) && !id.chars().any(char::is_control) {
            Ok(id)
        } else {
            Err(garbage(&self.limits, "an id that is empty, longer than 256 characters or not printable"))
        }
    }

    /// A provider's webhook: the adapter checks its signature and reads the
    /// statuses, messages and photoapp signals in it.
    pub fn receive(&self, settings: Settings, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<Pushed, messenger::ProviderError> {
        let pushed = self.call(settings, "webhook", |i, s| i.switchboard_provider_messenger_webhooks().call_receive(s, &headers, &body))?;
        let ids = pushed.statuses.iter().map(|p| &p.provider_message_id).chain(pushed.messages.iter().map(|m| &m.provider_message_id)).chain(pushed.comments.iter().map(|c| &c.comment_id));
        for id in ids {
            self.id(id.clone())?;
        }
        Ok(pushed)
    }

    /// The provider's check of the webhook address (a GET's decoded query):
    /// the adapter answers with the text to send back, from its settings.
    pub fn verify(&self, settings: Settings, query: Vec<(String, String)>) -> Result<String, messenger::ProviderError> {
        let answer = self.call(settings, "webhook verification", |i, s| i.switchboard_provider_messenger_webhooks().call_verify(s, &query))?;
        if answer.len() > 1024 || answer.chars().any(char::is_control) {
            return Err(garbage(&self.limits, "a verification answer longer than 1024 characters or not printable"));
        }
        Ok(answer)
    }
}

fn garbage(limits: &CallLimits, what: &str) -> messenger::ProviderError {
    messenger::ProviderError { code: "plugin_bad_answer".into(), message: format!("{} answered {what}", limits.name), retryable: false, reference: None }
}

fn provider_error(e: provider::ProviderError) -> messenger::ProviderError {
    messenger::ProviderError { code: e.code, message: e.message, retryable: e.retryable, reference: e.reference }
}

impl ProviderCall<'_> {
    /// The messenger of the business this call runs for.
    fn messenger(&self) -> Result<(Arc<Messenger>, Settings), messenger::ProviderError> {
        let conn = self.connection().map_err(|m| messenger::ProviderError { code: "prepare_refused".into(), message: m.into(), retryable: false, reference: None })?;
        self.providers.messenger_for(conn, self.business_id).map_err(|u| {
            let (code, message, retryable) = u.describe("messenger");
            messenger::ProviderError { code, message, retryable, reference: None }
        })
    }
}

/// `messenger`: the business's adapter answers.
impl messenger::Host for ProviderCall<'_> {
    fn upload_media(&mut self, m: messenger::Media) -> Result<messenger::StoredMedia, messenger::ProviderError> {
        let (p, settings) = self.messenger()?;
        let m = provider::Media { channel: m.channel, sender_id: m.sender_id, mime_type: m.mime_type, file_name: m.file_name, sha256_hex: m.sha256_hex, bytes: m.bytes };
        let stored = p.call(settings, self.log_context, |i, s| i.switchboard_provider_messenger().call_upload_media(s, &m))?;
        Ok(messenger::StoredMedia { provider_media_id: p.id(stored.provider_media_id)?, provider_status: stored.provider_status, expires_at_ms: stored.expires_at_ms })
    }

    fn submit(&mut self, m: messenger::OutboundMessage) -> Result<String, messenger::ProviderError> {
        let (p, settings) = self.messenger()?;
        let m = provider::OutboundMessage {
            message_id: m.message_id,
            channel: m.channel,
            sender_id: m.sender_id,
            recipient: m.recipient,
            kind: m.kind,
            text: m.text,
            provider_media_id: m.provider_media_id,
            reply_to_comment: m.reply_to_comment,
        };
        let id = p.call(settings, self.log_context, |i, s| i.switchboard_provider_messenger().call_submit(s, &m))?;
        p.id(id)
    }

    fn reply_to_comment(&mut self, r: messenger::CommentReply) -> Result<String, messenger::ProviderError> {
        let (p, settings) = self.messenger()?;
        let r = provider::CommentReply { reply_id: r.reply_id, channel: r.channel, sender_id: r.sender_id, comment_id: r.comment_id, commenter: r.commenter, text: r.text };
        let id = p.call(settings, self.log_context, |i, s| i.switchboard_provider_messenger().call_reply_to_comment(s, &r))?;
        p.id(id)
    }

    /// For a plugin, a status its provider pushed (its webhook) comes first;
    /// otherwise the adapter is asked.
    fn track(&mut self, provider_message_id: String, recipient: String, last_status: String) -> Result<messenger::Progress, messenger::ProviderError> {
        let (p, settings) = self.messenger()?;
        if p.is_plugin() {
            let pushed = crate::plugins::pushed::next_pushed(self.conn.expect("a call's connection is set while it runs"), self.business_id, &provider_message_id, &last_status).map_err(|e| messenger::ProviderError {
                code: "provider_choice_unreadable".into(),
                message: format!("the pushed statuses could not be read: {e}"),
                retryable: true,
                reference: None,
            })?;
            if let Some((report, more)) = pushed {
                return Ok(messenger::Progress { report: Some(report), check_after_ms: more.then_some(0) });
            }
        }
        let progress = p.call(settings, self.log_context, |i, s| i.switchboard_provider_messenger().call_track(s, &provider_message_id, &recipient, &last_status))?;
        Ok(messenger::Progress {
            report: progress.report.map(|r| messenger::StatusReport { status: r.status, provider_status: r.provider_status, failure: r.failure.map(provider_error) }),
            check_after_ms: progress.check_after_ms,
        })
    }
}
