//! Grounding: what an agent knows from its data sources, found for one
//! customer message (issue 19, first part: full-text retrieval).
//!
//! The index is one FTS5 table, `knowledge_fts` (migration 0017): a passage
//! per row, with the business, the source and the version it belongs to and
//! its place in it (`item`: a paragraph number of an unstructured source's
//! content, a row number of a structured version). The data-sources area
//! writes it ([`index_content`] when an unstructured source's content is
//! set; the ingest job for each parsed row); agent turns read it
//! ([`passages`]).
//!
//! Only what the agent may see is ever found: the query joins the agent's
//! own `agent_data_sources` of the same business, sources that are
//! `active`, and only the passages of each source's active version (an
//! unstructured source's content has version `''`), so activating a new
//! version switches retrieval in the same commit and archiving or pausing a
//! source stops it.

use crate::db::{self, RowExt};
use crate::Failure;

/// Passages an agent turn sees at most.
pub const MAX_PASSAGES: usize = 4;
/// Characters of knowledge an agent turn's instructions carry at most.
pub const BUDGET_CHARS: usize = 4_000;
/// Characters of one passage of an unstructured source.
pub const PASSAGE_CHARS: usize = 600;
/// Search terms taken from a customer message at most.
const MAX_TERMS: usize = 16;

/// One passage found for a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    pub source_id: String,
    pub source_name: String,
    pub version_id: String,
    pub item: i64,
    pub text: String,
}

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "your", "yours", "all", "any", "can", "had", "has", "have", "her", "was", "one", "our", "out",
    "what", "when", "where", "which", "who", "whom", "why", "how", "this", "that", "these", "those", "with", "from", "into", "about", "there",
    "their", "them", "they", "then", "than", "been", "being", "were", "will", "would", "could", "should", "does", "did", "doing", "just", "also",
    "much", "many", "some", "such", "only", "own", "same", "too", "very", "its", "it's", "i'm", "hi", "hello", "thanks", "thank", "please",
    "yes", "no", "me", "my", "mine", "is", "of", "to", "in", "on", "at", "by", "do", "be", "an", "or", "if", "so", "as", "up", "we", "us",
    "tell", "more", "like", "want", "need", "know",
];

