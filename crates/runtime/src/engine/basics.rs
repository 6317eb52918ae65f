//! `clock`, `ids` and `log`: the imports every store answers alike, a
//! component call's (`imports.rs`) and a provider adapter's
//! (`providers/calls.rs`).

use super::bindings::switchboard::provider::log;

/// `clock` and `ids` are the same for every store (a call's or a provider's).
macro_rules! clock_and_ids {
    ($state:ty) => {
        impl $crate::engine::bindings::switchboard::provider::clock::Host for $state {
            fn now_ms(&mut self) -> i64 {
                crate::clock::now_ms()
            }
            fn now_rfc3339(&mut self) -> String {
                crate::clock::now_rfc3339()
            }
        }

        impl $crate::engine::bindings::switchboard::provider::ids::Host for $state {
            fn uuid_v7(&mut self) -> String {
                uuid::Uuid::now_v7().to_string()
            }
            /// At most 4 KiB from the CSPRNG.
            fn random_bytes(&mut self, len: u32) -> Vec<u8> {
                let mut v = vec![0u8; len.min(4096) as usize];
                rand::fill(&mut v[..]);
                v
            }
        }
    };
}
pub(crate) use clock_and_ids;

/// A component's own log line at its level: its text is the message, and
/// `context` (the component and its request or job) a field.
pub fn log_event(level: log::Level, context: &str, message: &str) {
    match level {
        log::Level::Debug => tracing::debug!(context, "{message}"),
        log::Level::Info => tracing::info!(context, "{message}"),
        log::Level::Warn => tracing::warn!(context, "{message}"),
        log::Level::Error => tracing::error!(context, "{message}"),
    }
}
