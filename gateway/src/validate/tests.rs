//! The validator's unit tests: messages that name the field and rule,
//! discriminator-driven oneOf, and the direct checks against their patterns.

use super::*;
use serde_json::json;

#[test]
fn the_direct_checks_agree_with_their_patterns() {
    let v = Validator::new(Map::new(), &[]).unwrap();
    for p in [openapi::NO_NUL_PATTERN, openapi::NON_BLANK_PATTERN] {
        let re = Regex::new(p).unwrap();
        for text in ["", " ", "a", " a ", "\u{0}", "a\u{0}", "\t\n", "\u{a0}", "\u{1c}", "\u{2003}x", "é", "\u{3000}", "\u{85}", "\u{feff}", "\u{b} \u{c}"] {
            assert_eq!(v.matches(p, text), re.is_match(text), "{p} on {text:?}");
        }
    }
    // Every character alone: the listed blank set is exactly what
    // `char::is_whitespace` (and so `str::trim`, the components' check)
    // calls blank, U+0085 included and U+FEFF not.
    let non_blank = Regex::new(openapi::NON_BLANK_PATTERN).unwrap();
    for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
        let text = c.to_string();
        assert_eq!(non_blank.is_match(&text), c != '\0' && !c.is_whitespace(), "U+{:04X}", c as u32);
        assert_eq!(v.matches(openapi::NON_BLANK_PATTERN, &text), non_blank.is_match(&text), "U+{:04X}", c as u32);
    }
}

fn validator() -> Validator {
    let schemas = json!({
        "Thing": {"type": "object", "additionalProperties": false, "required": ["id", "name"],
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "name": {"type": "string", "minLength": 1, "maxLength": 5},
                "mobile": {"type": "string", "pattern": "^\\+[1-9][0-9]{7,14}$"},
                "n": {"type": "integer", "minimum": 50, "maximum": 1000, "multipleOf": 50},
                "tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
                "words": {"type": "string", "x-maxWords": 3},
                "code": {"type": "string", "pattern": "^[0-9]+$", "x-patternMessage": "must be digits"},
                "kind": {"enum": ["a", "b"]}
            }},
        "Shape": {"oneOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}],
            "discriminator": {"propertyName": "channel", "mapping": {"a": "#/components/schemas/A", "b": "#/components/schemas/B"}}},
        "A": {"type": "object", "additionalProperties": false, "required": ["channel", "x"], "properties": {"channel": {"const": "a"}, "x": {"type": "string"}}},
        "B": {"type": "object", "additionalProperties": false, "required": ["channel", "y"], "properties": {"channel": {"const": "b"}, "y": {"type": "string"}}}
    });
    Validator::new(schemas.as_object().unwrap().clone(), &[]).unwrap()
}

fn rules(v: &Validator, name: &str, body: Value) -> Vec<(String, &'static str)> {
    match v.validate(v.schema(name).unwrap(), &body) {
        Ok(()) => vec![],
        Err(e) => e.into_iter().map(|x| (x.field, x.rule)).collect(),
    }
}

#[test]
fn names_field_and_rule() {
    let v = validator();
    let id = "0190c0de-0000-7000-8000-000000000000";
    assert!(rules(&v, "Thing", json!({"id": id, "name": "ab"})).is_empty());
    assert_eq!(rules(&v, "Thing", json!({"id": id})), vec![("name".into(), "required")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "ab", "zz": 1})), vec![("zz".into(), "additionalProperties")]);
    assert_eq!(rules(&v, "Thing", json!({"id": "nope", "name": "ab"})), vec![("id".into(), "format")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "abcdef"})), vec![("name".into(), "maxLength")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "a", "mobile": "0044"})), vec![("mobile".into(), "pattern")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "a", "n": 75})), vec![("n".into(), "multipleOf")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "a", "n": 1050})), vec![("n".into(), "maximum")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "a", "n": 1.5})), vec![("n".into(), "type")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "a", "tags": ["x", "x"]})), vec![("tags[1]".into(), "uniqueItems")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "a", "words": "one two  three four"})), vec![("words".into(), "x-maxWords")]);
    assert_eq!(rules(&v, "Thing", json!({"id": id, "name": "a", "kind": "c"})), vec![("kind".into(), "enum")]);
    // A pattern with its words says them instead of the expression.
    let said = v.validate(v.schema("Thing").unwrap(), &json!({"id": id, "name": "a", "code": "x1"})).unwrap_err();
    assert_eq!(said.iter().map(|e| e.message.as_str()).collect::<Vec<_>>(), vec!["`code` must be digits"]);
}

