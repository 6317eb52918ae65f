-- Voice calls (issue 12): one row per call, written by the voice area's
-- requests (start, cancel) and its `voice.call` job. The carrier's memo and
-- the line a call holds are internal and never shown.
CREATE TABLE calls (
    business_id        TEXT    NOT NULL,
    id                 TEXT    NOT NULL,                 -- uuid v7: time order
    agent_id           TEXT    NOT NULL,
    agent_name         TEXT    NOT NULL,
    contact_id         TEXT,                             -- null for a `toNumber` call
    contact_name       TEXT,
    source             TEXT    NOT NULL CHECK (source IN ('api', 'batch', 'campaign')),
    callee_number      TEXT    NOT NULL,                 -- E.164
    caller_number      TEXT,
    status             TEXT    NOT NULL CHECK (status IN ('queued', 'ringing', 'answered', 'cancelling',
                                                          'completed', 'no_answer', 'busy', 'failed', 'cancelled')),
    ended_by           TEXT    CHECK (ended_by IS NULL OR ended_by IN ('customer', 'agent', 'operator', 'system', 'provider', 'unknown')),
    end_reason         TEXT,
    -- What the job intends the end to be, set before the carrier hears of
    -- it (an operator's cancel, the agent's end_call, a silence or maximum
    -- duration hang-up): `endedBy` keeps it whatever the carrier reports.
    end_intent         TEXT,
    hangup_sent        INTEGER NOT NULL DEFAULT 0,
    -- The variables snapshotted once at start: the contact's allowlisted
    -- values and the test variables (never shown: contact values appear
    -- only in the resolve operation) ...
    variables_json     TEXT    NOT NULL DEFAULT '{}',
    -- ... and the part of them the caller sent (`testVariables`), shown as callData.
    call_data_json     TEXT    NOT NULL DEFAULT '{}',
    settings_json      TEXT    NOT NULL DEFAULT '{}',    -- the agent's voice settings, snapshotted at start
    greeting           TEXT,                             -- prepared at start, released after answer
    max_duration_s     INTEGER NOT NULL,
    price_per_block    INTEGER NOT NULL,                 -- microcredits per started 20 s, fixed at start
    reserved           INTEGER NOT NULL DEFAULT 0,       -- the reservation still held
    charged            INTEGER NOT NULL DEFAULT 0,
    connected_ms       INTEGER NOT NULL DEFAULT 0,
    recording_ext      TEXT,                             -- `wav`/`opus` once the carrier has a recording
    holds_line         INTEGER NOT NULL DEFAULT 0,
    line_waits         INTEGER NOT NULL DEFAULT 0,       -- times it found every line taken (its backoff)
    -- Carrier side: none (not placed) | placing (line held, placement
    -- begun) | unknown (a placement timed out) | placed.
    carrier_state      TEXT    NOT NULL DEFAULT 'none' CHECK (carrier_state IN ('none', 'placing', 'unknown', 'placed')),
    placements         INTEGER NOT NULL DEFAULT 0,       -- placement attempts made
    requested_at_ms    INTEGER,                          -- the first placement request (carrier time zero)
    memo               TEXT,                             -- the carrier's memo (never shown)
    -- Runtime of the conversation.
    greeting_played    INTEGER NOT NULL DEFAULT 0,       -- percent of the greeting played
    awaiting_reply     INTEGER NOT NULL DEFAULT 0,       -- customer speech not answered yet
    utterances         INTEGER NOT NULL DEFAULT 0,       -- assistant utterances said
    played             INTEGER NOT NULL DEFAULT 0,       -- assistant utterances fully played
    answered_ms        INTEGER,                          -- carrier time of the answer (maximum duration)
    last_activity_ms   INTEGER,                          -- end of the last speech either way (silence rules)
    nudged             INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT    NOT NULL,
    ringing_at         TEXT,
    started_at         TEXT,                             -- answered
    ended_at           TEXT,
    PRIMARY KEY (business_id, id)
) WITHOUT ROWID;
CREATE INDEX calls_agent ON calls (business_id, agent_id, id);
CREATE INDEX calls_contact ON calls (business_id, contact_id, id);
-- Lines in use per business (the lease check counts these).
CREATE INDEX calls_lines ON calls (business_id, holds_line) WHERE holds_line = 1;

-- Secrets the server makes for itself, once per database (the signing key
-- of recording links); never shown.
CREATE TABLE server_secrets (
    name  TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- The transcript: turns in order, with their place in the call's audio.
CREATE TABLE call_turns (
    business_id         TEXT    NOT NULL,
    call_id             TEXT    NOT NULL,
    seq                 INTEGER NOT NULL,
    speaker             TEXT    NOT NULL CHECK (speaker IN ('customer', 'assistant', 'human')),
    text                TEXT    NOT NULL,
    utterance_id        TEXT,                            -- assistant turns: the id said to the carrier
    audio_offset_ms     INTEGER,
    audio_end_offset_ms INTEGER,
    created_at          TEXT    NOT NULL,
    PRIMARY KEY (business_id, call_id, seq)
) WITHOUT ROWID;
