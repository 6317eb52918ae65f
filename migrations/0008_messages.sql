-- Messaging: conversations and messages (dispatcher job `messaging.inbound`;
-- sends later). Every tenant row carries business_id and every query filters
-- by it. Ids are uuid v7 text; timestamps RFC 3339 UTC text with milliseconds.

-- One conversation per (business, channel, phone number, contact).
CREATE TABLE conversations (
    id              TEXT NOT NULL PRIMARY KEY,
    business_id     TEXT NOT NULL,
    contact_id      TEXT NOT NULL,
    channel         TEXT NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
    phone_number_id TEXT,                     -- chatapp: the business number
    created_at      TEXT NOT NULL,
    UNIQUE (business_id, channel, phone_number_id, contact_id)
);
-- Conversations of a contact.
CREATE INDEX conversations_contact ON conversations (business_id, contact_id);

CREATE TABLE messages (
    id                  TEXT NOT NULL PRIMARY KEY,
    business_id         TEXT NOT NULL,
    conversation_id     TEXT NOT NULL,
    contact_id          TEXT NOT NULL,
    channel             TEXT NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
    direction           TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    type                TEXT NOT NULL,            -- text | image
    text                TEXT,
    provider_message_id TEXT,                     -- NULL until the provider names it (outbound)
    status              TEXT NOT NULL,            -- inbound: received
    created_at          TEXT NOT NULL,
    -- A provider message redelivered by the provider is processed once.
    UNIQUE (business_id, provider_message_id)
);
-- A conversation's messages in order (agent context: the last N).
CREATE INDEX messages_conversation ON messages (business_id, conversation_id, created_at, id);
