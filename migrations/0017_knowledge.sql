-- Grounded agents (issue 19): the full-text index of what agents may know.
-- One passage per row: a paragraph of an unstructured source's content
-- (version_id '') or a row of a structured source's version. Written by the
-- data-sources area, read by agent turns (`components/guest/src/knowledge.rs`),
-- always filtered by the business, the agent's sources and each source's
-- active version.
-- `scope` is one token naming the source and version (see
-- `knowledge::scope_token`): a query matches only the scopes of the agent's
-- active source versions, so FTS5 intersects posting lists instead of
-- ranking every tenant's matches.
CREATE VIRTUAL TABLE knowledge_fts USING fts5(
    text,
    scope,
    business_id UNINDEXED,
    data_source_id UNINDEXED,
    version_id UNINDEXED,
    item UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Exact lookups (the `lookup` tool): every cell of a structured version's
-- rows, trimmed and lower-cased (at most 200 characters), by field. Written
-- as the version is parsed, beside its rows.
CREATE TABLE lookup_values (
    business_id TEXT    NOT NULL,
    version_id  TEXT    NOT NULL,
    field_key   TEXT    NOT NULL,
    value       TEXT    NOT NULL,
    row_number  INTEGER NOT NULL,
    PRIMARY KEY (version_id, field_key, value, row_number)
) WITHOUT ROWID;

-- What an AI-produced message or voice turn drew on (internal, never shown
-- by the public API): [{"sourceId", "versionId", "item"}].
ALTER TABLE messages ADD COLUMN grounding_json TEXT;
ALTER TABLE call_turns ADD COLUMN grounding_json TEXT;
