//! The grounding index: what the data-sources area writes so agent turns
//! can find it (issue 19: full-text retrieval and exact lookups). Agent
//! turns read it in the agent runtime (`components/agent-runtime`,
//! `grounding.rs`); this module owns the format both sides share.
//!
//! The index is one FTS5 table, `knowledge_fts` (migration 0017): a passage
//! per row, with the business, the source and the version it belongs to and
//! its place in it (`item`: a paragraph number of an unstructured source's
//! content, a row number of a structured version), and a scope token
//! ([`scope_token`]) naming its source and version. The data-sources area
//! writes it ([`index_content`] when an unstructured source's content is
//! set; the ingest job for each parsed row, as a [`row_passage`], with its
//! cells as lookup keys in `lookup_values`, [`lookup_value`]), and with an
//! embeddings model, vectors of the passages in `knowledge_vectors`
//! ([`vector_blob`]), or waiting for its ANN index in
//! `knowledge_vectors_pending` (migration 0043): readers search both.

use crate::db::{self, StoreValue};
use crate::{params, Failure};

/// Passages per statement that inserts them (an unstructured source's
/// content here, a structured source's rows in the ingestion): FTS5 writes
/// what it holds in memory as a new segment at the start of every
/// statement that inserts into it, so more passages a statement mean
/// fewer, larger segments to merge (5,000 passages go in six statements).
pub const PASSAGES_PER_STATEMENT: usize = 2048;

/// Characters of one passage of an unstructured source.
pub const PASSAGE_CHARS: usize = 600;

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

/// Cells longer than this are not looked up (a description, not a key).
pub const LOOKUP_VALUE_CHARS: usize = 200;

/// A cell as the lookup index keeps it: trimmed, lower-cased; None when
/// empty or too long.
pub fn lookup_value(cell: &str) -> Option<String> {
    let v = cell.trim();
    (!v.is_empty() && v.chars().count() <= LOOKUP_VALUE_CHARS).then(|| v.to_lowercase())
}

/// A structured row as a passage: `Header: value; …` (empty cells left out).
pub fn row_passage<H: AsRef<str>, C: AsRef<str>>(headers: &[H], cells: &[Option<C>]) -> String {
    // Written into one string: ingestion builds one per row.
    let mut out = String::new();
    for (h, c) in headers.iter().zip(cells) {
        let Some(c) = c.as_ref().map(|c| c.as_ref().trim()).filter(|c| !c.is_empty()) else { continue };
        if !out.is_empty() {
            out.push_str("; ");
        }
        out.push_str(h.as_ref().trim());
        out.push_str(": ");
        out.push_str(c);
    }
    out
}

/// The token that scopes a passage to its source and version: both uuids
/// without dashes (`c` for an unstructured source's content). Queries name
/// the scopes of the agent's active source versions.
pub fn scope_token(source_id: &str, version_id: &str) -> String {
    let version = if version_id.is_empty() { "c".to_string() } else { version_id.replace('-', "") };
    format!("s{}v{version}", source_id.replace('-', ""))
}

/// A vector as libSQL's `F32_BLOB` stores it: little-endian 32-bit floats.
pub fn vector_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The FTS5 query of one scope (all passages of a source version).
pub fn scope_query(source_id: &str, version_id: &str) -> String {
    format!("scope:\"{}\"", scope_token(source_id, version_id))
}

/// Replaces the indexed passages of an unstructured source's content, and
/// drops their vectors (inside the caller's transaction; the caller
/// enqueues the embedding of the new ones).
pub fn index_content(biz: &str, source_id: &str, content: Option<&str>) -> Result<(), Failure> {
    db::execute("DELETE FROM knowledge_fts WHERE knowledge_fts MATCH ?1 AND business_id = ?2", &params![scope_query(source_id, ""), biz])?;
    db::execute("DELETE FROM knowledge_vectors WHERE data_source_id = ?1 AND version_id = '' AND business_id = ?2", &params![source_id, biz])?;
    db::execute("DELETE FROM knowledge_vectors_pending WHERE data_source_id = ?1 AND version_id = '' AND business_id = ?2", &params![source_id, biz])?;
    // Many passages a statement (`PASSAGES_PER_STATEMENT`).
    let cells: Vec<StoreValue> = split_passages(content.unwrap_or_default()).into_iter().enumerate().flat_map(|(i, text)| [StoreValue::Integer(i as i64), StoreValue::Text(text)]).collect();
    let fixed = [StoreValue::Text(scope_token(source_id, "")), StoreValue::Text(biz.to_string()), StoreValue::Text(source_id.to_string()), StoreValue::Text(String::new())];
    db::insert_values("knowledge_fts (scope, business_id, data_source_id, version_id, item, text)", &fixed, 2, PASSAGES_PER_STATEMENT, cells)
}

/// A column's header as passages and lookups show it: its name, or its
/// field key when the name is blank.
pub fn header<'a>(name: &'a str, key: &'a str) -> &'a str {
    if name.trim().is_empty() {
        key
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_values_are_trimmed_lowercase_keys() {
        assert_eq!(lookup_value("  SKU-12 ").as_deref(), Some("sku-12"));
        assert_eq!(lookup_value("   "), None);
        assert_eq!(lookup_value(&"x".repeat(201)), None);
    }

    #[test]
    fn scopes_name_a_source_and_a_version() {
        assert_eq!(scope_token("0190-ab", ""), "s0190abvc");
        assert_eq!(scope_token("0190-ab", "0190-cd"), "s0190abv0190cd");
        assert_eq!(vector_blob(&[1.0, -2.5]), [0, 0, 128, 63, 0, 0, 32, 192]);
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
        assert_eq!(row_passage(&h, &[Some("A1"), Some("Widget"), Some("10")]), "SKU: A1; Name: Widget; Price: 10");
        assert_eq!(row_passage(&h, &[Some("A1"), None, Some(" ")]), "SKU: A1");
    }
}
