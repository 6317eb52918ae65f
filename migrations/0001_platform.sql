-- Platform tables owned by the host: tenants, API keys, idempotency records
-- and the durable job queue. Every tenant row carries business_id.

CREATE TABLE businesses (
    id          TEXT PRIMARY KEY,          -- uuid
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

-- Keys are stored only as SHA-256 hashes of the whole key.
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,          -- uuid, safe to show
    business_id TEXT NOT NULL REFERENCES businesses(id),
    key_hash    TEXT NOT NULL UNIQUE,
    key_last4   TEXT NOT NULL,
    scopes      TEXT NOT NULL,             -- comma-separated, sorted
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX api_keys_business ON api_keys(business_id);

-- One row per (business, operation, key): the stored response of the first
-- completed attempt. 5xx results are never stored.
CREATE TABLE idempotency_records (
    business_id   TEXT NOT NULL,
    operation_id  TEXT NOT NULL,
    idem_key      TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    status        INTEGER NOT NULL,
    response_body TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (business_id, operation_id, idem_key)
);
CREATE INDEX idempotency_records_age ON idempotency_records(created_at_ms);

-- Durable background work; enqueued in the same transaction as its cause.
CREATE TABLE jobs (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    business_id   TEXT NOT NULL,
    payload       TEXT NOT NULL,
    due_at_ms     INTEGER NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL DEFAULT 'pending',  -- pending, leased, done, dead
    lease_owner   TEXT,
    lease_until_ms INTEGER,
    fence         INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX jobs_due ON jobs(state, due_at_ms);
