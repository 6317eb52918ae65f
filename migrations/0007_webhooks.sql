-- Webhook subscriptions (component `webhooks`, operations 2-6): external
-- automation for one connected chatapp phone number or the photoapp account.
--
-- Every tenant row carries business_id and every query filters by it. Ids are
-- uuid v7 text; timestamps RFC 3339 UTC text with milliseconds.
--
-- signing_secret is the current HMAC key (`whsec_` + 64 hex digits), kept so
-- the delivery job can sign with it. It is shown once (create, rotate) and no
-- response path selects it; only secret_last4 is listed. Rotation overwrites
-- it (the previous secret stops signing at once); revocation clears it.
CREATE TABLE webhook_subscriptions (
    id                  TEXT    NOT NULL PRIMARY KEY,
    business_id         TEXT    NOT NULL,
    channel             TEXT    NOT NULL CHECK (channel IN ('chatapp', 'photoapp')),
    phone_number_id     TEXT,                     -- chatapp only
    provider_account_id TEXT,                     -- photoapp only
    callback_url        TEXT    NOT NULL,
    events_json         TEXT    NOT NULL,         -- JSON array of event types, request order
    status              TEXT    NOT NULL CHECK (status IN ('active', 'paused', 'revoked')),
    external_automation INTEGER NOT NULL DEFAULT 1, -- 0 | 1 (always 1 today)
    signing_secret      TEXT,                     -- NULL once revoked
    secret_last4        TEXT    NOT NULL,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    revoked_at          TEXT,
    CHECK ((channel = 'chatapp' AND phone_number_id IS NOT NULL AND provider_account_id IS NULL)
        OR (channel = 'photoapp' AND provider_account_id IS NOT NULL AND phone_number_id IS NULL)),
    CHECK ((status = 'revoked') = (signing_secret IS NULL)),
    CHECK ((status = 'revoked') = (revoked_at IS NOT NULL))
);
-- Listing (ordered by id = creation order) and single-subscription lookups.
CREATE INDEX webhook_subscriptions_business ON webhook_subscriptions (business_id, id);
-- Subscriptions of a phone number / account by status: "does this number have
-- an active external-automation subscription" and the delivery fan-out.
CREATE INDEX webhook_subscriptions_phone ON webhook_subscriptions (business_id, phone_number_id, status)
    WHERE phone_number_id IS NOT NULL;
CREATE INDEX webhook_subscriptions_account ON webhook_subscriptions (business_id, provider_account_id, status)
    WHERE provider_account_id IS NOT NULL;
