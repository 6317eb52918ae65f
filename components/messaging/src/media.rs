//! uploadMedia (operation 7) and the pure checks behind it.
//!
//! Rules, all checked before the first write: the phone number is a
//! connected chatapp number of this business (`400
//! phone_number_not_connected`); `contentBase64` is canonical standard base64
//! (decoding and re-encoding gives the input back: padding, no whitespace,
//! zero pad bits; else `400 invalid_base64`); at most 5 MiB decoded (`400
//! media_too_large`); the magic bytes agree with `mimeType` (jpeg `FF D8 FF`,
//! png `89 50 4E 47 0D 0A 1A 0A`, webp `RIFF????WEBP`; else `400
//! mime_mismatch`).
//!
//! The bytes then go to the provider behind the `messenger` interface
//! (`upload-media`), which names the provider media id, its status and its
//! expiry; a provider error is `502 <provider code>` (category `upstream`,
//! `retryable` as the provider says). The same bytes uploaded again for the
//! same number before that expiry reuse the cached provider media id, status
//! and expiry without asking the provider (a new `mediaId` each time).

use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use switchboard_guest::db;
use switchboard_guest::{clock, created, fail, new_id, params, req, time, HResult, Request, Success};

use switchboard_tabular::base64;

use switchboard_guest::messenger;

/// The decoded size limit.
pub const MAX_BYTES: usize = 5 * 1024 * 1024;

/// Decodes canonical standard base64 only (padded, no whitespace, zero pad
/// bits); `None` otherwise.
pub fn decode_canonical(s: &str) -> Option<Vec<u8>> {
    base64::decode(s).ok().filter(|b| !b.is_empty())
}

/// True when the magic bytes of `bytes` are those of `mime`.
pub fn magic_matches(mime: &str, bytes: &[u8]) -> bool {
    match mime {
        "image/jpeg" => bytes.starts_with(&[0xFF, 0xD8, 0xFF]),
        "image/png" => bytes.starts_with(&[0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
        "image/webp" => bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP",
        _ => false,
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UploadBody {
    phone_number_id: String,
    mime_type: String,
    file_name: String,
    content_base64: String,
    #[serde(default)]
    client_asset_id: Option<String>,
}

/// True when `id` is a connected chatapp phone number of `biz`.
pub fn chatapp_connected(biz: &str, id: &str) -> HResult<bool> {
    switchboard_channel_connections::is_connected(&db::Store, biz, "chatapp", id)
}

pub fn not_connected(id: &str) -> switchboard_guest::Failure {
    let shown: String = id.chars().take(64).collect();
    fail::not_found("phone_number_not_connected", format!("`phoneNumberId` `{shown}` is not a connected chatapp phone number of this business"))
}

pub fn upload(r: &Request) -> HResult<Success> {
    let biz = r.business_id.as_str();
    let b: UploadBody = req::body(r)?;
    if !chatapp_connected(biz, &b.phone_number_id)? {
        return Err(not_connected(&b.phone_number_id));
    }
    // A cheap bound before decoding anything.
    if b.content_base64.len() / 4 * 3 > MAX_BYTES + 2 {
        return Err(too_large());
    }
    let bytes =
        decode_canonical(&b.content_base64).ok_or_else(|| fail::validation("invalid_base64", "`contentBase64` must be canonical standard base64 (RFC 4648, padded, no whitespace or line breaks)"))?;
    if bytes.len() > MAX_BYTES {
        return Err(too_large());
    }
    if !magic_matches(&b.mime_type, &bytes) {
        return Err(fail::validation("mime_mismatch", format!("the decoded bytes are not a `{}` image", b.mime_type)));
    }
    let sha = hex::encode(Sha256::digest(&bytes));
    let now_ms = clock::now_ms();
    let uploaded_at = time::rfc3339_ms(now_ms);
    // The provider upload, or its cached id for the same bytes.
    let cached = db::query_one_as::<(String, String, String)>(
        "SELECT provider_media_id, expires_at, provider_status FROM media WHERE business_id = ?1 AND phone_number_id = ?2 AND content_sha256 = ?3 \
         AND expires_at > ?4 ORDER BY expires_at DESC LIMIT 1",
        &params![biz, &b.phone_number_id, &sha, &uploaded_at],
    )?;
    let (provider_id, expires_at, provider_status) = match cached {
        Some(row) => row,
        None => {
            let stored = messenger::upload_media(&messenger::Media {
                channel: "chatapp".into(),
                sender_id: b.phone_number_id.clone(),
                mime_type: b.mime_type.clone(),
                file_name: b.file_name.clone(),
                sha256_hex: sha.clone(),
                bytes: bytes.clone(),
            })
            .map_err(provider_failure)?;
            (stored.provider_media_id, time::rfc3339_ms(stored.expires_at_ms), stored.provider_status)
        }
    };
    let (media_id, correlation_id) = (new_id(), new_id());
    db::execute(
        "INSERT INTO media (id, business_id, phone_number_id, mime_type, file_name, client_asset_id, content_sha256, size_bytes, bytes, \
         provider_media_id, provider_status, uploaded_at, expires_at, correlation_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?14, ?11, ?12, ?13)",
        &params![
            &media_id,
            biz,
            &b.phone_number_id,
            &b.mime_type,
            &b.file_name,
            b.client_asset_id.clone(),
            &sha,
            bytes.len() as i64,
            bytes,
            &provider_id,
            &uploaded_at,
            &expires_at,
            &correlation_id,
            &provider_status,
        ],
    )?;
    created(&json!({
        "mediaId": media_id,
        "providerMediaId": provider_id,
        "mediaType": "image",
        "mimeType": b.mime_type,
        "uploadedAt": uploaded_at,
        "expiresAt": expires_at,
        "contentSha256": sha,
        "providerStatus": provider_status,
        "correlationId": correlation_id,
    }))
}

/// A provider refusal or outage as this request's failure.
fn provider_failure(e: messenger::ProviderError) -> switchboard_guest::Failure {
    switchboard_guest::Failure { status: 502, code: e.code, message: format!("the messaging provider refused the upload: {}", e.message), category: "upstream".into(), retryable: e.retryable }
}

fn too_large() -> switchboard_guest::Failure {
    fail::validation("media_too_large", format!("the decoded image is larger than {MAX_BYTES} bytes (5 MiB)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_base64_only() {
        for s in ["", "QQ==", "QUI=", "QUJD", "iVBORw0KGgo="] {
            if s.is_empty() {
                assert_eq!(decode_canonical(s), None);
            } else {
                assert_eq!(base64::encode(&decode_canonical(s).unwrap()), s);
            }
        }
        assert_eq!(decode_canonical("QUJD").unwrap(), b"ABC");
        for s in ["QR==", "QUJ=", "QQ", "QQ=", "QQ==QQ==", "QU JD", "QUJD\n", "QUJD ", "Q===", "QU=D", "QUJ-", "QUJ_"] {
            assert_eq!(decode_canonical(s), None, "{s:?}");
        }
    }

    #[test]
    fn magic_bytes() {
        assert!(magic_matches("image/jpeg", &[0xFF, 0xD8, 0xFF, 0xE0]));
        assert!(magic_matches("image/png", b"\x89PNG\r\n\x1a\n...."));
        assert!(magic_matches("image/webp", b"RIFF\0\0\0\0WEBPVP8 "));
        assert!(!magic_matches("image/png", &[0xFF, 0xD8, 0xFF, 0xE0]));
        assert!(!magic_matches("image/webp", b"RIFF\0\0\0\0AVI "));
        assert!(!magic_matches("image/gif", b"GIF89a"));
    }
}
