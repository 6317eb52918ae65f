//! Secret plugin settings at rest: each value a manifest marks `secret` is
//! sealed with ChaCha20-Poly1305 under the key of `SWITCHBOARD_SETTINGS_KEY`
//! (32 bytes as 64 hex digits) before it is written to `provider_choices`,
//! and opened only when a call into the plugin needs it. The associated
//! data binds a sealed value to its business, interface, plugin and setting
//! name, so a value copied into another row does not open.
//!
//! Without the key a secret setting is refused when it is chosen (nothing
//! secret is ever written in clear), and a stored one cannot be opened: the
//! business's plugin calls fail with `plugin_settings_sealed` until a server
//! runs with the key. Rotation: start with the new key in
//! `SWITCHBOARD_SETTINGS_KEY` and the old one in
//! `SWITCHBOARD_SETTINGS_KEY_PREVIOUS`; both open, new values are sealed
//! with the new one, and `switchboard admin provider reseal` rewrites every
//! stored value under it.
//!
//! A sealed value: `v1:<key id>:<hex of nonce and ciphertext>`, the key id
//! the first 8 hex digits of the key's SHA-256 (which key opens it).

use anyhow::{anyhow, bail, Result};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use sha2::{Digest, Sha256};

pub const KEY_VAR: &str = "SWITCHBOARD_SETTINGS_KEY";
pub const PREVIOUS_KEY_VAR: &str = "SWITCHBOARD_SETTINGS_KEY_PREVIOUS";
const VERSION: &str = "v1";
const NONCE_BYTES: usize = 12;

struct SealKey {
    id: String,
    cipher: ChaCha20Poly1305,
}

/// The keys that seal and open secret settings, read once from the
/// environment by the process's entry (`serve` and the admin commands,
/// host/src) and handed down: to the provider registry, which opens a
/// business's settings for a call, and to what writes a choice.
#[derive(Default)]
pub struct Keys {
    current: Option<SealKey>,
    previous: Option<SealKey>,
}

fn parse_key(hex_text: &str) -> Result<SealKey, String> {
    let bytes = hex::decode(hex_text).map_err(|_| "must be 64 hex digits (32 random bytes: `openssl rand -hex 32`)".to_string())?;
    if bytes.len() != 32 {
        return Err("must be 64 hex digits (32 random bytes: `openssl rand -hex 32`)".into());
    }
    let id = hex::encode(&Sha256::digest(&bytes)[..4]);
    Ok(SealKey { id, cipher: ChaCha20Poly1305::new(Key::from_slice(&bytes)) })
}

impl Keys {
    /// The keys of [`KEY_VAR`] and [`PREVIOUS_KEY_VAR`]: a malformed key
    /// stops `serve` and the admin commands with its reason.
    pub fn from_environment() -> Result<Keys> {
        let read = |var: &str| -> Result<Option<SealKey>> {
            match std::env::var(var) {
                Ok(text) if !text.trim().is_empty() => parse_key(text.trim()).map(Some).map_err(|e| anyhow!("{var}: {e}")),
                _ => Ok(None),
            }
        };
        Ok(Keys { current: read(KEY_VAR)?, previous: read(PREVIOUS_KEY_VAR)? })
    }

    /// Whether a current key is set (without one, secret settings are
    /// refused).
    pub fn is_set(&self) -> bool {
        self.current.is_some()
    }

    /// Seals `value` under the current key; an error naming the variable
    /// when there is none.
    pub fn seal(&self, value: &str, binding: &Binding) -> Result<String> {
        let Some(key) = &self.current else {
            bail!("the setting `{}` is secret and secrets are stored only encrypted: start with {KEY_VAR} set (64 hex digits: `openssl rand -hex 32`)", binding.setting);
        };
        let nonce: [u8; NONCE_BYTES] = rand::random();
        let sealed = key.cipher.encrypt(Nonce::from_slice(&nonce), Payload { msg: value.as_bytes(), aad: &binding.aad() }).map_err(|_| anyhow!("sealing failed"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Ok(format!("{VERSION}:{}:{}", key.id, hex::encode(out)))
    }

    /// Opens a value [`Keys::seal`] wrote, with whichever of the keys
    /// sealed it.
    pub fn open(&self, token: &str, binding: &Binding) -> Result<String> {
        let mut parts = token.splitn(3, ':');
        let (Some(VERSION), Some(id), Some(body)) = (parts.next(), parts.next(), parts.next()) else {
            bail!("the stored setting `{}` is not a sealed value", binding.setting);
        };
        let key = [&self.current, &self.previous]
            .into_iter()
            .flatten()
            .find(|k| k.id == id)
            .ok_or_else(|| anyhow!("the secret setting `{}` was sealed with a key this server does not have ({KEY_VAR}, {PREVIOUS_KEY_VAR})", binding.setting))?;
        let bytes = hex::decode(body).ok().filter(|b| b.len() > NONCE_BYTES).ok_or_else(|| anyhow!("the stored setting `{}` is damaged", binding.setting))?;
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let plain = key
            .cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: &binding.aad() })
            .map_err(|_| anyhow!("the stored setting `{}` does not open (damaged, or moved from another row)", binding.setting))?;
        String::from_utf8(plain).map_err(|_| anyhow!("the stored setting `{}` is damaged", binding.setting))
    }

    /// Whether `token` is sealed under the current key (`reseal` skips it).
    pub fn is_current(&self, token: &str) -> bool {
        self.current.as_ref().is_some_and(|k| token.split(':').nth(1) == Some(k.id.as_str()))
    }
}

/// What a sealed value is bound to.
pub struct Binding<'a> {
    pub business: &'a str,
    pub interface: &'a str,
    pub plugin: &'a str,
    pub setting: &'a str,
}

impl Binding<'_> {
    fn aad(&self) -> Vec<u8> {
        // NUL-separated: none of the parts may hold one.
        [self.business, self.interface, self.plugin, self.setting].join("\0").into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_and_binding() {
        let key = parse_key(&"11".repeat(32)).unwrap();
        let other = parse_key(&"22".repeat(32)).unwrap();
        let b = Binding { business: "b1", interface: "carrier", plugin: "p", setting: "auth-token" };
        let aad = b.aad();
        let nonce = [7u8; NONCE_BYTES];
        let sealed = key.cipher.encrypt(Nonce::from_slice(&nonce), Payload { msg: b"tok-123".as_ref(), aad: &aad }).unwrap();
        assert!(!sealed.windows(7).any(|w| w == b"tok-123"));
        assert_eq!(key.cipher.decrypt(Nonce::from_slice(&nonce), Payload { msg: &sealed, aad: &aad }).unwrap(), b"tok-123");
        assert!(other.cipher.decrypt(Nonce::from_slice(&nonce), Payload { msg: &sealed, aad: &aad }).is_err());
        let moved = Binding { business: "b2", ..b }.aad();
        assert!(key.cipher.decrypt(Nonce::from_slice(&nonce), Payload { msg: &sealed, aad: &moved }).is_err());
        assert!(parse_key("abcd").is_err());
        assert_ne!(key.id, other.id);
    }
}
