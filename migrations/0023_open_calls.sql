-- The calls of a business not ended yet (issue 13): the campaign dispatch
-- counts them every step to know how many lines are free, which without
-- this index read every call the business ever made.
CREATE INDEX calls_open ON calls (business_id) WHERE status NOT IN ('completed', 'no_answer', 'busy', 'failed', 'cancelled');
