//! The failure envelope's vocabulary: categories, their HTTP statuses, and the
//! envelopes themselves. Only the host builds envelopes, from these.

use serde_json::{json, Value};

/// An error result before or instead of a component's answer.
#[derive(Debug, Clone)]
pub struct Failure {
    pub status: u16,
    pub code: String,
    pub message: String,
    pub category: &'static str,
    pub retryable: bool,
    /// Field-level validation details (optional, extends the envelope).
    pub details: Vec<crate::validate::Violation>,
    /// Extra response headers (e.g. `Allow` on 405).
    pub headers: Vec<(&'static str, String)>,
}

pub const CATEGORIES: &[&str] = &["validation", "authentication", "authorization", "billing", "not_found", "conflict", "rate_limit", "capacity", "configuration", "upstream", "internal"];

impl Failure {
    pub fn new(status: u16, category: &'static str, code: &str, message: impl Into<String>) -> Self {
        Failure {
            status,
            code: code.to_string(),
            message: message.into(),
            category,
            retryable: matches!(category, "rate_limit" | "capacity" | "upstream") || status >= 500,
            details: Vec::new(),
            headers: Vec::new(),
        }
    }
    pub fn validation(code: &str, message: impl Into<String>) -> Self {
        Self::new(400, "validation", code, message)
    }
    pub fn authentication(message: impl Into<String>) -> Self {
        Self::new(401, "authentication", "authentication_required", message).with_header("WWW-Authenticate", "Bearer".to_string())
    }
    pub fn authorization(code: &str, message: impl Into<String>) -> Self {
        Self::new(403, "authorization", code, message)
    }
    pub fn not_found(code: &str, message: impl Into<String>) -> Self {
        Self::new(404, "not_found", code, message)
    }
    pub fn conflict(code: &str, message: impl Into<String>) -> Self {
        Self::new(409, "conflict", code, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "internal", "internal_error", message)
    }
    /// A body over the operation's limit.
    pub fn too_large(max: usize) -> Self {
        Self::new(413, "validation", "payload_too_large", format!("the request body exceeds this operation's limit of {max} bytes"))
    }
    pub fn retryable(mut self, r: bool) -> Self {
        self.retryable = r;
        self
    }
    pub fn with_header(mut self, name: &'static str, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    pub fn from_violations(violations: Vec<crate::validate::Violation>, what: &str) -> Self {
        let first = violations.first().map(|v| v.message.clone()).unwrap_or_default();
        let more = violations.len().saturating_sub(1);
        let message = if more > 0 { format!("Invalid {what}: {first} (and {more} more problem{})", if more == 1 { "" } else { "s" }) } else { format!("Invalid {what}: {first}") };
        let mut f = Self::validation("invalid_request", message);
        f.details = violations;
        f
    }

    pub fn envelope(&self, request_id: &str) -> Value {
        let mut error = json!({
            "code": self.code,
            "message": self.message,
            "category": self.category,
            "retryable": self.retryable,
            "requestId": request_id,
        });
        if !self.details.is_empty() {
            error["details"] = self.details.iter().map(|d| json!({"field": d.field, "rule": d.rule, "message": d.message})).collect();
        }
        json!({"ok": false, "error": error, "meta": {"requestId": request_id}})
    }
}

/// The HTTP status a category maps to when a component does not say.
pub fn status_for_category(category: &str) -> u16 {
    match category {
        "validation" => 400,
        "authentication" => 401,
        "billing" => 402,
        "authorization" => 403,
        "not_found" => 404,
        "conflict" => 409,
        "rate_limit" => 429,
        "upstream" => 502,
        "capacity" => 503,
        _ => 500,
    }
}

/// `{"ok":true,"data":…,"meta":{"requestId":…}}` built as text so a
/// component's `data` JSON is embedded without re-serialising it.
pub fn success_envelope(data_json: &str, request_id: &str) -> String {
    format!(r#"{{"ok":true,"data":{data_json},"meta":{{"requestId":"{request_id}"}}}}"#)
}
