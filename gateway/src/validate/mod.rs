//! A JSON Schema validator for the subset of keywords our OpenAPI document
//! uses (see gateway/openapi/NAMES.md). Written for clear messages: every
//! violation names the field (as a dotted path) and the rule it broke.

mod formats;
mod keywords;

use crate::canonical::canonical_json;
use crate::openapi::{self, SchemaSource};
use formats::format_ok;
pub use formats::{is_date_time, is_uri, is_uuid};
use keywords::{check_number, describe_type, type_matches};
use regex::Regex;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Dotted path of the offending field, e.g. `voiceSettings.firstGreeting`
    /// or `contactIds[2]`; empty for the whole body.
    pub field: String,
    /// The schema keyword that failed, e.g. `pattern`, `required`.
    pub rule: &'static str,
    pub message: String,
}

impl Violation {
    fn new(field: &str, rule: &'static str, message: String) -> Self {
        Violation { field: field.to_string(), rule, message }
    }
}

/// Holds `components.schemas`, each parsed on its first use, and every
/// pattern compiled on its first use. An edge node runs a fresh instance
/// per request and would otherwise parse the whole document and compile
/// every pattern for each request; `check_all` does it all at once where
/// start-up time does not matter, and fails on anything broken.
pub struct Validator {
    schemas: Vec<Schema>,
    by_name: HashMap<Cow<'static, str>, usize>,
    patterns: RwLock<HashMap<String, Regex>>,
}

struct Schema {
    source: SchemaSource,
    parsed: OnceLock<Value>,
}

const MAX_VIOLATIONS: usize = 20;

impl Validator {
    /// A validator over the document's schemas (see `openapi::schema_sources`).
    pub fn from_sources(sources: Vec<SchemaSource>) -> Self {
        Self::with(sources.into_iter().map(|source| Schema { source, parsed: OnceLock::new() }).collect())
    }

    fn with(schemas: Vec<Schema>) -> Self {
        let by_name = schemas.iter().enumerate().map(|(i, s)| (s.source.name.clone(), i)).collect();
        Validator { schemas, by_name, patterns: RwLock::new(HashMap::new()) }
    }

    /// A validator over schemas already parsed (tests, and the document as
    /// a client sees it); checked as `check_all` does.
    pub fn new(schemas: Map<String, Value>, extra: &[&Value]) -> Result<Self, String> {
        let v = Self::with(schemas.into_iter().map(|(name, value)| Schema { source: SchemaSource { name: Cow::Owned(name), text: "", forbid_nul: false }, parsed: OnceLock::from(value) }).collect());
        v.check_all(extra)?;
        Ok(v)
    }

    /// Parses every schema, resolves every `$ref` and compiles every
    /// pattern (of the schemas and of `extra`, e.g. query parameter
    /// schemas) now; fails on the first broken one.
    pub fn check_all(&self, extra: &[&Value]) -> Result<(), String> {
        let mut found = Vec::new();
        for s in &self.schemas {
            if s.parsed.get().is_none() {
                let _ = s.parsed.set(openapi::parse_schema(&s.source)?);
            }
            collect_patterns_and_refs(s.parsed.get().expect("set above"), &mut found);
        }
        for s in extra {
            collect_patterns_and_refs(s, &mut found);
        }
        let mut patterns = self.patterns.write().unwrap_or_else(|e| e.into_inner());
        for item in found {
            match item {
                Found::Pattern(p) => {
                    if let std::collections::hash_map::Entry::Vacant(slot) = patterns.entry(p) {
                        let re = Regex::new(slot.key()).map_err(|e| format!("bad pattern {}: {e}", slot.key()))?;
                        slot.insert(re);
                    }
                }
                Found::Ref(r) => {
                    self.resolve(&r).ok_or_else(|| format!("dangling $ref {r}"))?;
                }
            }
        }
        Ok(())
    }

    /// Every schema, parsed, in the document's order.
    pub fn all_schemas(&self) -> Map<String, Value> {
        self.schemas.iter().map(|s| (s.source.name.to_string(), self.parsed(s).clone())).collect()
    }

