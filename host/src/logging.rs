//! One JSON line per event on stderr. Callers never pass secrets, keys,
//! request bodies, query strings (they can carry mobile numbers) or provider
//! ids.

pub fn line(level: &str, msg: &str) {
    eprintln!(
        "{{\"ts\":\"{}\",\"level\":\"{level}\",\"msg\":{}}}",
        crate::clock::now_rfc3339(),
        serde_json::Value::String(msg.to_string())
    );
}

pub fn request(request_id: &str, method: &str, path: &str, operation: &str, status: u16, micros: u128) {
    eprintln!(
        "{{\"ts\":\"{}\",\"level\":\"info\",\"requestId\":\"{request_id}\",\"method\":\"{method}\",\"path\":{},\"operation\":\"{operation}\",\"status\":{status},\"durationUs\":{micros}}}",
        crate::clock::now_rfc3339(),
        serde_json::Value::String(path.to_string())
    );
}

/// The access line of a streamed answer, written when its stream ends:
/// `bytes` sent, and how it ended (`complete`, `aborted`, `client_gone`,
/// `client_stalled`).
#[allow(clippy::too_many_arguments)]
pub fn streamed(request_id: &str, method: &str, path: &str, operation: &str, status: u16, micros: u128, bytes: u64, end: &str) {
    eprintln!(
        "{{\"ts\":\"{}\",\"level\":\"info\",\"requestId\":\"{request_id}\",\"method\":\"{method}\",\"path\":{},\"operation\":\"{operation}\",\"status\":{status},\"durationUs\":{micros},\"bytes\":{bytes},\"streamEnd\":\"{end}\"}}",
        crate::clock::now_rfc3339(),
        serde_json::Value::String(path.to_string())
    );
}
