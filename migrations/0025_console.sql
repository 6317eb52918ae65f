-- The console (issue 15): its users, their browser sessions, when an API key
-- was last used, and agent test conversations.

-- A console user belongs to one business. The password is an argon2id hash in
-- PHC form (NULL until the user sets one through the one-time setup link,
-- whose token is stored only as a SHA-256 hash).
CREATE TABLE console_users (
    id                  TEXT PRIMARY KEY,          -- uuid
    business_id         TEXT NOT NULL REFERENCES businesses(id),
    email               TEXT NOT NULL UNIQUE,      -- lowercased
    role                TEXT NOT NULL CHECK (role IN ('owner', 'viewer')),
    password_hash       TEXT,
    setup_token_hash    TEXT UNIQUE,
    setup_expires_at_ms INTEGER,
    created_at          TEXT NOT NULL,
    disabled_at         TEXT
);
CREATE INDEX console_users_business ON console_users(business_id);

-- A logged-in browser. The cookie carries only the random token; the row
-- holds its SHA-256 hash, the CSRF token the page echoes on writes, and two
-- ends: absolute (expires_at_ms) and idle (last_seen_at_ms + the idle bound).
CREATE TABLE console_sessions (
    id              TEXT PRIMARY KEY,              -- uuid, safe to log
    token_hash      TEXT NOT NULL UNIQUE,
    user_id         TEXT NOT NULL REFERENCES console_users(id),
    business_id     TEXT NOT NULL,
    csrf_token      TEXT NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    last_seen_at_ms INTEGER NOT NULL,
    expires_at_ms   INTEGER NOT NULL,
    revoked_at_ms   INTEGER
);
CREATE INDEX console_sessions_user ON console_sessions(user_id);

-- Written from memory at most once a minute per key (never on the request).
ALTER TABLE api_keys ADD COLUMN last_used_at TEXT;
-- Who made a key in the console (NULL: the admin command line).
ALTER TABLE api_keys ADD COLUMN created_by_user_id TEXT;

-- Console-only agent testing: one test conversation per (user, agent).
-- Nothing here reaches a customer, a webhook or a contact's timeline.
CREATE TABLE agent_test_messages (
    business_id TEXT NOT NULL,
    id          TEXT NOT NULL,                     -- uuid v7 (time-ordered)
    user_id     TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    text        TEXT,
    -- assistant turns: pending (the reply job is queued), done, failed.
    status      TEXT NOT NULL DEFAULT 'done',
    error       TEXT,
    grounding_json TEXT,
    -- user turns: the testVariables in force (JSON object).
    variables_json TEXT,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (business_id, id)
) WITHOUT ROWID;
CREATE INDEX agent_test_messages_conversation ON agent_test_messages(business_id, user_id, agent_id, id);
