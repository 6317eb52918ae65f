-- Photoapp reactions, referrals and comments (issue 20): a user's reaction to a
-- message (the emoji; NULL once taken back) and the latest referral that
-- brought the user to the account's conversation (JSON: source, adId, postId).
ALTER TABLE messages ADD COLUMN reaction TEXT;
ALTER TABLE messages ADD COLUMN reacted_at TEXT;
ALTER TABLE conversations ADD COLUMN referral_json TEXT;
ALTER TABLE conversations ADD COLUMN referred_at TEXT;

-- Public comments on the connected account's posts (issue 20): one row per
-- provider comment (a redelivered comment is stored once).
CREATE TABLE photoapp_comments (
    business_id         TEXT NOT NULL,
    id                  TEXT NOT NULL,                 -- uuid v7
    account_id          TEXT NOT NULL,
    conversation_id     TEXT NOT NULL,                 -- the commenter's participant conversation
    provider_comment_id TEXT NOT NULL,
    post_id             TEXT,
    text                TEXT NOT NULL,
    -- received (nobody answers), replying (the agent's reply job is queued),
    -- replied, failed.
    status              TEXT NOT NULL DEFAULT 'received',
    reply_text          TEXT,
    provider_reply_id   TEXT,
    failure_code        TEXT,
    failure_message     TEXT,
    replied_at          TEXT,
    created_at          TEXT NOT NULL,
    PRIMARY KEY (business_id, id),
    UNIQUE (business_id, account_id, provider_comment_id)
) WITHOUT ROWID;
