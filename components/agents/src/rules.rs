//! Agent rules the JSON schema cannot express, and the reference-name
//! generator. Pure (no host calls); unit-tested natively.

use serde_json::{json, Map, Value};
use switchboard_agent_runtime::template;

/// A violated rule: (snake_case code, message naming the field).
pub type Violation = (&'static str, String);

pub const MAX_INSTRUCTION_WORDS: usize = 20_000;
pub const MAX_GREETING_WORDS: usize = 30;
/// The contract's limit on update (1 to 120 characters); it leaves create
/// to us, and a create takes the same limit (a 130-character name without
/// a space widened the console's pages).
pub const MAX_NAME_CHARS: usize = 120;
pub const DEFAULT_NOISE_LEVEL: i64 = 300;
pub const DEFAULT_NUDGE_SECONDS: i64 = 12;

/// Words as the gateway's `x-maxWords` counts them: whitespace-separated.
pub fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

/// `^[a-zA-Z][a-zA-Z0-9_]{0,63}$` (variable field keys and aliases): the
/// template language's alias, so a declared alias is always one a
/// placeholder can name.
pub use switchboard_agent_runtime::template::is_alias as is_key;

pub use switchboard_guest::fail::quote;

/// A trimmed agent name: at least one visible character, at most 120 in all.
pub fn agent_name(raw: &str) -> Result<String, Violation> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(("invalid_name", "`name` must contain at least one non-space character".into()));
    }
    if raw.chars().count() > MAX_NAME_CHARS {
        return Err(("invalid_name", format!("`name` must be at most {MAX_NAME_CHARS} characters")));
    }
    Ok(name.to_string())
}

/// Instructions: 1 to 20,000 words (kept exactly as sent).
pub fn instructions(raw: &str) -> Result<(), Violation> {
    let words = word_count(raw);
    if words == 0 {
        return Err(("invalid_instructions", "`instructions` must contain at least one word".into()));
    }
    if words > MAX_INSTRUCTION_WORDS {
        return Err(("instructions_too_long", format!("`instructions` must be at most {MAX_INSTRUCTION_WORDS} words (got {words})")));
    }
    Ok(())
}

/// `languageCode`: default `en`; otherwise a BCP 47 style tag such as `en`,
/// `pt-BR` or `zh-Hant-TW` (letters, then hyphen-separated alphanumeric
/// subtags), at most 35 characters.
pub fn language_code(raw: Option<&str>) -> Result<String, Violation> {
    let Some(code) = raw else { return Ok("en".into()) };
    let bad = || ("invalid_language_code", format!("`languageCode` `{}` must be a language tag such as `en` or `pt-BR`", quote(code, 40)));
    if code.is_empty() || code.len() > 35 {
        return Err(bad());
    }
    let mut parts = code.split('-');
    let first = parts.next().unwrap_or("");
    if !(2..=8).contains(&first.len()) || !first.bytes().all(|c| c.is_ascii_alphabetic()) {
        return Err(bad());
    }
    for p in parts {
        if !(1..=8).contains(&p.len()) || !p.bytes().all(|c| c.is_ascii_alphanumeric()) {
            return Err(bad());
        }
    }
    Ok(code.to_string())
}

/// The `{{alias}}` placeholders of a text, in order of appearance, by the
/// agent runtime's template language (the parser that fills them at run
/// time; its rules are in `components/agent-runtime/src/template.rs`). An
/// unclosed `{{` or a placeholder that is not an alias is a violation.
pub fn placeholders(field: &str, text: &str) -> Result<Vec<String>, Violation> {
    match template::parse(text) {
        Ok(t) => Ok(t.aliases().map(String::from).collect()),
        Err(template::Error::Unclosed { .. }) => Err(("invalid_placeholder", format!("`{field}` has an unclosed `{{{{`; placeholders look like {{{{alias}}}}"))),
        Err(template::Error::NotAnAlias { inner }) => Err(("invalid_placeholder", format!("`{field}` placeholder `{{{{{}}}}}` must name a declared variable alias", quote(&inner, 64)))),
    }
}

/// Property order of the voice settings in records.
const VOICE_KEYS: [&str; 11] = [
    "liveVoiceId",
    "language",
    "agentGender",
    "backgroundNoiseKey",
    "backgroundNoiseLevelPercent",
    "firstGreeting",
    "allowGreetingInterrupt",
    "nudgeAfterSilenceSeconds",
    "disconnectAfterSilenceSeconds",
    "maxCallDurationSeconds",
    "repeatInterruptedSentence",
];

