//! One test per keyword the validator implements, each asserting the exact
//! field, rule and message a client is given (the messages reach the API's
//! `error.details` and `error.message`, so they are part of the contract).

use super::*;
use serde_json::json;

/// The violations of `instance` against `schema`, registered as `T` beside
/// `extra` schemas, as (field, rule, message).
fn said_with(extra: Value, schema: Value, instance: Value) -> Vec<(String, &'static str, String)> {
    let mut schemas = extra.as_object().cloned().unwrap_or_default();
    schemas.insert("T".into(), schema);
    let v = Validator::new(schemas, &[]).unwrap();
    match v.validate(v.schema("T").unwrap(), &instance) {
        Ok(()) => vec![],
        Err(e) => e.into_iter().map(|x| (x.field, x.rule, x.message)).collect(),
    }
}

fn said(schema: Value, instance: Value) -> Vec<(String, &'static str, String)> {
    said_with(json!({}), schema, instance)
}

fn one(field: &str, rule: &'static str, message: &str) -> Vec<(String, &'static str, String)> {
    vec![(field.to_string(), rule, message.to_string())]
}

#[test]
fn type_names_every_type_with_its_article() {
    let cases = [
        ("string", json!(1), "`f` must be a string"),
        ("integer", json!("1"), "`f` must be an integer"),
        ("integer", json!(1.5), "`f` must be an integer"),
        ("number", json!("1"), "`f` must be a number"),
        ("boolean", json!(0), "`f` must be a boolean"),
        ("object", json!([]), "`f` must be an object"),
        ("array", json!({}), "`f` must be an array"),
        ("null", json!(false), "`f` must be null"),
    ];
    for (t, value, message) in cases {
        let schema = json!({"type": "object", "properties": {"f": {"type": t}}});
        assert_eq!(said(schema, json!({ "f": value })), one("f", "type", message), "{t}");
    }
    // A list of types, and the whole body.
    assert_eq!(said(json!({"properties": {"f": {"type": ["string", "null"]}}}), json!({"f": 1})), one("f", "type", "`f` must be a string or null"));
    assert!(said(json!({"properties": {"f": {"type": ["string", "null"]}}}), json!({"f": null})).is_empty());
    assert_eq!(said(json!({"type": "object"}), json!([1])), one("", "type", "the body must be an object"));
    // A whole number written with a fraction part is an integer; a wrong
    // type stops the other checks of that value.
    assert!(said(json!({"type": "integer"}), json!(3.0)).is_empty());
    assert_eq!(said(json!({"type": "string", "minLength": 3}), json!(7)), one("", "type", "the body must be a string"));
}

#[test]
fn const_and_enum_list_what_is_allowed() {
    assert!(said(json!({"properties": {"c": {"const": "voice"}}}), json!({"c": "voice"})).is_empty());
    assert_eq!(said(json!({"properties": {"c": {"const": "voice"}}}), json!({"c": "chat"})), one("c", "const", "`c` must be \"voice\""));
    assert!(said(json!({"properties": {"k": {"enum": ["a", 2, null]}}}), json!({"k": 2})).is_empty());
    assert_eq!(said(json!({"properties": {"k": {"enum": ["a", 2, null]}}}), json!({"k": "b"})), one("k", "enum", "`k` must be one of \"a\", 2, null"));
}

#[test]
fn required_properties_and_additional_properties() {
    let schema = json!({"type": "object", "required": ["a", "b"], "additionalProperties": false,
        "properties": {"a": {"type": "string"}, "b": {"type": "object", "required": ["c"], "additionalProperties": {"type": "integer"}, "properties": {"c": {"type": "string"}}}}});
    assert!(said(schema.clone(), json!({"a": "x", "b": {"c": "y", "extra": 1}})).is_empty());
    assert_eq!(said(schema.clone(), json!({})), vec![("a".into(), "required", "`a` is required".into()), ("b".into(), "required", "`b` is required".into())]);
    assert_eq!(said(schema.clone(), json!({"a": "x", "b": {}})), one("b.c", "required", "`b.c` is required"));
    assert_eq!(said(schema.clone(), json!({"a": "x", "b": {"c": "y"}, "zz": 1})), one("zz", "additionalProperties", "unknown property `zz`"));
    // additionalProperties as a schema checks each extra property against it.
    assert_eq!(said(schema.clone(), json!({"a": "x", "b": {"c": "y", "n": "1"}})), one("b.n", "type", "`b.n` must be an integer"));
    // Without additionalProperties, unknown properties pass.
    assert!(said(json!({"type": "object", "properties": {"a": {"type": "string"}}}), json!({"zz": 1})).is_empty());
}

