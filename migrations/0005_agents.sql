-- Agents, channels and assignments (component `agents`, operations 10-16 and
-- 35-36), plus the provider connections written by `switchboard admin channel
-- connect` (provider onboarding happens outside the API).
--
-- Every tenant row carries business_id and every query filters by it.
-- Relationships are maintained explicitly by the component's SQL. Ids are
-- uuid v7 text; timestamps RFC 3339 UTC text with milliseconds.

CREATE TABLE agents (
    id                             TEXT    NOT NULL PRIMARY KEY,
    business_id                    TEXT    NOT NULL,
    channel                        TEXT    NOT NULL CHECK (channel IN ('chatapp', 'sms', 'voice', 'photoapp', 'other')),
    name                           TEXT    NOT NULL,
    instructions                   TEXT    NOT NULL,
    language_code                  TEXT    NOT NULL DEFAULT 'en',
    status                         TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    -- Generated once (adjective-noun-4hex), never changed.
    reference_name                 TEXT    NOT NULL,
    contact_context_required       INTEGER NOT NULL DEFAULT 0,  -- 0 | 1
    -- Effective voice settings (defaults filled in), JSON object; NULL unless channel = 'voice'.
    voice_settings_json            TEXT,
    -- 0 | 1; NULL unless channel = 'photoapp'.
    photoapp_collect_mobile        INTEGER,
    created_at                     TEXT    NOT NULL,
    updated_at                     TEXT    NOT NULL,
    archived_at                    TEXT
);
-- Listing (ordered by id = creation order) and single-agent lookups.
CREATE INDEX agents_business ON agents (business_id, id);
-- Assignable agents of a channel.
CREATE INDEX agents_business_channel ON agents (business_id, channel, status, id);
-- Reference names are unique per business (the generator retries on collision).
CREATE UNIQUE INDEX agents_reference_name ON agents (business_id, reference_name);

-- Data sources an agent may use, in request order.
CREATE TABLE agent_data_sources (
    business_id    TEXT    NOT NULL,
    agent_id       TEXT    NOT NULL,
    data_source_id TEXT    NOT NULL,
    position       INTEGER NOT NULL,
    PRIMARY KEY (agent_id, data_source_id)
) WITHOUT ROWID;
-- Agents using a data source.
CREATE INDEX agent_data_sources_source ON agent_data_sources (business_id, data_source_id);

-- Contact categories an agent is scoped to, in request order.
CREATE TABLE agent_categories (
    business_id TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    category_id TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (agent_id, category_id)
) WITHOUT ROWID;
-- Agents scoped to a category.
CREATE INDEX agent_categories_category ON agent_categories (business_id, category_id);

-- Declared variables: an explicit grant of one structured field under an alias.
CREATE TABLE agent_variables (
    business_id    TEXT    NOT NULL,
    agent_id       TEXT    NOT NULL,
    alias          TEXT    NOT NULL,
    data_source_id TEXT    NOT NULL,
    field_key      TEXT    NOT NULL,
    position       INTEGER NOT NULL,
    PRIMARY KEY (agent_id, alias)                 -- aliases are unique per agent
) WITHOUT ROWID;
-- Agents reading a source's field.
CREATE INDEX agent_variables_source ON agent_variables (business_id, data_source_id, field_key);

-- Provider connections: a chatapp phone number or a photoapp professional
-- account. The token reference is the handle of the provider credential; no
-- API response or log ever contains it.
CREATE TABLE channel_connections (
    id                   TEXT NOT NULL PRIMARY KEY,
    business_id          TEXT NOT NULL,
    channel              TEXT NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
    -- chatapp: phoneNumberId; photoapp: providerAccountId.
    provider_id          TEXT NOT NULL,
    label                TEXT,                    -- chatapp label / photoapp username
    status               TEXT NOT NULL CHECK (status IN ('connected', 'disconnected')),
    token_ref            TEXT,                    -- NULL once disconnected
    provider_assets_json TEXT,                    -- provider account assets; NULL once disconnected
    connected_at         TEXT NOT NULL,
    disconnected_at      TEXT,
    updated_at           TEXT NOT NULL,
    UNIQUE (business_id, channel, provider_id)
);
-- Connections of a business by channel (channel list, photoapp read).
CREATE INDEX channel_connections_business ON channel_connections (business_id, channel, status, connected_at);
-- A provider number or account is connected to at most one business at a
-- time (inbound provider events are routed by it).
CREATE UNIQUE INDEX channel_connections_provider ON channel_connections (channel, provider_id) WHERE status = 'connected';

-- Which agent answers on a connected phone number (chatapp) or account (photoapp).
CREATE TABLE channel_assignments (
    business_id          TEXT    NOT NULL,
    channel              TEXT    NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
    provider_id          TEXT    NOT NULL,        -- phoneNumberId / providerAccountId
    ai_agent_id          TEXT,                    -- NULL: unassigned
    auto_reply_enabled   INTEGER NOT NULL DEFAULT 0,
    human_handoff_active INTEGER NOT NULL DEFAULT 0,
    updated_at           TEXT    NOT NULL,
    PRIMARY KEY (business_id, channel, provider_id)
) WITHOUT ROWID;
-- Assignments of an agent (cleared when it is archived).
CREATE INDEX channel_assignments_agent ON channel_assignments (business_id, ai_agent_id);
