-- Photoapp reactions and referrals (issue 20): a user's reaction to a
-- message (the emoji; NULL once taken back) and the latest referral that
-- brought the user to the account's conversation (JSON: source, adId, postId).
ALTER TABLE messages ADD COLUMN reaction TEXT;
ALTER TABLE messages ADD COLUMN reacted_at TEXT;
ALTER TABLE conversations ADD COLUMN referral_json TEXT;
ALTER TABLE conversations ADD COLUMN referred_at TEXT;
