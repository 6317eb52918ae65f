-- Issue 48: the turns of a call whose carrier hears the customer in turns
-- (a Twilio-style speech <Gather> that posts its result to us). The host
-- records each post once per (call, turn), so a repeated post never runs a
-- turn twice, and wakes the call's voice.call step; the step reads the
-- posts it has not answered, runs the agent's turn and writes its answer
-- here; the host, holding the carrier's post, answers it with that answer
-- in the carrier's language (the adapter's `carrier-webhooks.answer`).
CREATE TABLE carrier_turns (
    business_id    TEXT    NOT NULL,
    call_id        TEXT    NOT NULL,
    turn           INTEGER NOT NULL,                  -- 0: the call's answer; n+1 follows the answer to n
    heard_json     TEXT,                              -- {"speech": text|null, "confidence": n|null}; null while only a partial result came
    received_at_ms INTEGER,                           -- when the post came
    partial_at_ms  INTEGER,                           -- the first partial result: the customer began speaking
    answer_json    TEXT,                              -- the step's answer: {"text", "endCall", "bargeIn", "listenSeconds"}
    answered_at_ms INTEGER,
    PRIMARY KEY (business_id, call_id, turn)
) WITHOUT ROWID;
