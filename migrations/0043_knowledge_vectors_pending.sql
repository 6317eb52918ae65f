-- Vectors waiting for the ANN index (issue 52, point 3). A
-- `data-sources.embed` step stores its passages' vectors here, a plain
-- insert that holds the write gate for well under a millisecond a vector;
-- each node's vector indexer (`crates/runtime/src/knowledge.rs`,
-- `index_pending`) then moves them into `knowledge_vectors`, whose libSQL
-- DiskANN index makes every insert a neighbour search, a few at a time in
-- background turns of the gate that end as soon as a request waits.
-- Retrieval reads both tables (`components/agent-runtime/src/grounding.rs`:
-- the index's neighbours and these, exactly), so a vector is found from the
-- step that stored it on. Keyed, like `knowledge_vectors`, by the passage's
-- `knowledge_fts` rowid; `embedding` holds the same little-endian 32-bit
-- floats.
CREATE TABLE knowledge_vectors_pending (
    fts_rowid      INTEGER PRIMARY KEY,
    business_id    TEXT NOT NULL,
    data_source_id TEXT NOT NULL,
    version_id     TEXT NOT NULL,
    scope          TEXT NOT NULL,
    embedding      BLOB NOT NULL
);
CREATE INDEX knowledge_vectors_pending_scope ON knowledge_vectors_pending (scope);
CREATE INDEX knowledge_vectors_pending_source ON knowledge_vectors_pending (data_source_id, version_id);