/// The FTS5 query for a customer message: its words of three or more
/// letters or digits that are no stopword, each quoted (so no word is read
/// as FTS syntax), any of them (`OR`). None when nothing is left.
pub fn query_terms(message: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in message.split(|c: char| !c.is_alphanumeric()) {
        let w = word.to_lowercase();
        if w.chars().count() < 3 || STOPWORDS.contains(&w.as_str()) || terms.contains(&w) {
            continue;
        }
        terms.push(w);
        if terms.len() == MAX_TERMS {
            break;
        }
    }
    (!terms.is_empty()).then(|| terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

/// Splits an unstructured source's content into passages: paragraphs
/// (blank-line separated), a long one cut at sentence ends (or, without
/// one, at [`PASSAGE_CHARS`]).
pub fn split_passages(content: &str) -> Vec<String> {
    let mut out = Vec::new();
    for para in content.split("\n\n").map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ")).filter(|p| !p.is_empty()) {
        let mut current = String::new();
        for sentence in para.split_inclusive(['.', '!', '?']) {
            if !current.is_empty() && current.chars().count() + sentence.chars().count() > PASSAGE_CHARS {
                out.push(current.trim().to_string());
                current.clear();
            }
            current.push_str(sentence);
            while current.chars().count() > PASSAGE_CHARS {
                let cut: String = current.chars().take(PASSAGE_CHARS).collect();
                out.push(cut.trim().to_string());
                current = current.chars().skip(PASSAGE_CHARS).collect();
            }
        }
        if !current.trim().is_empty() {
            out.push(current.trim().to_string());
        }
    }
    out
}

/// A structured row as a passage: `Header: value; …` (empty cells left out).
pub fn row_passage(headers: &[String], cells: &[Option<String>]) -> String {
    headers
        .iter()
        .zip(cells)
        .filter_map(|(h, c)| c.as_deref().map(str::trim).filter(|c| !c.is_empty()).map(|c| format!("{}: {c}", h.trim())))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Replaces the indexed passages of an unstructured source's content
/// (inside the caller's transaction).
pub fn index_content(biz: &str, source_id: &str, content: Option<&str>) -> Result<(), Failure> {
    db::execute("DELETE FROM knowledge_fts WHERE business_id = ?1 AND data_source_id = ?2 AND version_id = ''", &[biz.into(), source_id.into()])?;
    let rows: Vec<Vec<crate::Value>> = split_passages(content.unwrap_or_default())
        .into_iter()
        .enumerate()
        .map(|(i, text)| vec![text.into(), biz.into(), source_id.into(), (i as i64).into()])
        .collect();
    db::execute_many("INSERT INTO knowledge_fts (text, business_id, data_source_id, version_id, item) VALUES (?1, ?2, ?3, '', ?4)", &rows)?;
    Ok(())
}

/// The passages of `agent_id`'s active sources that best match `message`,
/// best first.
pub fn passages(biz: &str, agent_id: &str, message: &str) -> Result<Vec<Passage>, Failure> {
    let Some(query) = query_terms(message) else { return Ok(Vec::new()) };
    let rows = db::query(
        &format!(
            "SELECT knowledge_fts.data_source_id, s.name, knowledge_fts.version_id, knowledge_fts.item, knowledge_fts.text FROM knowledge_fts \
             JOIN agent_data_sources a ON a.business_id = ?1 AND a.agent_id = ?2 AND a.data_source_id = knowledge_fts.data_source_id \
             JOIN data_sources s ON s.business_id = ?1 AND s.id = knowledge_fts.data_source_id AND s.status = 'active' \
             WHERE knowledge_fts MATCH ?3 AND knowledge_fts.business_id = ?1 AND knowledge_fts.version_id = IFNULL(s.active_version_id, '') \
             ORDER BY knowledge_fts.rank LIMIT {MAX_PASSAGES}"
        ),
        &[biz.into(), agent_id.into(), query.into()],
    )?;
    Ok(rows.iter().map(|r| Passage { source_id: r.text(0), source_name: r.text(1), version_id: r.text(2), item: r.int(3), text: r.text(4) }).collect())
}

/// The knowledge section of an agent turn's instructions, within
/// [`BUDGET_CHARS`]; empty without passages.
pub fn instructions_block(passages: &[Passage]) -> String {
    if passages.is_empty() {
        return String::new();
    }
    let mut s = String::from("\n\nKnowledge from the business's data sources (answer from it when it helps, and say which source):");
    for p in passages {
        let line = format!("\n[{}] {}", p.source_name, p.text);
        if s.chars().count() + line.chars().count() > BUDGET_CHARS {
            break;
        }
        s.push_str(&line);
    }
    s
}

/// What a turn drew on, for the record kept with it (never shown by the
/// public API): `[{"sourceId", "versionId", "item"}]`.
pub fn used_json(passages: &[Passage]) -> Option<String> {
    (!passages.is_empty()).then(|| {
        serde_json::Value::Array(
            passages.iter().map(|p| serde_json::json!({"sourceId": p.source_id, "versionId": p.version_id, "item": p.item})).collect(),
        )
        .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_keep_the_words_that_matter_and_quote_them() {
        assert_eq!(query_terms("What are your opening hours?").as_deref(), Some("\"opening\" OR \"hours\""));
        assert_eq!(query_terms("How much is the Widget? widget!").as_deref(), Some("\"widget\""));
        assert_eq!(query_terms("hi, is it ok?"), None);
        assert_eq!(query_terms("prix du café \"NEAR\" AND").as_deref(), Some("\"prix\" OR \"café\" OR \"near\""));
    }

    #[test]
    fn content_splits_into_paragraph_and_sentence_passages() {
        assert_eq!(split_passages("Open 9 to 5.\n\n\nClosed   on\nSundays."), ["Open 9 to 5.", "Closed on Sundays."]);
        let long = "A sentence that is long enough to matter. ".repeat(40);
        let parts = split_passages(&long);
        assert!(parts.len() > 1 && parts.iter().all(|p| p.chars().count() <= PASSAGE_CHARS), "{parts:?}");
        assert_eq!(parts.join(" ").split_whitespace().count(), long.split_whitespace().count(), "nothing is lost");
        assert_eq!(split_passages(&"x".repeat(1300)).len(), 3);
        assert!(split_passages(" \n\n ").is_empty());
    }

    #[test]
    fn rows_read_as_header_value_pairs() {
        let h = vec!["SKU".to_string(), "Name".to_string(), "Price".to_string()];
        assert_eq!(row_passage(&h, &[Some("A1".into()), Some("Widget".into()), Some("10".into())]), "SKU: A1; Name: Widget; Price: 10");
        assert_eq!(row_passage(&h, &[Some("A1".into()), None, Some(" ".into())]), "SKU: A1");
    }

    #[test]
    fn the_instructions_block_keeps_to_its_budget() {
        let p = |n: usize| Passage { source_id: "s".into(), source_name: "Prices".into(), version_id: String::new(), item: 0, text: "x".repeat(n) };
        assert_eq!(instructions_block(&[]), "");
        assert!(instructions_block(&[p(10)]).ends_with("\n[Prices] xxxxxxxxxx"));
        assert!(instructions_block(&[p(3000), p(3000)]).chars().count() <= BUDGET_CHARS);
        assert_eq!(used_json(&[p(1)]).unwrap(), r#"[{"sourceId":"s","versionId":"","item":0}]"#);
    }
}
