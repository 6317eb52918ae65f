-- Photoapp conversations: a photoapp user who writes to the business's
-- professional account is a participant before (and unless) they are linked
-- to a mobile-first contact (operation 34), so a conversation's and a
-- message's contact may be NULL. SQLite cannot drop NOT NULL in place, so
-- both tables are rebuilt with their rows, constraints and indexes.

CREATE TABLE conversations_v2 (
    id                  TEXT NOT NULL PRIMARY KEY,
    business_id         TEXT NOT NULL,
    contact_id          TEXT,                     -- NULL: a photoapp participant not linked yet
    channel             TEXT NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
    phone_number_id     TEXT,                     -- chatapp: the business number
    provider_account_id TEXT,                     -- photoapp: the business's professional account
    participant_id      TEXT,                     -- photoapp: the provider's user id
    participant_name    TEXT,                     -- photoapp: the user's handle, as last seen
    created_at          TEXT NOT NULL,
    UNIQUE (business_id, channel, phone_number_id, contact_id),
    CHECK (channel = 'chatapp' AND contact_id IS NOT NULL AND phone_number_id IS NOT NULL
        OR channel = 'photoapp' AND provider_account_id IS NOT NULL AND participant_id IS NOT NULL)
);
INSERT INTO conversations_v2 (id, business_id, contact_id, channel, phone_number_id, created_at)
    SELECT id, business_id, contact_id, channel, phone_number_id, created_at FROM conversations;
DROP TABLE conversations;
ALTER TABLE conversations_v2 RENAME TO conversations;
CREATE INDEX conversations_contact ON conversations (business_id, contact_id);
-- One conversation per photoapp user and account (inbound resolves by it).
CREATE UNIQUE INDEX conversations_participant ON conversations (business_id, provider_account_id, participant_id)
    WHERE channel = 'photoapp';

CREATE TABLE messages_v2 (
    id                  TEXT NOT NULL PRIMARY KEY,
    business_id         TEXT NOT NULL,
    conversation_id     TEXT NOT NULL,
    contact_id          TEXT,                     -- NULL while a photoapp participant is not linked
    channel             TEXT NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
    direction           TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    type                TEXT NOT NULL,            -- text | image
    text                TEXT,
    provider_message_id TEXT,                     -- NULL until the provider names it (outbound)
    status              TEXT NOT NULL,            -- inbound: received
    created_at          TEXT NOT NULL,
    phone_number_id     TEXT,                     -- outbound: the sender (chatapp number or photoapp account)
    recipient           TEXT,                     -- outbound: E.164 or the photoapp user id
    media_id            TEXT,
    task_ref            TEXT,                     -- the messaging.deliver job id
    provider_status     TEXT,
    correlation_id      TEXT,
    queued_at           TEXT,
    submitted_at        TEXT,
    accepted_at         TEXT,
    sent_at             TEXT,
    delivered_at        TEXT,
    read_at             TEXT,
    failed_at           TEXT,
    failure_code        TEXT,
    failure_message     TEXT,
    -- A provider message redelivered by the provider is processed once.
    UNIQUE (business_id, provider_message_id)
);
INSERT INTO messages_v2 (id, business_id, conversation_id, contact_id, channel, direction, type, text, provider_message_id, status,
                         created_at, phone_number_id, recipient, media_id, task_ref, provider_status, correlation_id, queued_at,
                         submitted_at, accepted_at, sent_at, delivered_at, read_at, failed_at, failure_code, failure_message)
    SELECT id, business_id, conversation_id, contact_id, channel, direction, type, text, provider_message_id, status,
           created_at, phone_number_id, recipient, media_id, task_ref, provider_status, correlation_id, queued_at,
           submitted_at, accepted_at, sent_at, delivered_at, read_at, failed_at, failure_code, failure_message FROM messages;
DROP TABLE messages;
ALTER TABLE messages_v2 RENAME TO messages;
CREATE INDEX messages_conversation ON messages (business_id, conversation_id, created_at, id);
