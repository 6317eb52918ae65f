-- Data sources (component `data-sources`), shared by agents (declared
-- variables name a source's fields). Ingestion versions live in 0004.

CREATE TABLE data_sources (
    id                TEXT NOT NULL PRIMARY KEY,           -- uuid
    business_id       TEXT NOT NULL,
    name              TEXT NOT NULL,
    description       TEXT,
    class             TEXT NOT NULL CHECK (class IN ('structured', 'unstructured')),
    kind              TEXT NOT NULL CHECK (kind IN ('table', 'json', 'text')),
    -- 1 for the built-in Contacts source: always listed, never archivable;
    -- its fields are the contact fields (mobile, name and contact_fields).
    built_in          INTEGER NOT NULL DEFAULT 0,
    status            TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'archived')),
    content           TEXT,                                 -- unstructured text knowledge
    active_version_id TEXT,                                 -- the active ingestion version
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
CREATE INDEX data_sources_business ON data_sources (business_id, id);
-- Exactly one built-in source per business.
CREATE UNIQUE INDEX data_sources_built_in ON data_sources (business_id) WHERE built_in = 1;

-- Declared fields of structured sources (not used for the built-in source).
CREATE TABLE data_source_fields (
    business_id    TEXT NOT NULL,
    data_source_id TEXT NOT NULL,
    field_key      TEXT NOT NULL,                           -- ^[a-zA-Z][a-zA-Z0-9_]{0,63}$
    label          TEXT NOT NULL,
    type           TEXT NOT NULL,                           -- DataSourceFieldType
    position       INTEGER NOT NULL,
    PRIMARY KEY (data_source_id, field_key)
) WITHOUT ROWID;
