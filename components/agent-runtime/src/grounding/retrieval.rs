//! Retrieval alone, each way a turn runs it (the agent's sources read
//! first, as a turn does), without the embedding of the message or the AI
//! call: what `bench/retrieval.sh` times through a component.

use super::*;

/// The full-text matches of `message`, best first.
pub fn by_words(biz: &str, agent_id: &str, message: &str) -> Result<Vec<Passage>, Failure> {
    let sources = agent_sources(biz, agent_id)?;
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    matching(biz, &sources, message)
}

/// The passages nearest to an embedded message, nearest first.
pub fn by_meaning(biz: &str, agent_id: &str, vector: &[f32]) -> Result<Vec<Passage>, Failure> {
    nearest_to(biz, &agent_sources(biz, agent_id)?, vector)
}

/// Both, fused: the passages a turn's instructions carry.
pub fn fused(biz: &str, agent_id: &str, message: &str, vector: &[f32]) -> Result<Vec<Passage>, Failure> {
    let sources = agent_sources(biz, agent_id)?;
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    let by_words = matching(biz, &sources, message)?;
    Ok(fuse(by_words, nearest_to(biz, &sources, vector)?))
}

/// One `lookup` tool call: the rows as the model reads them.
pub fn lookup(biz: &str, agent_id: &str, source: &str, field: &str, value: &str) -> Result<String, Failure> {
    let sources = agent_sources(biz, agent_id)?;
    let call = ai::Lookup { id: "bench".into(), source: source.into(), field: field.into(), value: value.into() };
    Ok(run_lookup(biz, &offered(biz, &sources)?, &call)?.0)
}
