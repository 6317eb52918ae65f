//! The offline responder. Its reply to a chat turn is always
//!
//! ```text
//! Thanks for your message: "<last customer text, at most 200 characters>". An agent will follow up.
//! ```
//!
//! (without a customer message: `Thanks for your message. An agent will
//! follow up.`), except:
//!
//! * grounded: when the instructions carry passages of the agent's sources,
//!   it answers from the first one and names its source
//!   (`From <source>: <text>`);
//! * a voice turn (`respond` offering the `end_call` tool): a greeting
//!   without customer words, `You said: "…". How can I help further?`, and
//!   a customer's goodbye answered by calling `end_call` with `Thank you
//!   for your time. Goodbye.`, so sandbox calls end the way a model would
//!   end them;
//! * with the `lookup` tool ([`respond`]): the first word of the customer's
//!   last message that holds a digit (a code such as `B2`) is looked up in
//!   the first field of the first source offered, and a lookup that found
//!   rows is answered from the first one.

use crate::bindings::exports::switchboard::provider::ai::{Answer, Lookup, LookupSource};

/// At most this many characters of the customer's text are quoted.
pub const QUOTE_CHARS: usize = 200;

/// A voice turn's last words when the customer said goodbye.
pub const GOODBYE: &str = "Thank you for your time. Goodbye.";

/// The heading under which an agent turn's instructions carry the passages
/// of its data sources, one `[Source name] text` line each (written by
/// `components/agent-runtime/src/grounding.rs`).
const KNOWLEDGE: &str = "\n\nKnowledge from the business's data sources";

/// How the area words a lookup that found nothing.
const NO_ROWS: &str = "No rows";

/// The first passage of the instructions' knowledge section: (source, text).
fn first_passage(instructions: &str) -> Option<(&str, &str)> {
    let section = &instructions[instructions.find(KNOWLEDGE)? + KNOWLEDGE.len()..];
    let line = section.lines().find(|l| l.starts_with('['))?;
    let (source, text) = line[1..].split_once("] ")?;
    Some((source, text))
}

/// `complete`: the reply to `history` (oldest first, (role, text)).
pub fn offline(instructions: &str, history: &[(String, String)]) -> String {
    let last = history.iter().rev().find(|(role, _)| role == "user");
    if let Some((source, text)) = first_passage(instructions).filter(|_| !says_bye(history)) {
        return format!("From {source}: {text}");
    }
    match last {
        Some((_, text)) => {
            let quoted: String = text.chars().take(QUOTE_CHARS).collect();
            format!("Thanks for your message: \"{quoted}\". An agent will follow up.")
        }
        None => "Thanks for your message. An agent will follow up.".to_string(),
    }
}

/// The customer's last words say goodbye.
fn says_bye(history: &[(String, String)]) -> bool {
    history.iter().rev().find(|(role, _)| role == "user").is_some_and(|(_, text)| text.to_lowercase().contains("bye"))
}

/// A reply without a lookup: a voice turn's (`end_call` offered) or
/// [`offline`]'s.
fn reply(instructions: &str, history: &[(String, String)], end_call: bool) -> Answer {
    if !end_call {
        return Answer::Text(offline(instructions, history));
    }
    if says_bye(history) {
        return Answer::EndCall(GOODBYE.to_string());
    }
    if let Some((source, text)) = first_passage(instructions) {
        return Answer::Text(format!("From {source}: {text}"));
    }
    Answer::Text(match history.iter().rev().find(|(role, _)| role == "user") {
        Some((_, text)) => {
            let quoted: String = text.chars().take(QUOTE_CHARS).collect();
            format!("You said: \"{quoted}\". How can I help further?")
        }
        None => "Hello, thank you for taking my call.".to_string(),
    })
}

