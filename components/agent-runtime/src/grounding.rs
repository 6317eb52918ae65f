//! Grounding: what an agent knows from its data sources, found for one
//! customer message (issue 19: full-text retrieval and exact lookups), and
//! the grounded turn ([`answer`]).
//!
//! The index is written by the data-sources area through
//! `switchboard_guest::knowledge` (its format: passages in `knowledge_fts`,
//! scope tokens, lookup values, vectors); this module reads it for a turn.
//!
//! Structured sources are offered to the model as the `lookup` tool
//! ([`answer`]): exact matches of one field, run here against the active
//! version, the rows returned to the model for its final answer.
//!
//! With an embeddings model, the passages of unstructured sources also have
//! vectors (`knowledge_vectors`, libSQL `F32_BLOB` with a `libsql_vector_idx`
//! index, or `knowledge_vectors_pending` until the node's indexer moves them
//! there; written by the data-sources area's `data-sources.embed` job), and
//! a turn finds passages both ways (`passages`): the full-text matches
//! (at most [`POOL`] of them, ranked by [`rank`]) and the nearest by meaning (cosine distance, at most
//! [`MAX_DISTANCE`]), fused by reciprocal rank ([`fuse`]), so a passage both
//! find comes first and one that only the meaning finds still counts.
//!
//! Only what the agent may see is ever found: the query joins the agent's
//! own `agent_data_sources` of the same business, sources that are
//! `active`, and only the passages of each source's active version (an
//! unstructured source's content has version `''`), so activating a new
//! version switches retrieval in the same commit and archiving or pausing a
//! source stops it.

use switchboard_guest::db;
use switchboard_guest::knowledge::{header, lookup_value, row_passage, scope_token, vector_blob};
use switchboard_guest::{ai, log, params, Failure, Value};

mod lookup;
pub mod retrieval;

use lookup::{offered, run_lookup};
pub use lookup::{LOOKUP_ROWS, MAX_LOOKUPS, NO_ROWS};

/// Passages an agent turn sees at most.
pub const MAX_PASSAGES: usize = 4;
/// Characters of knowledge an agent turn's instructions carry at most.
pub const BUDGET_CHARS: usize = 4_000;
/// Search terms taken from a customer message at most.
const MAX_TERMS: usize = 16;
/// Candidates each way of finding (words, meaning) offers the fusion.
const CANDIDATES: usize = 8;
/// Up to this many vectors in the agent's scopes the nearest are found
/// exactly (a scan of the agent's own vectors); above, through the ANN index.
pub const EXACT_VECTORS: i64 = 2_000;
/// Neighbours asked of the ANN index (`vector_top_k`) before they are
/// narrowed to the agent's scopes: the index spans every business, so a
/// small share of it may find fewer than [`CANDIDATES`] of its own.
const ANN_NEIGHBOURS: usize = 256;
/// Neighbours asked first: each is a row read for its exact distance, so a
/// turn whose nearest are the agent's own reads a quarter of them.
const ANN_FIRST: usize = 64;
/// A passage found by meaning alone counts only within this cosine distance
/// (0 the same direction, 1 unrelated).
pub const MAX_DISTANCE: f64 = 0.6;
/// The constant of reciprocal rank fusion: a passage scores
/// `Σ 1 / (RRF_K + rank)` over the lists that found it.
const RRF_K: f64 = 60.0;

/// One passage found for a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Its row in `knowledge_fts` (and key in `knowledge_vectors`).
    pub id: i64,
    pub source_id: String,
    pub source_name: String,
    pub version_id: String,
    pub item: i64,
    pub text: String,
}

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "your", "yours", "all", "any", "can", "had", "has", "have", "her", "was", "one", "our", "out", "what", "when", "where", "which", "who", "whom",
    "why", "how", "this", "that", "these", "those", "with", "from", "into", "about", "there", "their", "them", "they", "then", "than", "been", "being", "were", "will", "would", "could", "should",
    "does", "did", "doing", "just", "also", "much", "many", "some", "such", "only", "own", "same", "too", "very", "its", "it's", "i'm", "hi", "hello", "thanks", "thank", "please", "yes", "no", "me",
    "my", "mine", "is", "of", "to", "in", "on", "at", "by", "do", "be", "an", "or", "if", "so", "as", "up", "we", "us", "tell", "more", "like", "want", "need", "know",
];

