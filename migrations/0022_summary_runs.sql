-- Campaign AI summary runs (issue 14): an estimate is a run in status
-- `estimated` with its exact maximum charge; confirming it reserves that
-- maximum and queues the `campaigns.summarize` job, which assesses each
-- unique contact of the campaign once. Runs are append-only: a new run
-- never rewrites an older one (an unconfirmed estimate only expires).
CREATE TABLE summary_runs (
    business_id        TEXT    NOT NULL,
    id                 TEXT    NOT NULL,               -- uuid v7: creation order
    campaign_id        TEXT    NOT NULL,
    status             TEXT    NOT NULL CHECK (status IN ('estimated', 'expired', 'queued', 'running', 'completed', 'partial', 'failed')),
    -- The campaign's state the estimate was made over (its iterations and
    -- their last change); a confirm against another state is stale.
    campaign_state     TEXT    NOT NULL,
    -- The price, fixed at the estimate.
    price_per_contact  INTEGER NOT NULL,
    price_per_thousand INTEGER NOT NULL,
    contact_count      INTEGER NOT NULL,
    material_chars     INTEGER NOT NULL,
    maximum_charge     INTEGER NOT NULL,
    charged            INTEGER NOT NULL DEFAULT 0,
    assessed_count     INTEGER NOT NULL DEFAULT 0,
    failed_count       INTEGER NOT NULL DEFAULT 0,
    -- Cost per final outcome (JSON), written when the run ends.
    cost_json          TEXT,
    expires_at_ms      INTEGER NOT NULL,
    expires_at         TEXT    NOT NULL,
    confirmed_at       TEXT,
    completed_at       TEXT,
    created_at         TEXT    NOT NULL,
    updated_at         TEXT    NOT NULL,
    PRIMARY KEY (business_id, id)
) WITHOUT ROWID;
CREATE INDEX summary_runs_campaign ON summary_runs (business_id, campaign_id, id);

-- One row per unique contact of a run, written at the estimate (its
-- material size and maximum) and completed by the job: the conclusion the
-- export streams.
CREATE TABLE summary_assessments (
    business_id    TEXT    NOT NULL,
    run_id         TEXT    NOT NULL,
    contact_id     TEXT    NOT NULL,
    -- The contact's outcome in the last iteration it was a member of.
    final_outcome  TEXT    NOT NULL,
    material_chars INTEGER NOT NULL,
    maximum_charge INTEGER NOT NULL,
    status         TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'assessed', 'failed')),
    attempts       INTEGER NOT NULL DEFAULT 0,
    retry_at_ms    INTEGER NOT NULL DEFAULT 0,
    -- As the contact read when it was assessed (the Contact column).
    contact_name   TEXT,
    contact_mobile TEXT,
    summary        TEXT,
    next_action    TEXT,
    follow_up      INTEGER,
    error          TEXT,
    charged        INTEGER NOT NULL DEFAULT 0,
    assessed_at    TEXT,
    PRIMARY KEY (business_id, run_id, contact_id)
) WITHOUT ROWID;
-- The job reads pending contacts in contact id order, skipping those not due yet.
CREATE INDEX summary_assessments_pending ON summary_assessments (business_id, run_id, status, contact_id);
CREATE INDEX summary_assessments_contact ON summary_assessments (business_id, contact_id, run_id);

-- A business's price of one assessment (`admin summaries configure`);
-- without a row the documented defaults apply.
CREATE TABLE summary_prices (
    business_id        TEXT    NOT NULL PRIMARY KEY,
    price_per_contact  INTEGER NOT NULL,
    price_per_thousand INTEGER NOT NULL,
    updated_at         TEXT    NOT NULL
) WITHOUT ROWID;
