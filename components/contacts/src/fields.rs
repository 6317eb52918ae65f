//! Rules for contact values that the JSON schema cannot express
//! (`patternProperties` is not available): custom field keys and sizes, and
//! contact names. Pure; unit-tested natively.

use serde_json::{Map, Value};

pub const MAX_FIELDS: usize = 50;
pub const MAX_FIELD_VALUE_CHARS: usize = 1000;
pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_CATEGORY_NAME_CHARS: usize = 120;

/// `^[a-zA-Z][a-zA-Z0-9_]{0,63}$`
pub fn is_field_key(k: &str) -> bool {
    let b = k.as_bytes();
    !b.is_empty() && b.len() <= 64 && b[0].is_ascii_alphabetic() && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// A violated rule: (code, message).
pub type Violation = (&'static str, String);

/// Checks one key/value pair of `fields` (`where_` names the field, e.g. `fields`).
pub fn check_pair(where_: &str, key: &str, value: &str) -> Result<(), Violation> {
    if !is_field_key(key) {
        return Err(("invalid_field_key", format!("`{where_}` key `{}` must match ^[a-zA-Z][a-zA-Z0-9_]{{0,63}}$", truncate(key, 80))));
    }
    if value.chars().count() > MAX_FIELD_VALUE_CHARS {
        return Err(("field_value_too_long", format!("`{where_}.{key}` must be at most {MAX_FIELD_VALUE_CHARS} characters")));
    }
    Ok(())
}

/// Validates a complete custom-field object (string values only).
pub fn check_fields(fields: &Map<String, Value>) -> Result<(), Violation> {
    if fields.len() > MAX_FIELDS {
        return Err(too_many_fields());
    }
    for (k, v) in fields {
        let Some(s) = v.as_str() else {
            return Err(("invalid_field_value", format!("`fields.{k}` must be a string")));
        };
        check_pair("fields", k, s)?;
    }
    Ok(())
}

pub fn too_many_fields() -> Violation {
    ("too_many_fields", format!("a contact may have at most {MAX_FIELDS} custom fields"))
}

/// Trims a contact name and checks 1..=200 characters.
pub fn contact_name(raw: &str) -> Result<String, Violation> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(("invalid_name", "`name` must not be empty".into()));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(("invalid_name", format!("`name` must be at most {MAX_NAME_CHARS} characters")));
    }
    Ok(name.to_string())
}

/// Trims a category name and checks 1..=120 characters.
pub fn category_name(raw: &str) -> Result<String, Violation> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(("invalid_name", "`name` must not be empty".into()));
    }
    if name.chars().count() > MAX_CATEGORY_NAME_CHARS {
        return Err(("invalid_name", format!("`name` must be at most {MAX_CATEGORY_NAME_CHARS} characters")));
    }
    Ok(name.to_string())
}

/// Turns a CSV header into a field key: trims it and replaces spaces and
/// dashes with `_`. `None` if the result is not a valid key.
pub fn header_to_key(header: &str) -> Option<String> {
    let key: String = header.trim().chars().map(|c| if c.is_whitespace() || c == '-' { '_' } else { c }).collect();
    is_field_key(&key).then_some(key)
}

pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys() {
        assert!(is_field_key("a"));
        assert!(is_field_key("loyaltyTier_2"));
        assert!(is_field_key(&format!("a{}", "b".repeat(63))));
        assert!(!is_field_key(&format!("a{}", "b".repeat(64))));
        assert!(!is_field_key("_a"));
        assert!(!is_field_key("1a"));
        assert!(!is_field_key("a-b"));
        assert!(!is_field_key(""));
    }

    #[test]
    fn headers() {
        assert_eq!(header_to_key(" Date of birth ").as_deref(), Some("Date_of_birth"));
        assert_eq!(header_to_key("zip-code").as_deref(), Some("zip_code"));
        assert_eq!(header_to_key("e-mail?"), None);
        assert_eq!(header_to_key(""), None);
    }

    #[test]
    fn fields_object() {
        let ok = json!({"city": "Paris", "tier": "gold"});
        assert!(check_fields(ok.as_object().unwrap()).is_ok());
        let bad = json!({"1city": "Paris"});
        assert_eq!(check_fields(bad.as_object().unwrap()).unwrap_err().0, "invalid_field_key");
        let long = json!({"bio": "x".repeat(1001)});
        assert_eq!(check_fields(long.as_object().unwrap()).unwrap_err().0, "field_value_too_long");
        let num = json!({"n": 1});
        assert_eq!(check_fields(num.as_object().unwrap()).unwrap_err().0, "invalid_field_value");
        let many: Map<String, Value> = (0..51).map(|i| (format!("k{i}"), json!("v"))).collect();
        assert_eq!(check_fields(&many).unwrap_err().0, "too_many_fields");
    }

    #[test]
    fn names() {
        assert_eq!(contact_name("  Ada  ").unwrap(), "Ada");
        assert!(contact_name("   ").is_err());
        assert!(contact_name(&"x".repeat(201)).is_err());
        assert!(contact_name(&"é".repeat(200)).is_ok());
        assert!(category_name(&"x".repeat(121)).is_err());
    }
}