#[test]
fn property_names_min_and_max_properties() {
    let names = json!({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}});
    assert!(said(names.clone(), json!({"ok": 1})).is_empty());
    assert_eq!(said(names.clone(), json!({"Bad1": 1})), one("Bad1", "propertyNames", "the body has a key `Bad1` that is not allowed: keys must match ^[a-z]+$"));
    // A long key is shown cut at 80 characters.
    let long = "X".repeat(100);
    let got = said(names, json!({ long.clone(): 1 }));
    assert_eq!(got[0].2, format!("the body has a key `{}` that is not allowed: keys must match ^[a-z]+$", &long[..80]));
    // A rule other than a pattern is not spelled out.
    assert_eq!(said(json!({"propertyNames": {"maxLength": 2}}), json!({"abc": 1})), one("abc", "propertyNames", "the body has a key `abc` that is not allowed"));

    let closed = json!({"type": "object", "minProperties": 2, "maxProperties": 3, "additionalProperties": false, "properties": {"a": {}, "b": {}, "c": {}, "d": {}}});
    assert_eq!(said(closed.clone(), json!({"b": 1})), one("", "minProperties", "the body must have at least 2 properties; add one of: a, c, d"));
    assert_eq!(said(closed, json!({"a": 1, "b": 1, "c": 1, "d": 1})), one("", "maxProperties", "the body must have at most 3 properties (got 4)"));
    assert_eq!(said(json!({"minProperties": 1}), json!({})), one("", "minProperties", "the body must have at least 1 properties"));
}

#[test]
fn string_lengths_count_characters_and_words() {
    let s = json!({"properties": {"s": {"type": "string", "minLength": 1, "maxLength": 4}, "t": {"minLength": 3}, "w": {"x-maxWords": 2}}});
    assert!(said(s.clone(), json!({"s": "éééé", "t": "abc", "w": " one  two "})).is_empty());
    assert_eq!(said(s.clone(), json!({"s": ""})), one("s", "minLength", "`s` must not be empty"));
    assert_eq!(said(s.clone(), json!({"s": "ééééé"})), one("s", "maxLength", "`s` must be at most 4 characters (got 5)"));
    assert_eq!(said(s.clone(), json!({"t": "ab"})), one("t", "minLength", "`t` must be at least 3 characters"));
    assert_eq!(said(s, json!({"w": "one two\tthree"})), one("w", "x-maxWords", "`w` must be at most 2 words (got 3)"));
}

#[test]
fn patterns_say_their_words_or_the_expression() {
    let s = json!({"properties": {
        "m": {"pattern": "^\\+[1-9][0-9]{7,14}$"},
        "d": {"pattern": "^[0-9]+$", "x-patternMessage": "must be digits"},
        "n": {"pattern": openapi::NO_NUL_PATTERN},
        "b": {"pattern": openapi::NON_BLANK_PATTERN}}});
    assert!(said(s.clone(), json!({"m": "+447700900123", "d": "12", "n": " ", "b": " x "})).is_empty());
    assert_eq!(said(s.clone(), json!({"m": "0044"})), one("m", "pattern", "`m` must match the pattern ^\\+[1-9][0-9]{7,14}$"));
    assert_eq!(said(s.clone(), json!({"d": "1a"})), one("d", "pattern", "`d` must be digits"));
    assert_eq!(said(s.clone(), json!({"n": "a\u{0}"})), one("n", "pattern", format!("`n` must match the pattern {}", openapi::NO_NUL_PATTERN).as_str()));
    assert_eq!(said(s, json!({"b": " \t\u{a0}"})).len(), 1);
    // A pattern is not anchored unless it says so (JSON Schema's rule).
    assert!(said(json!({"pattern": "[0-9]"}), json!("abc1def")).is_empty());
}

#[test]
fn formats_uuid_date_time_uri_email() {
    let s = json!({"properties": {"u": {"format": "uuid"}, "t": {"format": "date-time"}, "r": {"format": "uri"}, "e": {"format": "email"}, "x": {"format": "unknown-format"}}});
    let good = json!({"u": "0190c0de-0000-7000-8000-000000000000", "t": "2026-11-22T10:00:00.5+01:00", "r": "mailto:a@b", "e": "a@b.example", "x": "anything"});
    assert!(said(s.clone(), good).is_empty());
    let cases = [
        ("u", json!("0190c0de00007000800000000000000"), "`u` must be a valid uuid"),
        ("u", json!("0190c0de-0000-7000-8000-00000000000g"), "`u` must be a valid uuid"),
        ("t", json!("2026-11-22T10:00:00"), "`t` must be a valid date-time"),
        ("t", json!("2026-11-22T10:00:00.Z"), "`t` must be a valid date-time"),
        ("t", json!("2026-11-22T10:00:00+0100"), "`t` must be a valid date-time"),
        ("r", json!("http://"), "`r` must be a valid uri"),
        ("r", json!("https://a b.test/"), "`r` must be a valid uri"),
        ("r", json!("/relative"), "`r` must be a valid uri"),
        ("e", json!("a@"), "`e` must be a valid email"),
        ("e", json!("@b.example"), "`e` must be a valid email"),
        ("e", json!("a@.example"), "`e` must be a valid email"),
        ("e", json!("a b@c.example"), "`e` must be a valid email"),
    ];
    for (field, value, message) in cases {
        assert_eq!(said(s.clone(), json!({ field: value })), one(field, "format", message), "{value}");
    }
    // Other formats' values are accepted as the RFCs allow.
    assert!(formats::is_date_time("2026-11-22t10:00:00z"));
    assert!(formats::is_uri("https://[::1]:8080/x"));
    assert!(formats::is_uri("https://user@host.test"));
    assert!(!formats::is_uri("1http://x.test"));
}

