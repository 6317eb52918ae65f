-- Contacts resource area (component `contacts`).
--
-- Every tenant row carries business_id and every query filters by it.
-- Relationships are maintained explicitly by the component's SQL (no reliance
-- on PRAGMA foreign_keys): deleting a contact deletes its contact_categories
-- and timeline_entries rows; deleting a category deletes its links.
-- Ids are uuid v7 text (time ordered); timestamps are RFC 3339 UTC text with
-- milliseconds, so text order is time order.

CREATE TABLE contacts (
    id                    TEXT    NOT NULL PRIMARY KEY,
    business_id           TEXT    NOT NULL,
    mobile                TEXT    NOT NULL,              -- E.164, e.g. +14155550123
    name                  TEXT    NOT NULL,
    fields_json           TEXT    NOT NULL DEFAULT '{}', -- custom fields: JSON object of strings
    communication_blocked INTEGER NOT NULL DEFAULT 0,    -- 0 | 1
    created_at            TEXT    NOT NULL,
    updated_at            TEXT    NOT NULL,
    UNIQUE (business_id, mobile)                         -- lookup by mobile; import upserts
);
-- Listing (ordered by id = creation order) and single-contact lookups.
CREATE INDEX contacts_business_id ON contacts (business_id, id);

CREATE TABLE categories (
    id          TEXT NOT NULL PRIMARY KEY,
    business_id TEXT NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX categories_business_id ON categories (business_id, id);
-- Names are unique per business, ignoring ASCII case.
CREATE UNIQUE INDEX categories_business_name ON categories (business_id, name COLLATE NOCASE);

CREATE TABLE contact_categories (
    business_id TEXT NOT NULL,
    contact_id  TEXT NOT NULL,
    category_id TEXT NOT NULL,
    PRIMARY KEY (contact_id, category_id)                -- categories of a contact
) WITHOUT ROWID;
-- Contacts of a category (list filter, counts, delete by category).
CREATE INDEX contact_categories_category ON contact_categories (business_id, category_id, contact_id);

-- Every custom field key ever used by a business (offered by data sources).
CREATE TABLE contact_fields (
    business_id TEXT NOT NULL,
    field_key   TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (business_id, field_key)
) WITHOUT ROWID;

-- Cross-channel history of a contact. Written by messaging and voice later.
CREATE TABLE timeline_entries (
    id           TEXT NOT NULL PRIMARY KEY,
    business_id  TEXT NOT NULL,
    contact_id   TEXT NOT NULL,
    channel      TEXT NOT NULL,                          -- chatapp | photoapp | voice | sms | other
    kind         TEXT NOT NULL CHECK (kind IN ('message', 'call')),
    direction    TEXT CHECK (direction IS NULL OR direction IN ('inbound', 'outbound')),
    campaign_id  TEXT,
    occurred_at  TEXT NOT NULL,
    summary_json TEXT NOT NULL DEFAULT '{}'              -- JSON object
);
-- Timeline pages (newest first).
CREATE INDEX timeline_entries_contact ON timeline_entries (business_id, contact_id, occurred_at DESC, id DESC);
-- Per-channel activity rollups (count, latest) without reading the table.
CREATE INDEX timeline_entries_channel ON timeline_entries (business_id, contact_id, channel, occurred_at);
-- Timeline limited to one campaign.
CREATE INDEX timeline_entries_campaign ON timeline_entries (business_id, contact_id, campaign_id, occurred_at DESC, id DESC);