    /// Whether a schema of this name exists (nothing is parsed).
    pub fn has_schema(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    pub fn schema(&self, name: &str) -> Option<&Value> {
        self.by_name.get(name).map(|&i| self.parsed(&self.schemas[i]))
    }

    fn parsed<'a>(&self, s: &'a Schema) -> &'a Value {
        // The embedded schemas parse: Gateway::new's start-up check and the
        // gateway's unit tests parse them all.
        s.parsed.get_or_init(|| openapi::parse_schema(&s.source).expect("the document's schemas parse"))
    }

    fn resolve(&self, r: &str) -> Option<&Value> {
        self.schema(r.strip_prefix("#/components/schemas/")?)
    }

    /// Whether `text` matches `pattern`. The two patterns the document puts
    /// on nearly every string are checked directly: same answer as their
    /// regex (a unit test compares them), none compiled per request.
    fn matches(&self, pattern: &str, text: &str) -> bool {
        match pattern {
            openapi::NO_NUL_PATTERN => !text.contains('\0'),
            openapi::NON_BLANK_PATTERN => !text.contains('\0') && text.chars().any(|c| !c.is_whitespace()),
            _ => self.pattern_matches(pattern, text),
        }
    }

    /// Whether `text` matches the compiled `p` (compiled and kept on its
    /// first use; every pattern of the document compiles, as `check_all`
    /// shows). The kept regex is used in place: a clone of a `Regex` starts
    /// with an empty match cache and costs microseconds on its first use.
    fn pattern_matches(&self, p: &str, text: &str) -> bool {
        if let Some(re) = self.patterns.read().unwrap_or_else(|e| e.into_inner()).get(p) {
            return re.is_match(text);
        }
        let re = Regex::new(p).expect("the document's patterns compile");
        let found = re.is_match(text);
        self.patterns.write().unwrap_or_else(|e| e.into_inner()).insert(p.to_string(), re);
        found
    }

    /// Validates `instance`; returns up to 20 violations, the most useful first.
    pub fn validate(&self, schema: &Value, instance: &Value) -> Result<(), Vec<Violation>> {
        let mut out = Vec::new();
        self.check(schema, instance, "", &mut out);
        if out.is_empty() {
            Ok(())
        } else {
            out.truncate(MAX_VIOLATIONS);
            Err(out)
        }
    }

    fn check(&self, schema: &Value, v: &Value, path: &str, out: &mut Vec<Violation>) {
        if out.len() >= MAX_VIOLATIONS {
            return;
        }
        let Some(s) = schema.as_object() else { return };
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            if let Some(target) = self.resolve(r) {
                self.check(target, v, path, out);
            }
            return;
        }
        let name = display(path);
        if let Some(t) = s.get("type") {
            if !type_matches(t, v) {
                out.push(Violation::new(path, "type", format!("{name} must be {}", describe_type(t))));
                return;
            }
        }
        if let Some(c) = s.get("const") {
            if c != v {
                out.push(Violation::new(path, "const", format!("{name} must be {c}")));
                return;
            }
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array) {
            if !e.contains(v) {
                let allowed: Vec<String> = e.iter().map(|x| x.to_string()).collect();
                out.push(Violation::new(path, "enum", format!("{name} must be one of {}", allowed.join(", "))));
                return;
            }
        }
        if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
            self.check_one_of(s, branches, v, path, out);
        }
        match v {
            Value::String(text) => self.check_string(s, text, path, name, out),
            Value::Number(_) => check_number(s, v, path, name, out),
            Value::Array(items) => self.check_array(s, items, path, name, out),
            Value::Object(obj) => self.check_object(s, obj, path, name, out),
            _ => {}
        }
    }

    fn check_one_of(&self, s: &Map<String, Value>, branches: &[Value], v: &Value, path: &str, out: &mut Vec<Violation>) {
        // A discriminator picks the branch, so the errors are that branch's own.
        if let Some(d) = s.get("discriminator") {
            let prop = d.get("propertyName").and_then(Value::as_str).unwrap_or("");
            if let Some(tag) = v.get(prop).and_then(Value::as_str) {
                if let Some(target) = d.get("mapping").and_then(|m| m.get(tag)).and_then(Value::as_str) {
                    if let Some(branch) = self.resolve(target) {
                        let mut errs = Vec::new();
                        self.check(branch, v, path, &mut errs);
                        let others: Vec<&Value> = d.get("mapping").and_then(Value::as_object).into_iter().flat_map(|m| m.values()).filter_map(Value::as_str).filter_map(|t| self.resolve(t)).collect();
                        self.explain_by_selector(branch, &others, v, path, &mut errs);
                        out.extend(errs);
                        return;
                    }
                }
                let field = join(path, prop);
                let allowed: Vec<&str> = d.get("mapping").and_then(Value::as_object).map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
                out.push(Violation::new(&field, "discriminator", format!("`{field}` must be one of {}", allowed.join(", "))));
                return;
            }
        }
        let mut results: Vec<Vec<Violation>> = Vec::new();
        for b in branches {
            let mut errs = Vec::new();
            self.check(b, v, path, &mut errs);
            results.push(errs);
        }
        let passing = results.iter().filter(|r| r.is_empty()).count();
        match passing {
            1 => {}
            0 => {
                // Report the branch that came closest: its type and its
                // constants (such as `channel`) match, then fewest violations.
                let score = |r: &Vec<Violation>| {
                    let wrong_type = r.iter().any(|x| x.field == path && x.rule == "type");
                    let wrong_selector = r.iter().filter(|x| matches!(x.rule, "const" | "enum") && is_child(path, &x.field)).count();
                    (wrong_type, wrong_selector, r.len())
                };
                let (i, mut best) = results.into_iter().enumerate().min_by_key(|(_, r)| score(r)).unwrap_or_default();
                if let Some(branch) = branches.get(i).map(|b| self.deref(b)) {
                    let all: Vec<&Value> = branches.iter().map(|b| self.deref(b)).collect();
                    self.explain_by_selector(branch, &all, v, path, &mut best);
                }
                out.extend(best);
            }
            _ => out.push(Violation::new(path, "oneOf", format!("{} matches more than one allowed shape; send exactly one of the alternatives", display(path)))),
        }
    }

    /// A schema with its `$ref` followed.
    fn deref<'a>(&'a self, s: &'a Value) -> &'a Value {
        match s.get("$ref").and_then(Value::as_str).and_then(|r| self.resolve(r)) {
            Some(target) => target,
            None => s,
        }
    }

    /// Says which alternative a field belongs to. `chosen` is the shape of
    /// `branches` that `v` was checked against; its selector is a property
    /// whose value picks it (a `const` or `enum`, such as `channel`). A field
    /// refused as unknown that only shapes of another selector value define,
    /// or required only by shapes of this one, gets a message naming the
    /// selector: "`voiceSettings` is not allowed when `channel` is \"chatapp\"".
    fn explain_by_selector(&self, chosen: &Value, branches: &[&Value], v: &Value, path: &str, errs: &mut [Violation]) {
        let Some(props) = chosen.get("properties").and_then(Value::as_object) else { return };
        let selects = |p: &Value| p.get("const").is_some() || p.get("enum").is_some();
        let Some((sel, value)) = props.iter().find(|(k, p)| selects(self.deref(p)) && v.get(k.as_str()).is_some()).map(|(k, _)| (k.as_str(), &v[k.as_str()])) else { return };
        let same = |b: &Value| {
            let mut wrong = Vec::new();
            if let Some(p) = b.get("properties").and_then(|p| p.get(sel)) {
                self.check(p, value, "", &mut wrong);
            }
            wrong.is_empty()
        };
        let (mine, theirs): (Vec<&Value>, Vec<&Value>) = branches.iter().copied().partition(|b| same(b));
        let selector = join(path, sel);
        for e in errs.iter_mut() {
            let Some(rel) = relative(path, &e.field) else { continue };
            let segments: Vec<&str> = rel.split('.').collect();
            let explain = match e.rule {
                "additionalProperties" => !mine.iter().any(|b| self.defines(b, &segments)) && theirs.iter().any(|b| self.defines(b, &segments)),
                "required" if segments.len() == 1 => mine.iter().all(|b| requires(b, rel)) && theirs.iter().any(|b| !requires(b, rel)),
                _ => false,
            };
            if explain {
                let what = if e.rule == "required" { "is required" } else { "is not allowed" };
                e.message = format!("`{}` {what} when `{selector}` is {value}", e.field);
            }
        }
    }

    /// Whether `schema` has a property at the dotted `segments` (through
    /// `$ref`s and the shapes of a `oneOf`).
    fn defines(&self, schema: &Value, segments: &[&str]) -> bool {
        let s = self.deref(schema);
        let Some((first, rest)) = segments.split_first() else { return true };
        if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
            if branches.iter().any(|b| self.defines(b, segments)) {
                return true;
            }
        }
        match s.get("properties").and_then(|p| p.get(*first)) {
            Some(p) => self.defines(p, rest),
            None => false,
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// `field` below `path`, as a dotted path of property names (None for an
/// array item or a field elsewhere).
fn relative<'a>(path: &str, field: &'a str) -> Option<&'a str> {
    let rel = if path.is_empty() { field } else { field.strip_prefix(path)?.strip_prefix('.')? };
    (!rel.is_empty() && !rel.contains('[')).then_some(rel)
}

/// Whether `field` is a property directly below `path`.
fn is_child(path: &str, field: &str) -> bool {
    relative(path, field).is_some_and(|r| !r.contains('.'))
}

/// Whether the object schema `s` lists `key` in `required`.
fn requires(s: &Value, key: &str) -> bool {
    s.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|k| k == key))
}

/// How a message names the field at `path`: "the body" or "`path`". A
/// value formatted only when a message is written (most values break no rule).
#[derive(Clone, Copy)]
struct Shown<'a>(&'a str);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            f.write_str("the body")
        } else {
            write!(f, "`{}`", self.0)
        }
    }
}

fn display(path: &str) -> Shown<'_> {
    Shown(path)
}

enum Found {
    Pattern(String),
    Ref(String),
}

fn collect_patterns_and_refs(v: &Value, out: &mut Vec<Found>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("pattern", Value::String(p)) => out.push(Found::Pattern(p.clone())),
                    ("$ref", Value::String(r)) => out.push(Found::Ref(r.clone())),
                    _ => collect_patterns_and_refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_patterns_and_refs(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod keyword_tests;
#[cfg(test)]
mod tests;
