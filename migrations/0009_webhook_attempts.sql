-- Every delivery attempt of every webhook event (component dispatcher,
-- job kind webhooks.deliver). The outbox itself is the jobs table: one
-- `webhooks.deliver` job per (event, subscription), enqueued in the same
-- transaction as the change that caused the event.
CREATE TABLE webhook_attempts (
    id              TEXT NOT NULL PRIMARY KEY,
    business_id     TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    retry_number    INTEGER NOT NULL,
    status_code     INTEGER,            -- null when no response (refused, connection error, timeout)
    error           TEXT,
    attempted_at    TEXT NOT NULL
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (business_id, subscription_id, event_id, retry_number);
