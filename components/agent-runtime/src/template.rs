//! The template language of agent texts: a voice agent's `firstGreeting`
//! and a chatapp campaign's `openingMessage`. One parser ([`parse`]) serves
//! both the checks when a text is written (the agents area) and the filling
//! when it is used (a call's greeting, a campaign's openings), so the two
//! can never disagree.
//!
//! The rules:
//!
//! 1. Text is literal (any Unicode), except `{{`, which opens a
//!    placeholder. A single `{` or `}`, and a `}}` that no `{{` opened, are
//!    literal.
//! 2. A placeholder ends at the first `}}` after its `{{`. What is between,
//!    with the whitespace around it trimmed, is an alias: an ASCII letter,
//!    then up to 63 ASCII letters, digits or underscores (the pattern of
//!    declared variables' aliases). `{{ name }}` is `{{name}}`.
//! 3. Anything else is an error, never literal text: an unclosed `{{`
//!    ([`Error::Unclosed`]), an empty placeholder, one with inner spaces,
//!    non-ASCII letters or a leading digit, and a `{{` inside a placeholder
//!    (`{{a {{b}}` holds `a {{b`; templates do not nest)
//!    ([`Error::NotAnAlias`]).
//! 4. There is no escape: a literal `{{` cannot be written (a greeting is
//!    spoken, an opening message is a chat text; neither needs it).
//! 5. Filling replaces each placeholder with its alias's value, verbatim
//!    (a value is never parsed itself); the first alias without a value is
//!    the error ([`Unfilled::Missing`]). Which aliases a text may name is
//!    its writer's rule (the agents area: the agent's declared variables).
//!
//! Why our own: the language is these five rules, and a template engine's
//! richer syntax (blocks, comments, filters) would give meaning to text
//! that stored greetings and openings already hold as literal.

use std::collections::BTreeMap;
use std::fmt;

/// `^[a-zA-Z][a-zA-Z0-9_]{0,63}$`: a declared variable's alias (and field
/// key), and what a placeholder holds.
pub fn is_alias(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && b.len() <= 64 && b[0].is_ascii_alphabetic() && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// A text that breaks the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A `{{` without a `}}` after it (its byte offset).
    Unclosed { at: usize },
    /// A placeholder whose content (trimmed) is not an alias.
    NotAnAlias { inner: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Unclosed { at } => write!(f, "unclosed `{{{{` at byte {at}"),
            Error::NotAnAlias { inner } => write!(f, "placeholder `{{{{{inner}}}}}` is not an alias"),
        }
    }
}

/// One piece of a parsed text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    Text(&'a str),
    Alias(&'a str),
}

/// A text that follows the rules, as its pieces in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template<'a> {
    parts: Vec<Part<'a>>,
}

/// The one parser (rules 1-4).
pub fn parse(text: &str) -> Result<Template<'_>, Error> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err(Error::Unclosed { at: text.len() - rest.len() + open });
        };
        let inner = after[..close].trim();
        if !is_alias(inner) {
            return Err(Error::NotAnAlias { inner: inner.to_string() });
        }
        if open > 0 {
            parts.push(Part::Text(&rest[..open]));
        }
        parts.push(Part::Alias(inner));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    Ok(Template { parts })
}

impl<'a> Template<'a> {
    pub fn parts(&self) -> &[Part<'a>] {
        &self.parts
    }

    /// The aliases the text names, in order of appearance (repeats kept).
    pub fn aliases(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Alias(a) => Some(*a),
            Part::Text(_) => None,
        })
    }

    /// The text with each placeholder replaced by its value (rule 5); the
    /// first alias without a value is the error.
    pub fn fill(&self, values: &BTreeMap<String, String>) -> Result<String, String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Alias(a) => out.push_str(values.get(*a).ok_or_else(|| a.to_string())?),
            }
        }
        Ok(out)
    }
}

/// Why a text could not be filled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfilled {
    /// The text breaks the rules (only a text nobody checked when it was
    /// written: a campaign's opening message).
    Invalid(Error),
    /// The first alias without a value.
    Missing(String),
}