#[test]
fn numbers_bounds_and_multiples() {
    let s = json!({"properties": {"n": {"type": "number", "minimum": 1, "maximum": 10.5, "multipleOf": 0.5}, "x": {"exclusiveMinimum": 0, "exclusiveMaximum": 1}}});
    assert!(said(s.clone(), json!({"n": 10.5, "x": 0.5})).is_empty());
    assert_eq!(said(s.clone(), json!({"n": 0.5})), one("n", "minimum", "`n` must be at least 1"));
    assert_eq!(said(s.clone(), json!({"n": 11})), one("n", "maximum", "`n` must be at most 10.5"));
    assert_eq!(said(s.clone(), json!({"n": 1.25})), one("n", "multipleOf", "`n` must be a multiple of 0.5"));
    assert_eq!(said(s.clone(), json!({"x": 0})), one("x", "exclusiveMinimum", "`x` must be greater than 0"));
    assert_eq!(said(s, json!({"x": 1})), one("x", "exclusiveMaximum", "`x` must be less than 1"));
    // Several rules of one value are all reported.
    assert_eq!(said(json!({"minimum": 50, "multipleOf": 50}), json!(25)).iter().map(|x| x.1).collect::<Vec<_>>(), vec!["minimum", "multipleOf"]);
}

#[test]
fn arrays_items_lengths_and_uniqueness_with_indexed_paths() {
    let s = json!({"properties": {"a": {"type": "array", "minItems": 1, "maxItems": 2, "uniqueItems": true, "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}, "b": {"minItems": 2, "maxItems": 1}}});
    assert!(said(s.clone(), json!({"a": [{"id": "x"}, {"id": "y"}]})).is_empty());
    assert_eq!(said(s.clone(), json!({"a": []})), one("a", "minItems", "`a` must have at least 1 item"));
    assert_eq!(said(s.clone(), json!({"b": [1]})), one("b", "minItems", "`b` must have at least 2 items"));
    assert_eq!(said(s.clone(), json!({"b": [1, 2]})), one("b", "maxItems", "`b` must have at most 1 item (got 2)"));
    assert_eq!(said(s.clone(), json!({"a": [{"id": "x"}, {"id": "y"}, {"id": "z"}]})), one("a", "maxItems", "`a` must have at most 2 items (got 3)"));
    // Uniqueness compares canonical JSON: key order does not make two objects differ.
    assert_eq!(said(json!({"uniqueItems": true}), json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}])), one("[1]", "uniqueItems", "the body must not repeat items ({\"b\":2,\"a\":1} appears twice)"));
    // Items are checked with their index in the path, nested below objects.
    assert_eq!(said(s, json!({"a": [{"id": "x"}, {"id": 3}]})), one("a[1].id", "type", "`a[1].id` must be a string"));
}

#[test]
fn references_are_followed_at_any_depth() {
    let extra = json!({
        "Address": {"type": "object", "required": ["city"], "properties": {"city": {"$ref": "#/components/schemas/City"}}},
        "City": {"type": "string", "minLength": 2}});
    let s = json!({"properties": {"home": {"$ref": "#/components/schemas/Address"}, "past": {"type": "array", "items": {"$ref": "#/components/schemas/Address"}}}});
    assert!(said_with(extra.clone(), s.clone(), json!({"home": {"city": "Leeds"}})).is_empty());
    assert_eq!(said_with(extra.clone(), s.clone(), json!({"home": {"city": "L"}})), one("home.city", "minLength", "`home.city` must be at least 2 characters"));
    assert_eq!(said_with(extra, s, json!({"past": [{"city": "York"}, {}]})), one("past[1].city", "required", "`past[1].city` is required"));
}

#[test]
fn one_of_without_a_selector_reports_the_closest_shape_or_an_overlap() {
    let s = json!({"properties": {"v": {"oneOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 0}]}}});
    assert!(said(s.clone(), json!({"v": "ab"})).is_empty());
    assert!(said(s.clone(), json!({"v": 3})).is_empty());
    // Neither matches: the branch of the right type is the one reported.
    assert_eq!(said(s.clone(), json!({"v": "abc"})), one("v", "maxLength", "`v` must be at most 2 characters (got 3)"));
    assert_eq!(said(s.clone(), json!({"v": -1})), one("v", "minimum", "`v` must be at least 0"));
    // Both match: an overlap is refused by name.
    let both = json!({"oneOf": [{"type": "object"}, {"type": "object", "properties": {"a": {}}}]});
    assert_eq!(said(both, json!({"a": 1})), one("", "oneOf", "the body matches more than one allowed shape; send exactly one of the alternatives"));
}

#[test]
fn a_discriminator_value_outside_its_mapping_is_named() {
    let extra = json!({
        "A": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "a"}}},
        "B": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "b"}}}});
    let s = json!({"properties": {"p": {"oneOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}],
        "discriminator": {"propertyName": "kind", "mapping": {"a": "#/components/schemas/A", "b": "#/components/schemas/B"}}}}});
    assert!(said_with(extra.clone(), s.clone(), json!({"p": {"kind": "b"}})).is_empty());
    assert_eq!(said_with(extra.clone(), s.clone(), json!({"p": {"kind": "c"}})), one("p.kind", "discriminator", "`p.kind` must be one of a, b"));
    // Without the tag the shapes are tried in turn, as any oneOf.
    assert_eq!(said_with(extra, s, json!({"p": {}})).iter().map(|x| x.1).collect::<Vec<_>>(), vec!["required"]);
}

