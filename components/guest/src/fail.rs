//! Failure constructors. Codes are snake_case; messages name the field.
//!
//! | constructor      | status | category       |
//! |------------------|--------|----------------|
//! | `validation`     | 400    | validation     |
//! | `forbidden`      | 403    | authorization  |
//! | `not_found`      | 404    | not_found      |
//! | `conflict`       | 409    | conflict       |
//! | `internal`       | 500    | internal       |
//! | `not_implemented`| 501    | configuration  |
//! | `busy`           | 503    | capacity (retryable) |

use crate::Failure;

pub fn failure(status: u16, category: &str, code: &str, message: impl Into<String>, retryable: bool) -> Failure {
    Failure { status, code: code.to_string(), message: message.into(), category: category.to_string(), retryable }
}

pub fn validation(code: &str, message: impl Into<String>) -> Failure {
    failure(400, "validation", code, message, false)
}

pub fn forbidden(code: &str, message: impl Into<String>) -> Failure {
    failure(403, "authorization", code, message, false)
}

pub fn not_found(code: &str, message: impl Into<String>) -> Failure {
    failure(404, "not_found", code, message, false)
}

pub fn conflict(code: &str, message: impl Into<String>) -> Failure {
    failure(409, "conflict", code, message, false)
}

pub fn internal(code: &str, message: impl Into<String>) -> Failure {
    failure(500, "internal", code, message, false)
}

pub fn busy(code: &str, message: impl Into<String>) -> Failure {
    failure(503, "capacity", code, message, true)
}

/// `501 not_implemented` for an operation this component does not (yet) serve.
pub fn not_implemented(operation: &str) -> Failure {
    failure(501, "configuration", "not_implemented", format!("operation `{operation}` is not implemented"), false)
}

/// `400 invalid_body`: the body is missing or not the JSON the schema promised.
pub fn invalid_body(detail: impl std::fmt::Display) -> Failure {
    validation("invalid_body", format!("request body is invalid: {detail}"))
}

/// At most `max` characters of an untrusted client value quoted in a
/// message, with `…` when cut.
pub fn quote(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}
