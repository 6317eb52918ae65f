-- The console for a support team (issue 50): a support-agent role between
-- viewer and owner, and a team inbox (assignment, open/resolved, internal
-- notes, unread per person, who sent each outbound message, saved replies).

-- The roles: owner, agent (answers, assigns, notes, resolves; configures
-- nothing), viewer. SQLite cannot change a CHECK in place: the table is
-- rebuilt with the same columns (its other readers name it, not its rowid).
CREATE TABLE console_users_v2 (
    id                  TEXT PRIMARY KEY,          -- uuid
    business_id         TEXT NOT NULL REFERENCES businesses(id),
    email               TEXT NOT NULL UNIQUE,      -- lowercased
    role                TEXT NOT NULL CHECK (role IN ('owner', 'agent', 'viewer')),
    password_hash       TEXT,
    setup_token_hash    TEXT UNIQUE,
    setup_expires_at_ms INTEGER,
    created_at          TEXT NOT NULL,
    disabled_at         TEXT
);
INSERT INTO console_users_v2 (id, business_id, email, role, password_hash, setup_token_hash, setup_expires_at_ms, created_at, disabled_at)
    SELECT id, business_id, email, role, password_hash, setup_token_hash, setup_expires_at_ms, created_at, disabled_at FROM console_users;
DROP TABLE console_users;
ALTER TABLE console_users_v2 RENAME TO console_users;
CREATE INDEX console_users_business ON console_users(business_id);

-- The people of a business as its own database sees them: main keeps the
-- console users (logins span databases); the host copies each business's
-- (id, address, role, active) here when they change and when one of them
-- logs in or opens the console, so the inbox names the person who
-- answered and checks an assignee without reading main.
CREATE TABLE team_members (
    business_id TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    email       TEXT NOT NULL,
    role        TEXT NOT NULL,
    active      INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (business_id, user_id)
) WITHOUT ROWID;

-- A conversation's person (a console user's id, NULL: nobody) and state:
-- open until someone resolves it; a new inbound message or comment opens
-- it again (the triggers below, so every writer of one does).
ALTER TABLE conversations ADD COLUMN assigned_user_id TEXT;
ALTER TABLE conversations ADD COLUMN state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved'));
ALTER TABLE conversations ADD COLUMN resolved_at TEXT;
-- What counts as read for a person who has no marker of their own in a
-- conversation: what was read before markers were per person.
ALTER TABLE conversations ADD COLUMN read_baseline_at TEXT;
UPDATE conversations SET read_baseline_at = CASE WHEN unread_count = 0 THEN last_activity_at
    ELSE IFNULL(read_at, (SELECT max(o.created_at) FROM messages o WHERE o.business_id = conversations.business_id
                          AND o.conversation_id = conversations.id AND o.direction = 'outbound')) END;
CREATE INDEX conversations_assignee ON conversations (business_id, assigned_user_id, last_activity_at DESC, id DESC);

CREATE TRIGGER inbox_reopened_by_message AFTER INSERT ON messages WHEN NEW.direction = 'inbound' BEGIN
    UPDATE conversations SET state = 'open', resolved_at = NULL
    WHERE business_id = NEW.business_id AND id = NEW.conversation_id AND state <> 'open';
END;
CREATE TRIGGER inbox_reopened_by_comment AFTER INSERT ON photoapp_comments BEGIN
    UPDATE conversations SET state = 'open', resolved_at = NULL
    WHERE business_id = NEW.business_id AND id = NEW.conversation_id AND state <> 'open';
END;

-- Each person's read marker: the newest entry they have seen (its time and
-- id, the thread's order).
CREATE TABLE conversation_reads (
    business_id     TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    seen_at         TEXT NOT NULL,
    seen_id         TEXT NOT NULL,
    PRIMARY KEY (business_id, conversation_id, user_id)
) WITHOUT ROWID;

-- Internal notes: in the thread, never sent to the contact. The author is a
-- console user (NULL: written with an API key).
CREATE TABLE conversation_notes (
    business_id     TEXT NOT NULL,
    id              TEXT NOT NULL,             -- uuid v7 (time-ordered)
    conversation_id TEXT NOT NULL,
    author_user_id  TEXT,
    text            TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (business_id, id)
) WITHOUT ROWID;
CREATE INDEX conversation_notes_thread ON conversation_notes (business_id, conversation_id, created_at, id);

-- Who sent an outbound message: 'agent' (sender_id: the AI agent), 'person'
-- (a console user), 'api' (an API key), 'campaign' (its opening). NULL on
-- messages sent before this was kept.
ALTER TABLE messages ADD COLUMN sender_kind TEXT;
ALTER TABLE messages ADD COLUMN sender_id TEXT;
-- A campaign's opening is its campaign's: marked when its membership names
-- the message (the campaigns area writes the membership, the messaging
-- area the message), and for the openings sent before.
CREATE TRIGGER messages_sent_by_campaign AFTER UPDATE OF message_id ON campaign_members WHEN NEW.message_id IS NOT NULL BEGIN
    UPDATE messages SET sender_kind = 'campaign', sender_id = NEW.campaign_id
    WHERE business_id = NEW.business_id AND id = NEW.message_id AND sender_kind IS NULL;
END;
UPDATE messages SET sender_kind = 'campaign', sender_id = cm.campaign_id
FROM campaign_members cm WHERE cm.message_id IS NOT NULL AND messages.business_id = cm.business_id AND messages.id = cm.message_id;

-- Saved replies: a business's ready answers for the reply box.
CREATE TABLE saved_replies (
    business_id TEXT NOT NULL,
    id          TEXT NOT NULL,                 -- uuid v7
    title       TEXT NOT NULL,
    text        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (business_id, id)
) WITHOUT ROWID;
