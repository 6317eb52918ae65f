//! Canonical JSON: object keys sorted, no insignificant whitespace. The
//! idempotency fingerprint hashes it (a retry that differs only in key
//! order or spacing is the same request) and the validator compares array
//! items with it (`uniqueItems`).

use serde_json::Value;

/// JSON with object keys sorted and no insignificant whitespace: two bodies
/// that differ only in key order or spacing give the same text.
pub fn canonical_json(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(v, &mut |part| s.push_str(part));
    s
}

/// Streams the canonical form of `v` to `out` piece by piece, so a large
/// body can be hashed without building its canonical text.
pub fn write_canonical(v: &Value, out: &mut dyn FnMut(&str)) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out("{");
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out(",");
                }
                out(&Value::String((*k).clone()).to_string());
                out(":");
                write_canonical(&m[*k], out);
            }
            out("}");
        }
        Value::Array(a) => {
            out("[");
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out(",");
                }
                write_canonical(x, out);
            }
            out("]");
        }
        // Strings are escaped in place (no copy of a large value).
        Value::String(text) => {
            let mut buf = Vec::with_capacity(text.len().min(1 << 16) + 2);
            serde_json::to_writer(&mut buf, text).expect("a string serialises");
            out(std::str::from_utf8(&buf).expect("serde_json writes UTF-8"));
        }
        other => out(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_ignores_order_and_space() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y":1,"x":2}], "a": "s"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":"s","b":[1,{"x":2,"y":1}]}"#).unwrap();
        assert_eq!(canonical_json(&a), canonical_json(&b));
    }
}
