-- A call waiting for a line is woken when one frees (issue 38): the step
-- that ends a call (or the cancel of a waiting one) brings the job of the
-- business's oldest waiting call forward, in its own transaction. The
-- call's `voice.call` job, written with the call; null for a call started
-- before this migration (it finds its line by its poll).
ALTER TABLE calls ADD COLUMN job_id TEXT;
-- The calls waiting for a line, oldest first.
CREATE INDEX calls_waiting ON calls (business_id, id) WHERE status = 'queued' AND carrier_state = 'none';