/// `respond`: a reply, a `lookup` first, or `end_call` (see the module's
/// rules).
pub fn respond(instructions: &str, history: &[(String, String)], sources: &[LookupSource], done: &[(Lookup, String)], end_call: bool) -> Answer {
    if let Some((call, rows)) = done.last() {
        if let Some(row) = rows.lines().next().filter(|_| !rows.starts_with(NO_ROWS)) {
            return Answer::Text(format!("From {} ({} = {}): {row}", call.source, call.field, call.value));
        }
        return reply(instructions, history, end_call);
    }
    let last = history.iter().rev().find(|(role, _)| role == "user").map(|(_, t)| t.as_str()).unwrap_or_default();
    let code = last.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')).find(|w| w.chars().any(|c| c.is_ascii_digit()));
    match (sources.first(), code) {
        (Some(source), Some(code)) if !source.fields.is_empty() => {
            Answer::Lookup(Lookup { id: "lookup-1".into(), source: source.name.clone(), field: source.fields[0].clone(), value: code.to_string() })
        }
        _ => reply(instructions, history, end_call),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn offline_quotes_the_last_customer_text() {
        let r = offline("", &h(&[("user", "first"), ("assistant", "x"), ("user", "opening hours?")]));
        assert_eq!(r, "Thanks for your message: \"opening hours?\". An agent will follow up.");
        let long = "é".repeat(300);
        assert_eq!(offline("", &h(&[("user", &long)])), format!("Thanks for your message: \"{}\". An agent will follow up.", "é".repeat(200)));
        assert_eq!(offline("", &[]), "Thanks for your message. An agent will follow up.");
    }

    #[test]
    fn voice_turns_end_the_call_on_a_goodbye_by_the_tool() {
        let text = |a: Answer| match a {
            Answer::Text(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(text(respond("Be brief.", &[], &[], &[], true)), "Hello, thank you for taking my call.");
        assert!(text(respond("Be brief.", &h(&[("user", "Could you tell me more?")]), &[], &[], true)).starts_with("You said:"));
        assert!(matches!(respond("Be brief.", &h(&[("user", "Thanks, that's all. Goodbye.")]), &[], &[], true), Answer::EndCall(t) if t == GOODBYE));
        assert!(matches!(respond("", &h(&[("user", "Goodbye.")]), &[], &[], false), Answer::Text(t) if t.starts_with("Thanks for your message")), "chat replies never end a call");
    }

    #[test]
    fn offline_replies_answer_from_the_first_passage() {
        let grounded = "Answer.\n\nKnowledge from the business's data sources (answer from it when it helps, and say which source):\n[Prices] Name: Widget; Price: 10\n[Hours] Open 9 to 5.";
        assert_eq!(offline(grounded, &h(&[("user", "How much is the widget?")])), "From Prices: Name: Widget; Price: 10");
        assert_eq!(offline("Answer.", &h(&[("user", "How much is the widget?")])), "Thanks for your message: \"How much is the widget?\". An agent will follow up.");
    }

    #[test]
    fn offline_lookups_find_a_code_then_answer_from_the_row() {
        let prices = vec![LookupSource { name: "Prices".into(), fields: vec!["sku".into(), "price".into()] }];
        let asked = h(&[("user", "How much is B2?")]);
        let call = match respond("", &asked, &prices, &[], false) {
            Answer::Lookup(l) => l,
            other => panic!("{other:?}"),
        };
        assert_eq!((call.source.as_str(), call.field.as_str(), call.value.as_str()), ("Prices", "sku", "B2"));
        let found = vec![(call.clone(), "sku: B2; price: 20".to_string())];
        assert!(matches!(respond("", &asked, &prices, &found, false), Answer::Text(t) if t == "From Prices (sku = B2): sku: B2; price: 20"));
        let none = vec![(call, "No rows match.".to_string())];
        assert!(matches!(respond("", &asked, &prices, &none, false), Answer::Text(t) if t.starts_with("Thanks for your message")));
        assert!(matches!(respond("", &h(&[("user", "How much?")]), &prices, &[], false), Answer::Text(_)));
        assert!(matches!(respond("", &asked, &[], &[], false), Answer::Text(_)));
    }
}
