-- The job runner's fair pick (issue 11): indexes that hold only the jobs it
-- looks at, so a pick costs the same whatever the backlog of a busy lane.
-- Before, a backlog of 30,000 deliveries to ten busy subscriptions was
-- scanned whole (with a read of each row) at every round, about 40 ms.

-- Due jobs without a lane, per class, oldest first.
CREATE INDEX jobs_unlaned_ready ON jobs (calls_out, due_at_ms, business_id, id) WHERE state = 'pending' AND lane IS NULL;

-- Pending jobs of each lane, oldest first: the pick walks the distinct
-- lanes (one seek each) and takes each free lane's head.
CREATE INDEX jobs_lane_ready ON jobs (lane, due_at_ms, id) WHERE state = 'pending' AND lane IS NOT NULL;

-- Leased jobs: live lanes, steps running per business, expired leases.
CREATE INDEX jobs_leased ON jobs (lease_until_ms, lane, calls_out, business_id) WHERE state = 'leased';
