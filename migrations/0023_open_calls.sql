-- The calls of a business not ended yet (issue 13): the campaign dispatch
-- counts them every step to know how many lines are free, which without
-- this index read every call the business ever made.
CREATE INDEX calls_open ON calls (business_id) WHERE status NOT IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled');

-- A campaign's members in id order (memberships and activities, 50-51),
-- whatever the iteration: without it a page read every member of the
-- business and sorted them.
CREATE INDEX campaign_members_campaign ON campaign_members (business_id, campaign_id, id);
