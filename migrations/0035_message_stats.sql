-- The console's daily figures (getMessageStats, operation 67) count a
-- business's messages by the day they were made: this index reads one
-- business's period instead of every message it ever had (the calls and
-- the credit ledger are keyed by a time-ordered id and need none).
CREATE INDEX messages_business_created ON messages (business_id, created_at);