/// Checks voice settings (already schema-valid in shape) against the rules
/// and returns the effective settings: the given values plus the defaults
/// (`backgroundNoiseLevelPercent` 300, `allowGreetingInterrupt` false,
/// `nudgeAfterSilenceSeconds` 12), in a fixed property order. `aliases` are
/// the agent's declared variable aliases (for `firstGreeting` placeholders).
pub fn voice_settings(given: Option<&Map<String, Value>>, aliases: &[&str]) -> Result<Map<String, Value>, Violation> {
    let empty = Map::new();
    let given = given.unwrap_or(&empty);
    if let Some(k) = given.keys().find(|k| !VOICE_KEYS.contains(&k.as_str())) {
        return Err(("invalid_voice_settings", format!("`voiceSettings.{}` is not a voice setting", quote(k, 64))));
    }
    for k in ["liveVoiceId", "language", "backgroundNoiseKey"] {
        if let Some(v) = given.get(k) {
            match v.as_str() {
                Some(s) if !s.trim().is_empty() => {}
                _ => return Err(("invalid_voice_settings", format!("`voiceSettings.{k}` must be a non-empty string"))),
            }
        }
    }
    if let Some(v) = given.get("agentGender") {
        if !matches!(v.as_str(), Some("male" | "female")) {
            return Err(("invalid_agent_gender", "`voiceSettings.agentGender` must be `male` or `female`".into()));
        }
    }
    if let Some(v) = given.get("backgroundNoiseLevelPercent") {
        let ok = v.as_i64().is_some_and(|n| (50..=1000).contains(&n) && n % 50 == 0);
        if !ok {
            return Err(("invalid_background_noise_level", "`voiceSettings.backgroundNoiseLevelPercent` must be 50 to 1000 in steps of 50".into()));
        }
    }
    for k in ["nudgeAfterSilenceSeconds", "disconnectAfterSilenceSeconds", "maxCallDurationSeconds"] {
        if let Some(v) = given.get(k) {
            if !v.as_f64().is_some_and(|n| n.is_finite() && n > 0.0) {
                return Err(("invalid_voice_settings", format!("`voiceSettings.{k}` must be a number of seconds greater than 0")));
            }
        }
    }
    for k in ["allowGreetingInterrupt", "repeatInterruptedSentence"] {
        if let Some(v) = given.get(k) {
            if !v.is_boolean() {
                return Err(("invalid_voice_settings", format!("`voiceSettings.{k}` must be a boolean")));
            }
        }
    }
    if let Some(v) = given.get("firstGreeting") {
        let Some(g) = v.as_str() else {
            return Err(("invalid_first_greeting", "`voiceSettings.firstGreeting` must be a string".into()));
        };
        let words = word_count(g);
        if words > MAX_GREETING_WORDS {
            return Err(("first_greeting_too_long", format!("`voiceSettings.firstGreeting` must be at most {MAX_GREETING_WORDS} words (got {words})")));
        }
        for p in placeholders("voiceSettings.firstGreeting", g)? {
            if !aliases.contains(&p.as_str()) {
                return Err(("undeclared_placeholder", format!("`voiceSettings.firstGreeting` uses `{{{{{p}}}}}` but the agent declares no variable with alias `{p}` in `dataSourceVariables`")));
            }
        }
    }
    let mut out = Map::new();
    for k in VOICE_KEYS {
        let v = match (given.get(k), k) {
            (Some(v), _) => v.clone(),
            (None, "backgroundNoiseLevelPercent") => json!(DEFAULT_NOISE_LEVEL),
            (None, "allowGreetingInterrupt") => json!(false),
            (None, "nudgeAfterSilenceSeconds") => json!(DEFAULT_NUDGE_SECONDS),
            (None, _) => continue,
        };
        out.insert(k.to_string(), v);
    }
    Ok(out)
}

const ADJECTIVES: [&str; 32] = [
    "amber", "bold", "brave", "bright", "calm", "clever", "cosmic", "crisp", "eager", "fair", "gentle", "golden", "happy", "keen", "kind", "lively", "lucky", "mellow", "misty", "noble", "polite",
    "proud", "quick", "quiet", "rapid", "silver", "steady", "sunny", "swift", "tidy", "vivid", "witty",
];
const NOUNS: [&str; 32] = [
    "badger", "beacon", "breeze", "canyon", "cedar", "comet", "falcon", "fern", "garden", "harbor", "heron", "island", "lagoon", "lantern", "maple", "meadow", "otter", "pebble", "pine", "planet",
    "puffin", "raven", "river", "robin", "sparrow", "summit", "thistle", "tiger", "valley", "willow", "wren", "zephyr",
];

