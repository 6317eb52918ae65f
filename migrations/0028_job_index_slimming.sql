-- Issue 11: every state change of a job rewrote an entry in each index on
-- `state`, and a finished job stayed in all of them. The runner's queries
-- now read only the partial indexes of migration 0027 and this one, so
-- the indexes over every job go: a delivery (leased, then done, and the
-- next job of its lane leased) writes fewer index pages in its commit.
DROP INDEX jobs_business;   -- read by no query since 0027
DROP INDEX jobs_lane;       -- lanes: jobs_lane_ready (pending), jobs_leased
DROP INDEX jobs_due;        -- due work: jobs_pending_due below, jobs_leased

-- Pending jobs by due time: is anything due (the idle round's read), the
-- queue gauges.
CREATE INDEX jobs_pending_due ON jobs (due_at_ms) WHERE state = 'pending';