/// The FTS5 query for a customer message: its words of three or more
/// letters or digits that are no stopword, each quoted (so no word is read
/// as FTS syntax), any of them (`OR`). None when nothing is left.
pub fn query_terms(message: &str) -> Option<String> {
    query_with(message, " OR ")
}

/// As [`query_terms`], all of the words (`AND`): tried first, since it is
/// both the better answer and, on a large index, far fewer matches to rank.
pub fn query_all_terms(message: &str) -> Option<String> {
    query_with(message, " AND ")
}

fn query_with(message: &str, joiner: &str) -> Option<String> {
    let terms = search_words(message);
    (!terms.is_empty()).then(|| terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(joiner))
}

/// The words of a message a search looks for (see [`query_terms`]).
fn search_words(message: &str) -> Vec<String> {
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
    terms
}

/// One of an agent's active sources (never the built-in Contacts source),
/// with the version retrieval reads (`''` for an unstructured source's
/// content, or a structured source without an active version).
struct AgentSource {
    id: String,
    name: String,
    structured: bool,
    version_id: String,
}

/// The agent's active sources: read once per turn, for both the passages
/// and the lookups.
fn agent_sources(biz: &str, agent_id: &str) -> Result<Vec<AgentSource>, Failure> {
    let rows: Vec<(String, String, bool, String)> = db::query_as(
        "SELECT s.id, s.name, s.class = 'structured', IFNULL(s.active_version_id, '') FROM agent_data_sources a \
         JOIN data_sources s ON s.business_id = a.business_id AND s.id = a.data_source_id \
         WHERE a.business_id = ?1 AND a.agent_id = ?2 AND s.status = 'active' AND s.built_in = 0 ORDER BY s.name",
        &params![biz, agent_id],
    )?;
    Ok(rows.into_iter().map(|(id, name, structured, version_id)| AgentSource { id, name, structured, version_id }).collect())
}

/// The passages of the agent's `sources` that best match `message`, best
/// first: the full-text matches and the nearest by meaning, fused.
fn passages(biz: &str, sources: &[AgentSource], message: &str) -> Result<Vec<Passage>, Failure> {
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let by_words = matching(biz, sources, message)?;
    let by_meaning = nearest(biz, sources, message)?;
    Ok(fuse(by_words, by_meaning))
}

/// The full-text matches of `message` in the agent's scopes, best first.
fn matching(biz: &str, sources: &[AgentSource], message: &str) -> Result<Vec<Passage>, Failure> {
    let words = search_words(message);
    let (Some(any), Some(all)) = (query_terms(message), query_all_terms(message)) else { return Ok(Vec::new()) };
    // The scopes this agent may search: its active sources' active versions.
    let scopes = sources.iter().map(|s| format!("\"{}\"", scope_token(&s.id, &s.version_id))).collect::<Vec<_>>().join(" OR ");
    // Passages with every word first; any word only when none has them all.
    let mut pool = search(biz, sources, &format!("text:({all}) AND scope:({scopes})"))?;
    if pool.is_empty() && all != any {
        pool = search(biz, sources, &format!("text:({any}) AND scope:({scopes})"))?;
    }
    Ok(rank(pool, &words).into_iter().take(CANDIDATES).collect())
}

/// Matches one full-text search reads at most, ranked here ([`rank`]).
/// FTS5's own `bm25` would read every match, and on its first row counts
/// the rows of every phrase in the whole index (the scope tokens' lists are
/// as long as the sources): 90 ms at 1,000,000 rows, 17 ms at 200,000
/// passages (issue 38). The first matches in the index's order are
/// bounded instead: with more than this many, the best of these.
pub const POOL: usize = 64;

