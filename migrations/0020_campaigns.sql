-- Campaigns (issue 13): one objective, ordered channel-specific iterations,
-- immutable membership. Written by the campaigns area's requests and its
-- `campaigns.dispatch` job; calls of a campaign carry their attribution.
CREATE TABLE campaigns (
    business_id TEXT NOT NULL,
    id          TEXT NOT NULL,                      -- uuid v7: creation order
    name        TEXT NOT NULL,
    objective   TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (business_id, id)
) WITHOUT ROWID;

CREATE TABLE campaign_iterations (
    business_id         TEXT    NOT NULL,
    id                  TEXT    NOT NULL,
    campaign_id         TEXT    NOT NULL,
    sequence            INTEGER NOT NULL,           -- 1-based
    channel             TEXT    NOT NULL CHECK (channel IN ('voice', 'chatapp')),
    agent_id            TEXT    NOT NULL,
    status              TEXT    NOT NULL CHECK (status IN ('draft', 'running', 'paused', 'completed', 'cancelled')),
    -- Why a running iteration paused itself (credit ran out); null when an operator paused it.
    paused_reason       TEXT,
    audience            TEXT    NOT NULL CHECK (audience IN ('contacts', 'categories', 'outcomes', 'ai_recommended')),
    max_retries         INTEGER NOT NULL,
    retry_delay_minutes INTEGER NOT NULL,
    -- The budget cap in microcredits (null: none): what the iteration's
    -- calls hold reserved plus what they were charged never exceeds it.
    max_spend           INTEGER,
    -- A chatapp iteration's opening message ({{alias}} placeholders filled
    -- from the agent's declared contact variables).
    opening_message     TEXT,
    started_at          TEXT,
    ended_at            TEXT,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    PRIMARY KEY (business_id, id),
    UNIQUE (business_id, campaign_id, sequence)
) WITHOUT ROWID;

-- One member per contact and iteration, written once at creation (the
-- snapshot): only its outcome, attempts and claim change afterwards.
CREATE TABLE campaign_members (
    business_id   TEXT    NOT NULL,
    iteration_id  TEXT    NOT NULL,
    id            TEXT    NOT NULL,                 -- uuid v7
    campaign_id   TEXT    NOT NULL,
    contact_id    TEXT    NOT NULL,
    contact_name  TEXT,                             -- as it was when the member was added
    outcome       TEXT    NOT NULL DEFAULT 'pending',
    attempts      INTEGER NOT NULL DEFAULT 0,
    -- The fenced claim: rises every time the dispatcher takes the member;
    -- a call records the claim it was placed under, and its end counts only
    -- while the member still holds that claim.
    claim         INTEGER NOT NULL DEFAULT 0,
    call_id       TEXT,                             -- the call of the current claim (voice)
    message_id    TEXT,                             -- the opening message sent (chatapp)
    open_until_ms INTEGER,                          -- chatapp: a reply counts until then
    -- A retry is due at this time (busy, no_answer, failed with retries left).
    retry_at_ms   INTEGER,
    created_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    PRIMARY KEY (business_id, iteration_id, id),
    UNIQUE (business_id, iteration_id, contact_id)
) WITHOUT ROWID;
CREATE INDEX campaign_members_outcome ON campaign_members (business_id, iteration_id, outcome);
CREATE INDEX campaign_members_contact ON campaign_members (business_id, contact_id);

-- A member's outcome history, oldest first.
CREATE TABLE campaign_member_events (
    business_id  TEXT    NOT NULL,
    member_id    TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    outcome      TEXT    NOT NULL,
    occurred_at  TEXT    NOT NULL,
    PRIMARY KEY (business_id, member_id, seq)
) WITHOUT ROWID;

-- Attribution of a campaign's calls.
ALTER TABLE calls ADD COLUMN campaign_id TEXT;
ALTER TABLE calls ADD COLUMN iteration_id TEXT;
ALTER TABLE calls ADD COLUMN member_id TEXT;
ALTER TABLE calls ADD COLUMN member_claim INTEGER;
CREATE INDEX calls_campaign ON calls (business_id, campaign_id, id) WHERE campaign_id IS NOT NULL;

-- Settings of the running `serve` that components read (written at start):
-- `campaign_minute_ms`, the length of a retry-delay minute.
CREATE TABLE runtime_settings (
    name  TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