/// Parses and fills `text` in one go.
pub fn fill(text: &str, values: &BTreeMap<String, String>) -> Result<String, Unfilled> {
    parse(text).map_err(Unfilled::Invalid)?.fill(values).map_err(Unfilled::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn aliases(text: &str) -> Vec<&str> {
        parse(text).unwrap().aliases().collect()
    }

    #[test]
    fn closed_placeholders_are_aliases_and_fill_verbatim() {
        let v = values(&[("name", "Ada"), ("city", "Paris")]);
        assert_eq!(aliases("Hi {{name}}, {{city}}!"), ["name", "city"]);
        assert_eq!(fill("Hi {{name}}, {{city}}!", &v).unwrap(), "Hi Ada, Paris!");
        assert_eq!(fill("{{name}}{{name}}", &v).unwrap(), "AdaAda");
        assert_eq!(aliases("{{a}} {{a}}"), ["a", "a"], "repeats are kept");
        // A value is never parsed itself.
        assert_eq!(fill("Hi {{name}}", &values(&[("name", "{{city}}")])).unwrap(), "Hi {{city}}");
        let longest = format!("x{}", "_".repeat(63));
        assert_eq!(aliases(&format!("{{{{{longest}}}}}")), [longest.as_str()]);
    }

    #[test]
    fn text_without_placeholders_is_literal() {
        assert_eq!(parse("").unwrap().parts(), []);
        assert_eq!(fill("no placeholders } { }} here", &values(&[])).unwrap(), "no placeholders } { }} here");
        assert_eq!(parse("a {b} c").unwrap().parts(), [Part::Text("a {b} c")]);
        assert_eq!(parse("x{{a}}y").unwrap().parts(), [Part::Text("x"), Part::Alias("a"), Part::Text("y")]);
    }

    #[test]
    fn an_unclosed_placeholder_is_an_error() {
        assert_eq!(parse("Hi {{name").unwrap_err(), Error::Unclosed { at: 3 });
        assert_eq!(parse("{{a}} and {{").unwrap_err(), Error::Unclosed { at: 10 });
        assert_eq!(parse("Hi {{name}").unwrap_err(), Error::Unclosed { at: 3 });
        assert_eq!(fill("No braces {{ here", &values(&[])).unwrap_err(), Unfilled::Invalid(Error::Unclosed { at: 10 }));
    }

    #[test]
    fn empty_and_malformed_placeholders_are_errors() {
        for (text, inner) in [("{{}}", ""), ("{{   }}", ""), ("Hi {{first name}}", "first name"), ("{{1x}}", "1x"), ("{{a-b}}", "a-b"), ("{{{a}}}", "{a")] {
            assert_eq!(parse(text).unwrap_err(), Error::NotAnAlias { inner: inner.to_string() }, "{text}");
        }
        let too_long = format!("{{{{x{}}}}}", "y".repeat(64));
        assert!(matches!(parse(&too_long), Err(Error::NotAnAlias { .. })));
    }

    #[test]
    fn placeholders_do_not_nest() {
        // The first `}}` closes the first `{{`: the content is `a {{b`.
        assert_eq!(parse("{{a {{b}} c}}").unwrap_err(), Error::NotAnAlias { inner: "a {{b".into() });
        assert_eq!(parse("{{{{a}}}}").unwrap_err(), Error::NotAnAlias { inner: "{{a".into() });
    }

    #[test]
    fn whitespace_around_the_alias_is_trimmed() {
        assert_eq!(aliases("{{ name }} {{\tname\n}} {{name }}"), ["name", "name", "name"]);
        assert_eq!(fill("Hello {{name}}, {{ name }}!", &values(&[("name", "Ada")])).unwrap(), "Hello Ada, Ada!");
        // Unicode whitespace too (an ideographic space).
        assert_eq!(aliases("{{\u{3000}name\u{3000}}}"), ["name"]);
    }

    #[test]
    fn an_alias_without_a_value_is_the_error() {
        let v = values(&[("name", "Ada")]);
        assert_eq!(fill("Hello {{city}} {{other}}", &v).unwrap_err(), Unfilled::Missing("city".into()));
        assert_eq!(parse("Hi {{ghost}}").unwrap().fill(&v).unwrap_err(), "ghost");
        // Names are case-sensitive.
        assert_eq!(fill("Hi {{Name}}", &v).unwrap_err(), Unfilled::Missing("Name".into()));
    }

    #[test]
    fn non_ascii_text_is_literal_and_non_ascii_aliases_are_errors() {
        let v = values(&[("nom", "Zoë")]);
        assert_eq!(fill("Bonjour {{nom}}, ça va ? 👋 {{ nom }}…", &v).unwrap(), "Bonjour Zoë, ça va ? 👋 Zoë…");
        assert_eq!(parse("こんにちは {{名前}}").unwrap_err(), Error::NotAnAlias { inner: "名前".into() });
        assert_eq!(parse("{{prénom}}").unwrap_err(), Error::NotAnAlias { inner: "prénom".into() });
        assert_eq!(parse("é{{").unwrap_err(), Error::Unclosed { at: 2 }, "a byte offset");
    }

    #[test]
    fn aliases_follow_the_declared_variable_pattern() {
        for ok in ["a", "Z9", "first_name", "x_1_"] {
            assert!(is_alias(ok), "{ok}");
        }
        for bad in ["", "_a", "1a", "a b", "a-b", "é", &"a".repeat(65)] {
            assert!(!is_alias(bad), "{bad}");
        }
        assert!(is_alias(&"a".repeat(64)));
    }
}
