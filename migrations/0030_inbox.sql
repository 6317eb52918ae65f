-- The inbox (issue 39, operations 61-65; components/messaging/src/conversations/).
-- A conversation keeps what its list needs, so a page of the newest
-- conversations is an index range, not an aggregate over every message:
-- its newest activity (a message or a photoapp comment), the ids of its
-- newest message and comment, how many inbound messages and comments
-- arrived since it was last read, and whether a person has taken it over
-- from the agent (the per-conversation handoff).
ALTER TABLE conversations ADD COLUMN last_activity_at TEXT;
ALTER TABLE conversations ADD COLUMN last_message_id TEXT;
ALTER TABLE conversations ADD COLUMN last_comment_id TEXT;
ALTER TABLE conversations ADD COLUMN unread_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN read_at TEXT;
ALTER TABLE conversations ADD COLUMN handoff_active INTEGER NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN handoff_changed_at TEXT;

-- Kept by triggers, so every writer of a message or a comment (inbound
-- jobs, sends, auto-replies, private replies, comments) keeps the list
-- true without knowing about it. Deterministic: only the new row's values.
CREATE TRIGGER inbox_message_added AFTER INSERT ON messages BEGIN
    UPDATE conversations SET
        last_activity_at = max(IFNULL(last_activity_at, ''), NEW.created_at),
        last_message_id = NEW.id,
        unread_count = unread_count + (NEW.direction = 'inbound')
    WHERE business_id = NEW.business_id AND id = NEW.conversation_id;
END;
CREATE TRIGGER inbox_comment_added AFTER INSERT ON photoapp_comments BEGIN
    UPDATE conversations SET
        last_activity_at = max(IFNULL(last_activity_at, ''), NEW.created_at),
        last_comment_id = NEW.id,
        unread_count = unread_count + 1
    WHERE business_id = NEW.business_id AND id = NEW.conversation_id;
END;

-- What was there before: the newest message and comment; what arrived
-- after the business's last outbound message counts as unread.
UPDATE conversations SET
    last_message_id = (SELECT m.id FROM messages m WHERE m.business_id = conversations.business_id AND m.conversation_id = conversations.id
                       ORDER BY m.created_at DESC, m.id DESC LIMIT 1),
    last_comment_id = (SELECT k.id FROM photoapp_comments k WHERE k.business_id = conversations.business_id AND k.conversation_id = conversations.id
                       ORDER BY k.created_at DESC, k.id DESC LIMIT 1);
UPDATE conversations SET
    last_activity_at = max(
        IFNULL((SELECT created_at FROM messages m WHERE m.business_id = conversations.business_id AND m.id = conversations.last_message_id), ''),
        IFNULL((SELECT created_at FROM photoapp_comments k WHERE k.business_id = conversations.business_id AND k.id = conversations.last_comment_id), ''),
        created_at),
    unread_count = (SELECT count(*) FROM messages m WHERE m.business_id = conversations.business_id AND m.conversation_id = conversations.id
                    AND m.direction = 'inbound'
                    AND m.created_at > IFNULL((SELECT max(o.created_at) FROM messages o WHERE o.business_id = conversations.business_id
                                                 AND o.conversation_id = conversations.id AND o.direction = 'outbound'), ''));
-- A conversation without messages (a referral or comment started it) is
-- listed by when it started.
CREATE TRIGGER inbox_conversation_started AFTER INSERT ON conversations WHEN NEW.last_activity_at IS NULL BEGIN
    UPDATE conversations SET last_activity_at = NEW.created_at WHERE business_id = NEW.business_id AND id = NEW.id;
END;

-- The list, newest activity first (with the cursor's tie-break).
CREATE INDEX conversations_activity ON conversations (business_id, last_activity_at DESC, id DESC);
-- A comment thread in order (the thread merges messages and comments).
CREATE INDEX photoapp_comments_conversation ON photoapp_comments (business_id, conversation_id, created_at, id);
