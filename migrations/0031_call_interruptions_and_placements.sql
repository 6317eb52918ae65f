-- Where the customer began speaking over the assistant's latest utterance
-- (issue 40): the share of it played then, in percent, from the carrier's
-- audio offsets; null when nobody spoke over it. A reply to that speech,
-- with the agent's `repeatInterruptedSentence`, says the sentence it was
-- cut in again.
ALTER TABLE calls ADD COLUMN interrupted_percent INTEGER;

-- The placement the carrier got, as the call's job sent it (issue 40): what
-- a recording link asks the carrier with, read back rather than rebuilt from
-- the call's columns. Calls placed before this migration get theirs from the
-- columns they were placed from, once.
ALTER TABLE calls ADD COLUMN placement_json TEXT;
UPDATE calls SET placement_json = json_object(
        'call_id', id,
        'destination', callee_number,
        'caller_number', caller_number,
        'voice', json_object(
            'live_voice_id', json_extract(settings_json, '$.liveVoiceId'),
            'language', json_extract(settings_json, '$.language'),
            'agent_gender', json_extract(settings_json, '$.agentGender'),
            'background_noise_key', json_extract(settings_json, '$.backgroundNoiseKey'),
            'background_noise_level_percent', json_extract(settings_json, '$.backgroundNoiseLevelPercent')),
        'max_duration_seconds', MAX(max_duration_s, 1),
        'requested_at_ms', IFNULL(requested_at_ms, 0))
 WHERE memo IS NOT NULL;