#[test]
fn at_most_twenty_violations_are_reported() {
    let s = json!({"type": "array", "items": {"type": "string"}});
    let got = said(s, json!((0..50).collect::<Vec<_>>()));
    assert_eq!(got.len(), MAX_VIOLATIONS);
    assert_eq!(got[0], ("[0]".to_string(), "type", "`[0]` must be a string".to_string()));
    assert_eq!(got[19].0, "[19]");
}

#[test]
fn broken_schemas_are_refused_at_start_up() {
    let bad_pattern = json!({"T": {"pattern": "("}});
    assert!(Validator::new(bad_pattern.as_object().unwrap().clone(), &[]).err().unwrap().starts_with("bad pattern ("));
    let dangling = json!({"T": {"properties": {"a": {"$ref": "#/components/schemas/Nowhere"}}}});
    assert_eq!(Validator::new(dangling.as_object().unwrap().clone(), &[]).err().unwrap(), "dangling $ref #/components/schemas/Nowhere");
    // Query parameter schemas are checked as well.
    let extra = json!({"pattern": "[z-a]"});
    assert!(Validator::new(Map::new(), &[&extra]).is_err());
}

#[test]
fn every_schema_of_the_document_parses_and_names_only_keywords_the_validator_knows() {
    // A keyword the validator does not implement would be silently ignored;
    // this lists what it implements (and the annotations it skips) and
    // walks the whole document.
    const KNOWN: &[&str] = &[
        "$ref",
        "type",
        "const",
        "enum",
        "oneOf",
        "discriminator",
        "propertyName",
        "mapping",
        "minLength",
        "maxLength",
        "x-maxWords",
        "pattern",
        "x-patternMessage",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "items",
        "required",
        "propertyNames",
        "properties",
        "additionalProperties",
        "minProperties",
        "maxProperties",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        // Annotations: they document, they do not constrain.
        "description",
        "title",
        "example",
        "examples",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "nullable",
    ];
    let v = Validator::from_sources(openapi::schema_sources());
    v.check_all(&[]).unwrap();
    fn walk(v: &Value, at: &str, unknown: &mut Vec<String>) {
        let Some(m) = v.as_object() else { return };
        for (k, x) in m {
            if !KNOWN.contains(&k.as_str()) {
                unknown.push(format!("{at}: {k}"));
            }
            match k.as_str() {
                // Maps of names to schemas, and lists of values.
                "properties" | "mapping" => {
                    for (name, s) in x.as_object().into_iter().flatten() {
                        walk(s, &format!("{at}.{name}"), unknown);
                    }
                }
                "enum" | "const" | "required" | "example" | "examples" | "default" => {}
                _ => match x {
                    Value::Array(a) => a.iter().for_each(|s| walk(s, at, unknown)),
                    s => walk(s, at, unknown),
                },
            }
        }
    }
    let mut unknown = Vec::new();
    for (name, s) in v.all_schemas() {
        walk(&s, &name, &mut unknown);
    }
    assert!(unknown.is_empty(), "keywords the validator does not implement: {unknown:?}");
}
