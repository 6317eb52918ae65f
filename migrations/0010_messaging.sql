-- Messaging: uploaded media and outbound message delivery state (component
-- `messaging`, operations 7-9; dispatcher job `messaging.deliver`, the
-- sandbox messenger). Every row carries business_id and every query filters
-- by it.

-- Uploaded image media. The decoded bytes are kept in the row (bounded by
-- the 5 MiB upload limit). `provider_media_id` is the provider's id; an
-- upload of the same bytes for the same number before `expires_at` reuses it.
CREATE TABLE media (
    id                TEXT NOT NULL PRIMARY KEY,
    business_id       TEXT NOT NULL,
    phone_number_id   TEXT NOT NULL,
    mime_type         TEXT NOT NULL,
    file_name         TEXT NOT NULL,
    client_asset_id   TEXT,
    content_sha256    TEXT NOT NULL,             -- lowercase hex
    size_bytes        INTEGER NOT NULL,
    bytes             BLOB NOT NULL,
    provider_media_id TEXT NOT NULL,
    provider_status   TEXT NOT NULL,
    uploaded_at       TEXT NOT NULL,
    expires_at        TEXT NOT NULL,
    correlation_id    TEXT NOT NULL
);
-- The provider-id cache: same bytes, same number, not expired.
CREATE INDEX media_content ON media (business_id, phone_number_id, content_sha256, expires_at);

-- Outbound delivery state on messages (inbound rows leave these NULL).
ALTER TABLE messages ADD COLUMN phone_number_id TEXT;
ALTER TABLE messages ADD COLUMN recipient TEXT;          -- E.164
ALTER TABLE messages ADD COLUMN media_id TEXT;
ALTER TABLE messages ADD COLUMN task_ref TEXT;           -- the messaging.deliver job id
ALTER TABLE messages ADD COLUMN provider_status TEXT;
ALTER TABLE messages ADD COLUMN correlation_id TEXT;
ALTER TABLE messages ADD COLUMN queued_at TEXT;
ALTER TABLE messages ADD COLUMN submitted_at TEXT;
ALTER TABLE messages ADD COLUMN accepted_at TEXT;
ALTER TABLE messages ADD COLUMN sent_at TEXT;
ALTER TABLE messages ADD COLUMN delivered_at TEXT;
ALTER TABLE messages ADD COLUMN read_at TEXT;
ALTER TABLE messages ADD COLUMN failed_at TEXT;
ALTER TABLE messages ADD COLUMN failure_code TEXT;
ALTER TABLE messages ADD COLUMN failure_message TEXT;
