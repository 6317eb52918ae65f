-- Data-source ingestion (component `data-sources` + dispatcher job kind
-- `data-sources.ingest`). An upload creates one immutable version; its bytes
-- are stored in chunks, parsed in bounded job steps into rows that keep every
-- original cell beside its interpreted value. Every row carries business_id.

-- 1 when the source's fields were declared at create (they stay fixed);
-- 0 when they mirror the columns of the active version (set on activation).
ALTER TABLE data_sources ADD COLUMN fields_declared INTEGER NOT NULL DEFAULT 0;

CREATE TABLE ingestion_versions (
    id              TEXT    NOT NULL PRIMARY KEY,       -- uuid v7 (the ingestionId)
    business_id     TEXT    NOT NULL,
    data_source_id  TEXT    NOT NULL,
    version_number  INTEGER NOT NULL,                   -- 1, 2, ... per source
    file_name       TEXT    NOT NULL,
    format          TEXT    NOT NULL CHECK (format IN ('csv', 'tsv', 'json', 'xlsx', 'xlsm')),
    byte_size       INTEGER NOT NULL,                   -- decoded upload size
    chunk_size      INTEGER NOT NULL,                   -- bytes per ingestion_chunks row
    stage           TEXT    NOT NULL CHECK (stage IN ('received', 'parsing', 'validating', 'needs_review', 'ready', 'active', 'failed')),
    failure_reason  TEXT,
    row_count       INTEGER NOT NULL DEFAULT 0,         -- rows stored so far
    parse_issue_count INTEGER NOT NULL DEFAULT 0,       -- issues found while parsing
    type_issue_count  INTEGER NOT NULL DEFAULT 0,       -- issues found while interpreting (recomputed on resolve)
    resolved        INTEGER NOT NULL DEFAULT 0,         -- 1 once a person resolved it
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    activated_at    TEXT,
    UNIQUE (data_source_id, version_number)
);
-- inspect / resolve by id within the business.
CREATE INDEX ingestion_versions_business ON ingestion_versions (business_id, id);
-- versions of a source (next version number, the active one).
CREATE INDEX ingestion_versions_source ON ingestion_versions (business_id, data_source_id, stage);

-- The uploaded bytes (stream 0) and, for spreadsheets, the CSV converted
-- from the first worksheet (stream 1, deleted once parsed).
CREATE TABLE ingestion_chunks (
    business_id TEXT    NOT NULL,
    version_id  TEXT    NOT NULL,
    stream      INTEGER NOT NULL,
    seq         INTEGER NOT NULL,                       -- 0, 1, ... (offset = seq * chunk_size)
    data        BLOB    NOT NULL,
    PRIMARY KEY (version_id, stream, seq)
);

-- Columns of a version, in file order. `stats` accumulates the kinds of the
-- values seen while parsing; `type` is the decided (or reviewed) type.
CREATE TABLE ingestion_columns (
    business_id     TEXT    NOT NULL,
    version_id      TEXT    NOT NULL,
    position        INTEGER NOT NULL,                   -- 0-based
    name            TEXT    NOT NULL,                   -- header as written
    field_key       TEXT    NOT NULL,                   -- ^[a-zA-Z][a-zA-Z0-9_]{0,63}$, unique per version
    stats           TEXT    NOT NULL DEFAULT '{}',      -- JSON ColumnStats
    type            TEXT,                               -- DataSourceFieldType once decided
    declared        INTEGER NOT NULL DEFAULT 0,         -- 1: type comes from a declared field
    review_types    TEXT,                               -- JSON array of candidates when ambiguous
    reviewed        INTEGER NOT NULL DEFAULT 0,         -- 1 once resolved by a person
    PRIMARY KEY (version_id, position)
) WITHOUT ROWID;

-- Rows: `original` is a JSON array of the cells exactly as read (strings, or
-- null for a JSON key a row lacks); `interpreted` a JSON object field_key ->
-- typed value (null until the validating pass reaches the row).
CREATE TABLE ingestion_rows (
    business_id TEXT    NOT NULL,
    version_id  TEXT    NOT NULL,
    row_number  INTEGER NOT NULL,                       -- 1-based data row in the file
    original    TEXT    NOT NULL,
    interpreted TEXT,
    PRIMARY KEY (version_id, row_number)
) WITHOUT ROWID;

-- Validation issues (only the first 1,000 of a version are stored; the
-- counts on ingestion_versions count all): `parse` (ragged rows, bad JSON rows, malformed quoting)
-- and `type` (a value that does not fit its column's type; recomputed when a
-- person resolves the columns).
CREATE TABLE ingestion_issues (
    id          INTEGER PRIMARY KEY,
    business_id TEXT    NOT NULL,
    version_id  TEXT    NOT NULL,
    kind        TEXT    NOT NULL CHECK (kind IN ('parse', 'type')),
    row_number  INTEGER,
    column_name TEXT,
    problem     TEXT    NOT NULL
);
CREATE INDEX ingestion_issues_version ON ingestion_issues (version_id, kind, id);
