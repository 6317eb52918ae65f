//! The keywords of each instance type: a string's lengths, words,
//! pattern and format; a number's bounds and `multipleOf`; an array's
//! counts, uniqueness and items; an object's `required`, properties,
//! `propertyNames` and counts; and the `type` keyword itself (its match and
//! how a message names it). Composition (`$ref`, `oneOf`, `enum`, `const`)
//! is `mod.rs`'s.

use super::*;

impl Validator {
    pub(super) fn check_string(&self, s: &Map<String, Value>, text: &str, path: &str, name: Shown<'_>, out: &mut Vec<Violation>) {
        let len = text.chars().count() as u64;
        if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
            if len < min {
                let msg = if min == 1 { format!("{name} must not be empty") } else { format!("{name} must be at least {min} characters") };
                out.push(Violation::new(path, "minLength", msg));
            }
        }
        if let Some(max) = s.get("maxLength").and_then(Value::as_u64) {
            if len > max {
                out.push(Violation::new(path, "maxLength", format!("{name} must be at most {max} characters (got {len})")));
            }
        }
        if let Some(max) = s.get("x-maxWords").and_then(Value::as_u64) {
            let words = text.split_whitespace().count() as u64;
            if words > max {
                out.push(Violation::new(path, "x-maxWords", format!("{name} must be at most {max} words (got {words})")));
            }
        }
        if let Some(p) = s.get("pattern").and_then(Value::as_str) {
            if !self.matches(p, text) {
                // `x-patternMessage` says what the pattern asks in words.
                let msg = match s.get("x-patternMessage").and_then(Value::as_str) {
                    Some(words) => format!("{name} {words}"),
                    None => format!("{name} must match the pattern {p}"),
                };
                out.push(Violation::new(path, "pattern", msg));
            }
        }
        if let Some(f) = s.get("format").and_then(Value::as_str) {
            if !format_ok(f, text) {
                out.push(Violation::new(path, "format", format!("{name} must be a valid {f}")));
            }
        }
    }

    pub(super) fn check_array(&self, s: &Map<String, Value>, items: &[Value], path: &str, name: Shown<'_>, out: &mut Vec<Violation>) {
        let n = items.len() as u64;
        if let Some(min) = s.get("minItems").and_then(Value::as_u64) {
            if n < min {
                out.push(Violation::new(path, "minItems", format!("{name} must have at least {min} item{}", plural(min))));
            }
        }
        if let Some(max) = s.get("maxItems").and_then(Value::as_u64) {
            if n > max {
                out.push(Violation::new(path, "maxItems", format!("{name} must have at most {max} item{} (got {n})", plural(max))));
            }
        }
        if s.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
            let mut seen = std::collections::HashSet::new();
            for (i, it) in items.iter().enumerate() {
                if !seen.insert(canonical_json(it)) {
                    out.push(Violation::new(&format!("{path}[{i}]"), "uniqueItems", format!("{name} must not repeat items ({it} appears twice)")));
                    break;
                }
            }
        }
        if let Some(item_schema) = s.get("items") {
            for (i, it) in items.iter().enumerate() {
                self.check(item_schema, it, &format!("{path}[{i}]"), out);
            }
        }
    }

    pub(super) fn check_object(&self, s: &Map<String, Value>, obj: &Map<String, Value>, path: &str, name: Shown<'_>, out: &mut Vec<Violation>) {
        let props = s.get("properties").and_then(Value::as_object);
        if let Some(req) = s.get("required").and_then(Value::as_array) {
            for r in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    let f = join(path, r);
                    out.push(Violation::new(&f, "required", format!("`{f}` is required")));
                }
            }
        }
        if let Some(names) = s.get("propertyNames") {
            for k in obj.keys() {
                let mut wrong = Vec::new();
                self.check(names, &Value::String(k.clone()), path, &mut wrong);
                if !wrong.is_empty() {
                    let rule = names.get("pattern").and_then(Value::as_str).map_or(String::new(), |p| format!(": keys must match {p}"));
                    let shown: String = k.chars().take(80).collect();
                    out.push(Violation::new(&join(path, k), "propertyNames", format!("{name} has a key `{shown}` that is not allowed{rule}")));
                }
            }
        }
        for (k, val) in obj {
            let f = join(path, k);
            match props.and_then(|p| p.get(k)) {
                Some(ps) => self.check(ps, val, &f, out),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        out.push(Violation::new(&f, "additionalProperties", format!("unknown property `{f}`")));
                    }
                    Some(extra @ Value::Object(_)) => self.check(extra, val, &f, out),
                    _ => {}
                },
            }
        }
        let n = obj.len() as u64;
        if let Some(min) = s.get("minProperties").and_then(Value::as_u64) {
            if n < min {
                let msg = match props {
                    Some(p) if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        let optional: Vec<&str> = p.keys().filter(|k| !obj.contains_key(*k)).map(String::as_str).collect();
                        format!("{name} must have at least {min} properties; add one of: {}", optional.join(", "))
                    }
                    _ => format!("{name} must have at least {min} properties"),
                };
                out.push(Violation::new(path, "minProperties", msg));
            }
        }
        if let Some(max) = s.get("maxProperties").and_then(Value::as_u64) {
            if n > max {
                out.push(Violation::new(path, "maxProperties", format!("{name} must have at most {max} properties (got {n})")));
            }
        }
    }
}

pub(super) fn check_number(s: &Map<String, Value>, v: &Value, path: &str, name: Shown<'_>, out: &mut Vec<Violation>) {
    let x = v.as_f64().unwrap_or(f64::NAN);
    let bound = |k: &str| s.get(k).and_then(Value::as_f64);
    if let Some(m) = bound("minimum") {
        if x < m {
            out.push(Violation::new(path, "minimum", format!("{name} must be at least {}", num(m))));
        }
    }
    if let Some(m) = bound("maximum") {
        if x > m {
            out.push(Violation::new(path, "maximum", format!("{name} must be at most {}", num(m))));
        }
    }
    if let Some(m) = bound("exclusiveMinimum") {
        if x <= m {
            out.push(Violation::new(path, "exclusiveMinimum", format!("{name} must be greater than {}", num(m))));
        }
    }
    if let Some(m) = bound("exclusiveMaximum") {
        if x >= m {
            out.push(Violation::new(path, "exclusiveMaximum", format!("{name} must be less than {}", num(m))));
        }
    }
    if let Some(m) = bound("multipleOf") {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            out.push(Violation::new(path, "multipleOf", format!("{name} must be a multiple of {}", num(m))));
        }
    }
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub(super) fn type_matches(t: &Value, v: &Value) -> bool {
    match t {
        Value::String(t) => one_type(t, v),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| one_type(t, v)),
        _ => true,
    }
}

fn one_type(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0 && f.is_finite()),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => false,
    }
}

pub(super) fn describe_type(t: &Value) -> String {
    let article = |t: &str| match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".to_string(),
        _ => format!("a {t}"),
    };
    match t {
        Value::String(t) => article(t),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).map(article).collect::<Vec<_>>().join(" or "),
        _ => "valid".into(),
    }
}
