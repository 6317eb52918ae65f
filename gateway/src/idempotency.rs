//! The rules of `Idempotency-Key`: its syntax and the fingerprint that decides
//! whether a retry is exact. Storage and waiting live in the host.

use sha2::{Digest, Sha256};

/// How long a stored result is replayed (the contract asks for at least 24 h).
pub const RETENTION_SECONDS: i64 = 48 * 3600;

/// 1 to 512 visible ASCII characters (0x21 to 0x7E).
pub fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("Idempotency-Key must not be empty".into());
    }
    if key.len() > 512 {
        return Err(format!("Idempotency-Key must be at most 512 characters (got {}); hash a longer natural id first", key.len()));
    }
    if let Some(bad) = key.bytes().find(|b| !(0x21..=0x7e).contains(b)) {
        return Err(format!("Idempotency-Key may contain only visible ASCII characters (0x21 to 0x7E); found byte 0x{bad:02X}"));
    }
    Ok(())
}

/// A hasher fed with what both fingerprints start with: the operation, then
/// each path parameter as `\0name=value`, then a `\0` separator.
fn request_hasher(operation_id: &str, path_params: &[(String, String)]) -> Sha256 {
    let mut h = Sha256::new();
    h.update(operation_id.as_bytes());
    for (k, v) in path_params {
        h.update([0]);
        h.update(k.as_bytes());
        h.update([b'=']);
        h.update(v.as_bytes());
    }
    h.update([0]);
    h
}

/// SHA-256 over the operation, its path parameters and the canonical JSON
/// body, so key order and whitespace do not make a retry look different.
pub fn fingerprint(operation_id: &str, path_params: &[(String, String)], body: Option<&serde_json::Value>) -> String {
    let mut h = request_hasher(operation_id, path_params);
    if let Some(b) = body {
        crate::canonical::write_canonical(b, &mut |part| h.update(part.as_bytes()));
    }
    hex::encode(h.finalize())
}

/// The fingerprint of a raw-body upload: the operation, its path
/// parameters, the metadata query parameters (name and value, in the
/// operation's order) and the body's size and SHA-256. A JSON fingerprint
/// hashes canonical JSON, which starts with `{`, right after the separator;
/// this one starts with `raw`, so the two kinds never coincide.
pub fn raw_fingerprint(operation_id: &str, path_params: &[(String, String)], metadata: &[(&str, &str)], size: u64, sha256_hex: &str) -> String {
    let mut h = request_hasher(operation_id, path_params);
    h.update(b"raw");
    // Length-prefixed, so no value (a file name may hold any character)
    // can imitate a separator.
    for part in metadata.iter().flat_map(|(k, v)| [k.as_bytes(), v.as_bytes()]) {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.update([0]);
    h.update(size.to_string().as_bytes());
    h.update([0]);
    h.update(sha256_hex.as_bytes());
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_syntax() {
        assert!(check_key("a/b#c|d=e_f:g-h.i").is_ok());
        assert!(check_key(&"x".repeat(512)).is_ok());
        assert!(check_key(&"x".repeat(513)).is_err());
        assert!(check_key("").is_err());
        assert!(check_key("has space").is_err());
        assert!(check_key("tab\t").is_err());
        assert!(check_key("é").is_err());
    }

    #[test]
    fn fingerprint_is_canonical() {
        let a: serde_json::Value = serde_json::from_str(r#"{"a":1, "b":[1,2]}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{ "b":[1,2],"a":1}"#).unwrap();
        let c: serde_json::Value = serde_json::from_str(r#"{"b":[2,1],"a":1}"#).unwrap();
        assert_eq!(fingerprint("op", &[], Some(&a)), fingerprint("op", &[], Some(&b)));
        assert_ne!(fingerprint("op", &[], Some(&a)), fingerprint("op", &[], Some(&c)));
        assert_ne!(fingerprint("op", &[], Some(&a)), fingerprint("other", &[], Some(&a)));
    }

    #[test]
    fn raw_fingerprint_covers_metadata_and_body_hash() {
        let meta = [("fileName", "a.csv"), ("format", "csv")];
        let base = raw_fingerprint("op", &[], &meta, 3, "aa");
        assert_eq!(base, raw_fingerprint("op", &[], &meta, 3, "aa"));
        assert_ne!(base, raw_fingerprint("op", &[], &meta, 3, "bb"), "another body");
        assert_ne!(base, raw_fingerprint("op", &[], &[("fileName", "b.csv"), ("format", "csv")], 3, "aa"), "another file name");
        // Moving text between a name and a value changes the hash.
        assert_ne!(raw_fingerprint("op", &[], &[("a", "b=c")], 3, "aa"), raw_fingerprint("op", &[], &[("a=b", "c")], 3, "aa"));
        let json: serde_json::Value = serde_json::from_str(r#"{"fileName":"a.csv"}"#).unwrap();
        assert_ne!(base, fingerprint("op", &[], Some(&json)));
    }
}