/// What [`rank`] reads of a match: the passage and its text with each
/// matched word between `\u{1}` and `\u{2}` (FTS5's `highlight`, which
/// knows the stemmed matches).
pub struct Matched {
    pub passage: Passage,
    pub marked: String,
}

/// One FTS5 search in the agent's scopes: at most [`POOL`] matches, in
/// the index's order, of the agent's own sources' active versions.
fn search(biz: &str, sources: &[AgentSource], query: &str) -> Result<Vec<Matched>, Failure> {
    let rows: Vec<(String, String, i64, String, i64, String)> = db::query_as(
        &format!(
            "SELECT data_source_id, version_id, item, text, rowid, highlight(knowledge_fts, 0, char(1), char(2)) FROM knowledge_fts \
             WHERE knowledge_fts MATCH ?1 AND business_id = ?2 LIMIT {POOL}"
        ),
        &params![query, biz],
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|(source_id, version_id, item, text, id, marked)| {
            // The scope names the source and version already; this keeps
            // the answer to what the agent sees even if a token collided.
            let source = sources.iter().find(|s| s.id == source_id && s.version_id == version_id)?;
            let passage = Passage { id, source_id: source.id.clone(), source_name: source.name.clone(), version_id, item, text };
            Some(Matched { passage, marked })
        })
        .collect())
}

