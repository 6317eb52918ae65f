-- Staged uploads (platform tables owned by the host): the body of a raw
-- (non-JSON) data source upload is streamed into chunk rows here, one short
-- write transaction per chunk, before the request's mutation runs. The
-- data-sources component then moves the chunks into ingestion_chunks inside
-- the request transaction and deletes the staged rows. A failed request
-- deletes its rows; rows of an abandoned upload (a crash mid-stream) are
-- swept by the host once idle for an hour.

CREATE TABLE staged_uploads (
    id             TEXT    NOT NULL PRIMARY KEY,       -- uuid v7
    business_id    TEXT    NOT NULL,
    chunk_size     INTEGER NOT NULL,                   -- bytes per chunk (the last one may be shorter)
    byte_size      INTEGER NOT NULL DEFAULT 0,         -- bytes staged so far
    sha256         TEXT,                               -- lowercase hex, set when complete
    state          TEXT    NOT NULL CHECK (state IN ('receiving', 'complete')),
    created_at_ms  INTEGER NOT NULL,
    updated_at_ms  INTEGER NOT NULL                    -- last chunk written (the sweep's clock)
);
CREATE INDEX staged_uploads_idle ON staged_uploads (updated_at_ms);

CREATE TABLE staged_upload_chunks (
    business_id TEXT    NOT NULL,
    upload_id   TEXT    NOT NULL,
    seq         INTEGER NOT NULL,                      -- 0, 1, ... (offset = seq * chunk_size)
    data        BLOB    NOT NULL,
    PRIMARY KEY (upload_id, seq)
);
