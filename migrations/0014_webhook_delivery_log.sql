-- The webhook delivery log (listWebhookDeliveries, redeliverWebhookEvent):
-- each attempt also records its event's type and the receiver's latency,
-- and the first attempt of a delivery keeps the event (without
-- retryNumber) so it can be sent again on demand.
ALTER TABLE webhook_attempts ADD COLUMN event_type TEXT;
ALTER TABLE webhook_attempts ADD COLUMN latency_ms INTEGER;
ALTER TABLE webhook_attempts ADD COLUMN payload_json TEXT;
-- Newest first per subscription (ids are uuid v7: id order is time order).
CREATE INDEX webhook_attempts_log ON webhook_attempts (business_id, subscription_id, id);
