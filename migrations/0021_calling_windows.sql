-- Calling windows of campaigns (issue 13): a business's default time zone
-- (IANA name) and default calling window (minutes after local midnight,
-- [start, end); start > end wraps past midnight), used where an iteration
-- has no window of its own and a contact has no `timeZone` field.
ALTER TABLE voice_accounts ADD COLUMN time_zone TEXT;
ALTER TABLE voice_accounts ADD COLUMN window_start INTEGER;
ALTER TABLE voice_accounts ADD COLUMN window_end INTEGER;
ALTER TABLE campaign_iterations ADD COLUMN window_start INTEGER;
ALTER TABLE campaign_iterations ADD COLUMN window_end INTEGER;
