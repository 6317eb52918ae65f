-- Plugins (issue 18): which plugin serves a business's provider interface,
-- and the delivery statuses a plugin's provider pushed to us.

-- One row per business and interface that does not use the embedded
-- sandbox adapter. `settings_json` holds the plugin's settings for this
-- business (secret ones included: they are never shown or logged).
CREATE TABLE provider_choices (
    business_id   TEXT NOT NULL,
    interface     TEXT NOT NULL,              -- messenger | carrier
    plugin        TEXT NOT NULL,              -- the manifest's name
    settings_json TEXT NOT NULL DEFAULT '{}',
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (business_id, interface)
);

-- Statuses received at POST /providers/v1/{businessId}/messenger/events,
-- read by the host's `track` answer for the message's delivery job. Kept
-- as received (a status arriving twice is stored once) for a week, then
-- purged by the maintenance loop.
CREATE TABLE pushed_statuses (
    business_id         TEXT NOT NULL,
    provider_message_id TEXT NOT NULL,
    status              TEXT NOT NULL,
    provider_status     TEXT NOT NULL,
    failure_code        TEXT,
    failure_message     TEXT,
    received_at_ms      INTEGER NOT NULL,
    PRIMARY KEY (business_id, provider_message_id, status)
);
CREATE INDEX pushed_statuses_age ON pushed_statuses (received_at_ms);