/// BM25 (k1 1.2, b 0.75) over a pool of matches, best first; ties keep the
/// pool's order. A marked word counts for the search word it shares the
/// longest prefix with (FTS5 matched it stemmed: `hours` for `hour`); a
/// word's rarity and the mean length are the pool's, so a passage with the
/// rarer of the words, or more of them, or fewer other words, comes first.
pub fn rank(pool: Vec<Matched>, words: &[String]) -> Vec<Passage> {
    const K1: f64 = 1.2;
    const B: f64 = 0.75;
    let counts: Vec<(Vec<f64>, f64)> = pool
        .iter()
        .map(|m| {
            let mut tf = vec![0.0; words.len()];
            for marked in m.marked.split('\u{1}').skip(1).filter_map(|s| s.split_once('\u{2}').map(|(w, _)| w.to_lowercase())) {
                let shared = |w: &String| w.chars().zip(marked.chars()).take_while(|(a, b)| a == b).count();
                if let Some(best) = (0..words.len()).max_by_key(|&i| (shared(&words[i]), std::cmp::Reverse(i))) {
                    tf[best] += 1.0;
                }
            }
            let length = m.passage.text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).count() as f64;
            (tf, length.max(1.0))
        })
        .collect();
    let n = pool.len() as f64;
    let mean = counts.iter().map(|(_, l)| l).sum::<f64>() / n.max(1.0);
    let idf: Vec<f64> = (0..words.len())
        .map(|i| {
            let df = counts.iter().filter(|(tf, _)| tf[i] > 0.0).count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut scored: Vec<(f64, Passage)> = pool
        .into_iter()
        .zip(&counts)
        .map(|(m, (tf, length))| {
            let score = tf.iter().zip(&idf).map(|(f, w)| w * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * length / mean))).sum();
            (score, m.passage)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().map(|(_, p)| p).collect()
}

/// The passages of the agent's unstructured sources nearest to `message`
/// by meaning (within [`MAX_DISTANCE`]), nearest first. Empty without an
/// embeddings model; an embeddings failure is logged and the turn goes on
/// with the full-text matches.
fn nearest(biz: &str, sources: &[AgentSource], message: &str) -> Result<Vec<Passage>, Failure> {
    if !sources.iter().any(|s| !s.structured) || message.trim().is_empty() {
        return Ok(Vec::new());
    }
    match ai::embed(&[message.to_string()]) {
        Ok(Some(mut v)) if v.len() == 1 => nearest_to(biz, sources, &v.remove(0)),
        Ok(_) => Ok(Vec::new()),
        Err(e) => {
            log::log(log::Level::Warn, &format!("passages by meaning skipped for this turn: {e}"));
            Ok(Vec::new())
        }
    }
}

/// The passages of the agent's unstructured sources nearest to the
/// embedded message `vector`, nearest first.
fn nearest_to(biz: &str, sources: &[AgentSource], vector: &[f32]) -> Result<Vec<Passage>, Failure> {
    let scopes: Vec<String> = sources.iter().filter(|s| !s.structured).map(|s| scope_token(&s.id, "")).collect();
    if scopes.is_empty() {
        return Ok(Vec::new());
    }
    let query = vector_blob(vector);
    let mut params: Vec<Value> = params![query, biz];
    params.extend(scopes.iter().map(|s| s.as_str().into()));
    let within = db::placeholders(3, scopes.len());
    // Counted only as far as the choice below needs (a source's whole
    // count read its index to the end: milliseconds at 100,000 vectors).
    // The vectors still waiting for the index count too (`knowledge_vectors_pending`).
    let scoped = db::placeholders(1, scopes.len());
    let count = db::query_one_as::<i64>(
        &format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM knowledge_vectors WHERE scope IN ({scoped}) UNION ALL SELECT 1 FROM knowledge_vectors_pending WHERE scope IN ({scoped}) LIMIT {})",
            EXACT_VECTORS + 1
        ),
        &params[2..],
    )?
    .unwrap_or(0);
    if count == 0 {
        return Ok(Vec::new());
    }
    // Few vectors: all of the agent's, exactly. Many: the ANN index's
    // neighbours, narrowed to the agent's scopes: the nearest
    // [`ANN_FIRST`] first, and all [`ANN_NEIGHBOURS`] only when those held
    // too few of the agent's (the index lists them nearest first, so the
    // first ones found are the same either way). Vectors a step stored
    // that the indexer has yet to move (`knowledge_vectors_pending`, few
    // but during a backfill) are compared exactly beside them, so a vector
    // is found from its step on and the answer is the same once indexed.
    let reach: &[usize] = if count <= EXACT_VECTORS { &[0] } else { &[ANN_FIRST, ANN_NEIGHBOURS] };
    let mut rows: Vec<(String, String, i64, String, i64)> = Vec::new();
    for &k in reach {
        let from = if k == 0 { "knowledge_vectors v".to_string() } else { format!("vector_top_k('knowledge_vectors_ann', vector32(?1), {k}) t JOIN knowledge_vectors v ON v.rowid = t.id") };
        rows = db::query_as(
            &format!(
                // The nearest first, then only their passages' text.
                "SELECT f.data_source_id, f.version_id, f.item, f.text, n.fts_rowid FROM \
                 (SELECT fts_rowid, d FROM \
                  (SELECT v.fts_rowid, vector_distance_cos(v.embedding, vector32(?1)) AS d FROM {from} \
                   WHERE v.business_id = ?2 AND v.scope IN ({within}) AND d <= {MAX_DISTANCE} \
                   UNION ALL \
                   SELECT p.fts_rowid, vector_distance_cos(p.embedding, vector32(?1)) AS d FROM knowledge_vectors_pending p \
                   WHERE p.business_id = ?2 AND p.scope IN ({within}) AND d <= {MAX_DISTANCE}) \
                  ORDER BY d LIMIT {CANDIDATES}) n \
                 JOIN knowledge_fts f ON f.rowid = n.fts_rowid ORDER BY n.d"
            ),
            &params,
        )?;
        if rows.len() >= CANDIDATES {
            break;
        }
    }
    Ok(rows
        .into_iter()
        .filter_map(|(source_id, version_id, item, text, id)| {
            let source = sources.iter().find(|s| s.id == source_id)?;
            Some(Passage { id, source_id: source.id.clone(), source_name: source.name.clone(), version_id, item, text })
        })
        .collect())
}

