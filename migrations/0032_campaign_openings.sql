-- Every opening message a chatapp iteration sent (issue 40): a failed
-- opening is retried, so a member may have several, and the campaign's
-- activities list each one (campaign_members.message_id keeps the latest,
-- whose delivery and replies the member's outcome follows).
CREATE TABLE campaign_openings (
    business_id  TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    campaign_id  TEXT NOT NULL,
    iteration_id TEXT NOT NULL,
    member_id    TEXT NOT NULL,
    contact_id   TEXT NOT NULL,
    contact_name TEXT,
    PRIMARY KEY (business_id, message_id)
) WITHOUT ROWID;
CREATE INDEX campaign_openings_campaign ON campaign_openings (business_id, campaign_id, message_id);
-- The openings sent before: one per member, its latest.
INSERT INTO campaign_openings (business_id, message_id, campaign_id, iteration_id, member_id, contact_id, contact_name)
    SELECT business_id, message_id, campaign_id, iteration_id, id, contact_id, contact_name FROM campaign_members WHERE message_id IS NOT NULL;
