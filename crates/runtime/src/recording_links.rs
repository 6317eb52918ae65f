//! The `recording-links` import: signed, expiring links to a call's
//! recording (`recordingUrl`, `recordingDownloadUrl`), which the voice
//! area asks for when it reports a call. The route that checks and serves
//! them is the host's (host/src/recordings.rs, `signed_here`); the
//! import's host side is in `engine/imports.rs`.
//!
//! A link is `GET /recordings/{callId}/{fileName}?b=BUSINESS&e=EXPIRY&d=inline|attachment&s=SIG`,
//! where `SIG` is the hex HMAC-SHA256 of `v1|callId|business|expiry|d`
//! under a secret the server creates once and keeps in the database
//! (`server_secrets`; every node of one database signs alike).

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const PREFIX: &str = "/recordings/";
/// The spec's lifetime of a recording link.
pub const DEFAULT_TTL_MS: u64 = 5 * 60 * 1000;

/// The signing of this server's links, configured once at `serve` start
/// (host/src/main.rs) and held by the components' capabilities
/// (`engine::Capabilities`).
pub struct RecordingLinks {
    secret: Vec<u8>,
    base_url: String,
    ttl_ms: i64,
}

/// The signing secret of this database, created on first use.
pub fn load_secret(db: &crate::db::Db) -> anyhow::Result<Vec<u8>> {
    let conn = db.conn()?;
    let fresh = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    crate::db::execute(&conn, "INSERT OR IGNORE INTO server_secrets (name, value) VALUES ('recording_links', ?1)", crate::db::params![fresh])?;
    let value = crate::db::query_as::<String>(&conn, "SELECT value FROM server_secrets WHERE name = 'recording_links'", vec![])?;
    Ok(value.into_iter().next().unwrap_or_default().into_bytes())
}

impl RecordingLinks {
    /// Links under `base_url` (`serve --public-url`), signed with `secret`
    /// ([`load_secret`]), valid for `ttl_ms`.
    pub fn new(secret: Vec<u8>, base_url: &str, ttl_ms: u64) -> RecordingLinks {
        RecordingLinks { secret, base_url: base_url.trim_end_matches('/').to_string(), ttl_ms: ttl_ms.min(i64::MAX as u64) as i64 }
    }

    /// The server's public base URL (`serve --public-url`): a carrier's
    /// signed callback is checked against the address it called.
    pub fn public_url(&self) -> &str {
        &self.base_url
    }

    /// A signed link (`disposition` `inline` or `attachment`).
    pub fn sign(&self, business: &str, call_id: &str, file_name: &str, disposition: &str, now_ms: i64) -> String {
        let expiry = (now_ms + self.ttl_ms) / 1000;
        let sig = hex::encode(signature(&self.secret, call_id, business, expiry, disposition).finalize().into_bytes());
        format!("{}{PREFIX}{call_id}/{file_name}?b={business}&e={expiry}&d={disposition}&s={sig}", self.base_url)
    }

    /// Whether `sig` is this server's signature of a link's fields (its
    /// expiry is the caller's to check).
    pub fn signed_here(&self, call_id: &str, business: &str, expiry: i64, disposition: &str, sig: &[u8]) -> bool {
        signature(&self.secret, call_id, business, expiry, disposition).verify_slice(sig).is_ok()
    }
}

fn signature(secret: &[u8], call_id: &str, business: &str, expiry: i64, disposition: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("any key length");
    mac.update(format!("v1|{call_id}|{business}|{expiry}|{disposition}").as_bytes());
    mac
}
