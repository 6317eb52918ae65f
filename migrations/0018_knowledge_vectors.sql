-- Semantic retrieval (issue 19): which embeddings model the stored vectors
-- of unstructured passages came from. The vector table itself
-- (`knowledge_vectors`, an F32_BLOB column of the model's dimension with a
-- `libsql_vector_idx` index) is created by `serve` at start
-- (`host/src/knowledge.rs`), since its dimension is a setting;
-- `dimensions` = 0 means it does not exist yet.
CREATE TABLE knowledge_embedding (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    model      TEXT,
    dimensions INTEGER NOT NULL DEFAULT 0,
    -- 1 while `serve` runs with an embeddings model: content changes
    -- enqueue `data-sources.embed`.
    enabled    INTEGER NOT NULL DEFAULT 0
);
INSERT INTO knowledge_embedding (id) VALUES (1);

-- The model every passage of the source's content was embedded with (set
-- when its `data-sources.embed` job finishes, cleared when the content
-- changes): what `serve` backfills at start, and the source's progress.
ALTER TABLE data_sources ADD COLUMN embedded_model TEXT;
