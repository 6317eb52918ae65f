-- What a job declares about itself (the area that owns its kind says so at
-- enqueue; the host keeps no list of kinds), and the external effects its
-- steps began.

-- 1: the step calls out (a webhook receiver, a provider, the AI endpoint):
-- it runs concurrently with other such steps and takes the write lock only
-- at its first write.
ALTER TABLE jobs ADD COLUMN calls_out INTEGER NOT NULL DEFAULT 0;
-- Jobs sharing a lane run one at a time, oldest due first (the deliveries of
-- one webhook subscription). NULL: no constraint.
ALTER TABLE jobs ADD COLUMN lane TEXT;

-- Jobs enqueued before this migration by the kinds that call out.
UPDATE jobs SET calls_out = 1 WHERE kind IN ('webhooks.deliver', 'messaging.deliver', 'messaging.autoreply');
UPDATE jobs SET lane = 'webhooks:' || json_extract(payload, '$.subscriptionId') WHERE kind = 'webhooks.deliver';

CREATE INDEX jobs_lane ON jobs (lane, state, due_at_ms) WHERE lane IS NOT NULL;

-- An external request a step was about to make (`jobs.begin-effect`),
-- committed before the request went out. A later step of the same job finds
-- the key here and never repeats that request.
CREATE TABLE job_effects (
    job_id        TEXT NOT NULL,
    effect_key    TEXT NOT NULL,
    fence         INTEGER NOT NULL,
    started_at_ms INTEGER NOT NULL,
    PRIMARY KEY (job_id, effect_key)
) WITHOUT ROWID;