/// Reciprocal rank fusion of the full-text matches and the nearest by
/// meaning: each passage scores `Σ 1 / (RRF_K + rank)` over the lists that
/// hold it (rank from 1); best [`MAX_PASSAGES`] first, ties in the order
/// found (words before meaning).
pub fn fuse(by_words: Vec<Passage>, by_meaning: Vec<Passage>) -> Vec<Passage> {
    let mut scored: Vec<(f64, Passage)> = Vec::new();
    for list in [by_words, by_meaning] {
        for (rank, p) in list.into_iter().enumerate() {
            let score = 1.0 / (RRF_K + rank as f64 + 1.0);
            match scored.iter_mut().find(|(_, q)| q.id == p.id) {
                Some((s, _)) => *s += score,
                None => scored.push((score, p)),
            }
        }
    }
    // A stable sort keeps the order found among equal scores.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(MAX_PASSAGES).map(|(_, p)| p).collect()
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
/// public API): `[{"sourceId", "versionId", "item"}]`, passages first, then
/// looked-up rows (source, version, row number).
pub fn used_json(passages: &[Passage], rows: &[(String, String, i64)]) -> Option<String> {
    let all: Vec<serde_json::Value> = passages
        .iter()
        .map(|p| (p.source_id.as_str(), p.version_id.as_str(), p.item))
        .chain(rows.iter().map(|(s, v, i)| (s.as_str(), v.as_str(), *i)))
        .map(|(s, v, i)| serde_json::json!({"sourceId": s, "versionId": v, "item": i}))
        .collect();
    (!all.is_empty()).then(|| serde_json::Value::Array(all).to_string())
}

/// A grounded agent turn's reply and what it drew on.
pub struct Grounded {
    pub text: String,
    pub used: Option<String>,
    /// The model called the `end_call` tool (only when it was offered).
    pub end_call: bool,
}

/// One agent turn, grounded: the passages of the agent's sources that match
/// the customer's last message go into `instructions`, and its structured
/// sources are offered as the `lookup` tool (each lookup run here, against
/// the active version, at most [`MAX_LOOKUPS`] per turn); with `end_call`
/// (a turn of a phone call) the `end_call` tool is offered too.
/// `Ok(Err(_))` is the AI's own failure (the caller retries or gives up).
pub fn answer(biz: &str, agent_id: &str, instructions: &str, history: &[(String, String)], end_call: bool) -> Result<Result<Grounded, String>, Failure> {
    let asked = history.iter().rev().find(|(role, _)| role == "user").map(|(_, t)| t.as_str()).unwrap_or_default();
    let agent_sources = agent_sources(biz, agent_id)?;
    let passages = passages(biz, &agent_sources, asked)?;
    let instructions = format!("{instructions}{}", instructions_block(&passages));
    let offered = offered(biz, &agent_sources)?;
    let sources: Vec<ai::LookupSource> = offered.iter().map(|o| ai::LookupSource { name: o.source.name.clone(), fields: o.lookup_fields() }).collect();
    let mut done: Vec<(ai::Lookup, String)> = Vec::new();
    let mut rows = Vec::new();
    loop {
        let lookups_left = !sources.is_empty() && done.len() < MAX_LOOKUPS;
        let reply = match (lookups_left, end_call) {
            (false, false) => ai::complete(&instructions, history).map(ai::Answer::Text),
            (true, _) => ai::respond(&instructions, history, &sources, &done, end_call),
            // Lookups used up: only the end_call tool stays offered.
            (false, true) => ai::respond(&instructions, history, &[], &[], true),
        };
        match reply {
            Err(e) => return Ok(Err(e)),
            Ok(ai::Answer::Text(text)) => return Ok(Ok(Grounded { text, used: used_json(&passages, &rows), end_call: false })),
            Ok(ai::Answer::EndCall(text)) => return Ok(Ok(Grounded { text, used: used_json(&passages, &rows), end_call: true })),
            Ok(ai::Answer::Lookup(call)) => {
                let (found, used) = run_lookup(biz, &offered, &call)?;
                rows.extend(used);
                done.push((call, found));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_keep_the_words_that_matter_and_quote_them() {
        assert_eq!(query_terms("What are your opening hours?").as_deref(), Some("\"opening\" OR \"hours\""));
        assert_eq!(query_terms("How much is the Widget? widget!").as_deref(), Some("\"widget\""));
        assert_eq!(query_terms("hi, is it ok?"), None);
        assert_eq!(query_all_terms("What are your opening hours?").as_deref(), Some("\"opening\" AND \"hours\""));
        assert_eq!(query_terms("prix du café \"NEAR\" AND").as_deref(), Some("\"prix\" OR \"café\" OR \"near\""));
    }

    #[test]
    fn fusion_ranks_what_both_find_first_and_keeps_what_one_finds() {
        let p = |id: i64| Passage { id, source_id: "s".into(), source_name: "S".into(), version_id: String::new(), item: id, text: format!("p{id}") };
        let ids = |v: Vec<Passage>| v.into_iter().map(|p| p.id).collect::<Vec<_>>();
        assert_eq!(ids(fuse(vec![p(1), p(2), p(3)], vec![p(3), p(9)])), [3, 1, 2, 9]);
        assert_eq!(ids(fuse(vec![p(1), p(2)], vec![])), [1, 2]);
        assert_eq!(ids(fuse(vec![], vec![p(7), p(8)])), [7, 8]);
        assert_eq!(ids(fuse((1..=6).map(p).collect(), (7..=9).map(p).collect())).len(), MAX_PASSAGES);
        assert_eq!(vector_blob(&[1.0, -2.5]), [0, 0, 128, 63, 0, 0, 32, 192]);
    }

    #[test]
    fn the_pool_ranks_rarer_and_more_words_first_then_shorter_passages() {
        let m = |id: i64, marked: &str| Matched {
            passage: Passage { id, source_id: "s".into(), source_name: "S".into(), version_id: String::new(), item: id, text: marked.replace(['\u{1}', '\u{2}'], "") },
            marked: marked.to_string(),
        };
        let ids = |v: Vec<Passage>| v.into_iter().map(|p| p.id).collect::<Vec<_>>();
        let words = |w: &[&str]| w.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        // Any of the words: two before one, the rare one before the common
        // one (`Opens` is FTS5's stemmed match of `opening`), ties in order.
        let pool = vec![m(1, "\u{1}Hours\u{2} of the shop"), m(2, "\u{1}Hours\u{2} of the desk"), m(3, "The \u{1}Lisbon\u{2} office"), m(4, "\u{1}Opens\u{2} at nine, \u{1}hours\u{2} posted")];
        assert_eq!(ids(rank(pool, &words(&["opening", "hours", "lisbon"]))), [4, 3, 1, 2]);
        // All of them in each: the shorter passage, or the word said twice, first.
        let pool = vec![
            m(1, "\u{1}Lisbon\u{2} \u{1}hours\u{2} for the city centre shop"),
            m(2, "\u{1}Lisbon\u{2} \u{1}hours\u{2}"),
            m(3, "\u{1}Lisbon\u{2} \u{1}hours\u{2} and \u{1}hours\u{2} for the city centre"),
        ];
        assert_eq!(ids(rank(pool, &words(&["lisbon", "hours"]))), [2, 3, 1]);
        assert!(rank(Vec::new(), &words(&["x"])).is_empty());
    }

    #[test]
    fn the_instructions_block_keeps_to_its_budget() {
        let p = |n: usize| Passage { id: 1, source_id: "s".into(), source_name: "Prices".into(), version_id: String::new(), item: 0, text: "x".repeat(n) };
        assert_eq!(instructions_block(&[]), "");
        assert!(instructions_block(&[p(10)]).ends_with("\n[Prices] xxxxxxxxxx"));
        assert!(instructions_block(&[p(3000), p(3000)]).chars().count() <= BUDGET_CHARS);
        assert_eq!(used_json(&[p(1)], &[]).unwrap(), r#"[{"sourceId":"s","versionId":"","item":0}]"#);
        assert_eq!(used_json(&[], &[("t".into(), "v".into(), 2)]).unwrap(), r#"[{"sourceId":"t","versionId":"v","item":2}]"#);
        assert_eq!(used_json(&[], &[]), None);
    }
}
