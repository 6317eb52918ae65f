-- The job runner's bookkeeping (jobs itself is in 0001).

-- Leadership: exactly one node runs the dispatcher. A node holds the row
-- while `expires_at_ms` is in the future and renews it; `fence` rises on
-- every change of owner.
CREATE TABLE leases (
    name          TEXT PRIMARY KEY,
    owner         TEXT NOT NULL,
    fence         INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL
);

-- Every run of every job: who ran it under which fence, and how it ended.
CREATE TABLE job_runs (
    job_id        TEXT NOT NULL,
    fence         INTEGER NOT NULL,
    node          TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL,
    ended_at_ms   INTEGER NOT NULL,
    outcome       TEXT NOT NULL,       -- done, retry, continue, dead, trapped, stale
    detail        TEXT,
    PRIMARY KEY (job_id, fence)
);
CREATE INDEX jobs_business ON jobs (business_id, kind, state);