/// `adjective-noun-4hex` from four random bytes, e.g. `swift-heron-3fa9`.
pub fn reference_name(bytes: &[u8]) -> String {
    let b = |i: usize| bytes.get(i).copied().unwrap_or(0);
    format!("{}-{}-{:02x}{:02x}", ADJECTIVES[(b(0) % 32) as usize], NOUNS[(b(1) % 32) as usize], b(2), b(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_instructions() {
        assert_eq!(word_count("  one two\tthree\nfour "), 4);
        assert!(instructions("be nice").is_ok());
        assert_eq!(instructions("   \n").unwrap_err().0, "invalid_instructions");
        let ok = "w ".repeat(20_000);
        assert!(instructions(&ok).is_ok());
        let long = "w ".repeat(20_001);
        assert_eq!(instructions(&long).unwrap_err().0, "instructions_too_long");
    }

    #[test]
    fn names() {
        assert_eq!(agent_name("  Ada  ").unwrap(), "Ada");
        assert_eq!(agent_name("  ").unwrap_err().0, "invalid_name");
        assert!(agent_name(&"x".repeat(120)).is_ok());
        assert_eq!(agent_name(&"x".repeat(121)).unwrap_err().0, "invalid_name");
    }

    #[test]
    fn language_codes() {
        assert_eq!(language_code(None).unwrap(), "en");
        for ok in ["en", "pt-BR", "zh-Hant-TW", "es-419"] {
            assert_eq!(language_code(Some(ok)).unwrap(), ok);
        }
        for bad in ["", "e", "en_US", "en-", "-en", "1a", "en-toolongsubtag"] {
            assert_eq!(language_code(Some(bad)).unwrap_err().0, "invalid_language_code", "{bad}");
        }
    }

    #[test]
    fn placeholder_parsing() {
        assert_eq!(placeholders("g", "Hi {{name}}, {{ city }}!").unwrap(), vec!["name", "city"]);
        assert!(placeholders("g", "no placeholders } {").unwrap().is_empty());
        assert_eq!(placeholders("g", "Hi {{name").unwrap_err().0, "invalid_placeholder");
        assert_eq!(placeholders("g", "Hi {{1x}}").unwrap_err().0, "invalid_placeholder");
        assert_eq!(placeholders("g", "Hi {{}}").unwrap_err().0, "invalid_placeholder");
    }

    #[test]
    fn voice_defaults_and_rules() {
        let eff = voice_settings(None, &[]).unwrap();
        assert_eq!(Value::Object(eff), json!({"backgroundNoiseLevelPercent": 300, "allowGreetingInterrupt": false, "nudgeAfterSilenceSeconds": 12}));
        let given = json!({"nudgeAfterSilenceSeconds": 5, "agentGender": "female", "firstGreeting": "Hello {{first}}"});
        let eff = voice_settings(given.as_object(), &["first"]).unwrap();
        assert_eq!(eff["nudgeAfterSilenceSeconds"], json!(5));
        assert_eq!(eff["backgroundNoiseLevelPercent"], json!(300));
        assert_eq!(eff.keys().next().unwrap(), "agentGender");

        let bad = |v: Value, aliases: &[&str]| voice_settings(v.as_object(), aliases).unwrap_err().0;
        assert_eq!(bad(json!({"backgroundNoiseLevelPercent": 75}), &[]), "invalid_background_noise_level");
        assert_eq!(bad(json!({"backgroundNoiseLevelPercent": 1050}), &[]), "invalid_background_noise_level");
        assert_eq!(bad(json!({"agentGender": "robot"}), &[]), "invalid_agent_gender");
        assert_eq!(bad(json!({"firstGreeting": "w ".repeat(31)}), &[]), "first_greeting_too_long");
        assert!(voice_settings(json!({"firstGreeting": "w ".repeat(30)}).as_object(), &[]).is_ok());
        assert_eq!(bad(json!({"firstGreeting": "Hi {{ghost}}"}), &["first"]), "undeclared_placeholder");
        assert_eq!(bad(json!({"nudgeAfterSilenceSeconds": 0}), &[]), "invalid_voice_settings");
        assert_eq!(bad(json!({"liveVoiceId": " "}), &[]), "invalid_voice_settings");
        assert_eq!(bad(json!({"colour": "red"}), &[]), "invalid_voice_settings");
    }

    #[test]
    fn reference_names_have_three_parts() {
        let n = reference_name(&[0, 1, 0x3f, 0xa9]);
        assert_eq!(n, "amber-beacon-3fa9");
        for seed in 0..=255u8 {
            let n = reference_name(&[seed, seed.wrapping_mul(7), seed, 255 - seed]);
            let parts: Vec<&str> = n.split('-').collect();
            assert_eq!(parts.len(), 3, "{n}");
            assert!(parts[0].bytes().all(|c| c.is_ascii_lowercase()) && parts[1].bytes().all(|c| c.is_ascii_lowercase()));
            assert!(parts[2].len() == 4 && parts[2].bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        }
    }
}