/// Shapes chosen by `channel`, as the agent and iteration bodies are.
fn by_channel() -> Validator {
    let schemas = json!({
        "Agent": {"oneOf": [{"$ref": "#/components/schemas/Chat"}, {"$ref": "#/components/schemas/Voice"}],
            "discriminator": {"propertyName": "channel", "mapping": {"chat": "#/components/schemas/Chat", "voice": "#/components/schemas/Voice"}}},
        "Chat": {"type": "object", "additionalProperties": false, "required": ["channel", "opening"], "properties": {
            "channel": {"const": "chat"}, "opening": {"type": "string"},
            "assignment": {"oneOf": [{"type": "null"}, {"type": "object", "additionalProperties": false, "properties": {"phone": {"type": "string"}}}]}}},
        "Voice": {"type": "object", "additionalProperties": false, "required": ["channel"], "properties": {
            "channel": {"const": "voice"}, "voiceSettings": {"type": "object"},
            "assignment": {"oneOf": [{"type": "null"}, {"type": "object", "additionalProperties": false, "properties": {"account": {"type": "string"}}}]}}},
        "Iteration": {"type": "object", "properties": {"it": {"oneOf": [
            {"type": "object", "additionalProperties": false, "required": ["channel", "ids"], "properties": {"channel": {"const": "voice"}, "ids": {"type": "array"}}},
            {"type": "object", "additionalProperties": false, "required": ["channel", "cats"], "properties": {"channel": {"const": "voice"}, "cats": {"type": "array"}}},
            {"type": "object", "additionalProperties": false, "required": ["channel", "ids", "opening"], "properties": {"channel": {"const": "chat"}, "ids": {"type": "array"}, "opening": {"type": "string"}}}]}}}
    });
    Validator::new(schemas.as_object().unwrap().clone(), &[]).unwrap()
}

fn messages(v: &Validator, name: &str, body: Value) -> Vec<String> {
    v.validate(v.schema(name).unwrap(), &body).err().unwrap_or_default().into_iter().map(|x| x.message).collect()
}

#[test]
fn a_field_of_another_channel_is_named_with_the_channel() {
    let v = by_channel();
    assert!(messages(&v, "Agent", json!({"channel": "voice", "voiceSettings": {}})).is_empty());
    assert_eq!(messages(&v, "Agent", json!({"channel": "chat", "opening": "hi", "voiceSettings": {}})), vec!["`voiceSettings` is not allowed when `channel` is \"chat\""]);
    assert_eq!(messages(&v, "Agent", json!({"channel": "voice", "opening": "hi"})), vec!["`opening` is not allowed when `channel` is \"voice\""]);
    assert_eq!(messages(&v, "Agent", json!({"channel": "chat"})), vec!["`opening` is required when `channel` is \"chat\""]);
    // Nested, and through the null-or-object choice: the object shape is the closer one.
    assert_eq!(messages(&v, "Agent", json!({"channel": "chat", "opening": "hi", "assignment": {"account": "a"}})), vec!["`assignment.account` is not allowed when `channel` is \"chat\""]);
    // Unknown everywhere: the plain message.
    assert_eq!(messages(&v, "Agent", json!({"channel": "chat", "opening": "hi", "zz": 1})), vec!["unknown property `zz`"]);
    // Without a discriminator: the shape whose `channel` matches is the one reported.
    assert!(messages(&v, "Iteration", json!({"it": {"channel": "voice", "cats": []}})).is_empty());
    assert_eq!(messages(&v, "Iteration", json!({"it": {"channel": "voice", "ids": [], "opening": "hi"}})), vec!["`it.opening` is not allowed when `it.channel` is \"voice\""]);
    assert_eq!(messages(&v, "Iteration", json!({"it": {"channel": "chat", "ids": []}})), vec!["`it.opening` is required when `it.channel` is \"chat\""]);
    // A field another shape of the same channel takes keeps the plain message.
    assert_eq!(messages(&v, "Iteration", json!({"it": {"channel": "voice", "ids": [], "cats": []}})), vec!["unknown property `it.cats`"]);
}

#[test]
fn one_of_uses_the_discriminator() {
    let v = validator();
    assert!(rules(&v, "Shape", json!({"channel": "a", "x": "1"})).is_empty());
    assert_eq!(rules(&v, "Shape", json!({"channel": "a", "y": "1"})), vec![("x".into(), "required"), ("y".into(), "additionalProperties")]);
    assert_eq!(rules(&v, "Shape", json!({"channel": "q"})), vec![("channel".into(), "discriminator")]);
}
