-- Voice lines and billing (issue 12, point 8): what a business bought and
-- what it may spend. Written by `switchboard admin voice configure` and
-- `admin credits add`; the voice area reserves, charges and releases
-- against the same rows inside its own transactions.

-- A business's voice account: purchased lines (concurrent carrier calls),
-- the active price per started 20-second block, the caller line.
CREATE TABLE voice_accounts (
    business_id                   TEXT    NOT NULL PRIMARY KEY,
    lines                         INTEGER NOT NULL DEFAULT 1 CHECK (lines >= 0),
    price_per_block_microcredits  INTEGER NOT NULL CHECK (price_per_block_microcredits >= 0),
    caller_number                 TEXT,
    updated_at                    TEXT    NOT NULL
);

-- The balance: `available` can be spent or reserved; `reserved` is held for
-- calls in flight. Neither ever goes negative.
CREATE TABLE credit_balances (
    business_id  TEXT    NOT NULL PRIMARY KEY,
    available    INTEGER NOT NULL DEFAULT 0 CHECK (available >= 0),
    reserved     INTEGER NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    updated_at   TEXT    NOT NULL
);

-- Every movement, append-only: `grant` (admin credits add), `reserve`
-- (before a call is placed), `charge` (what the call cost), `release` (the
-- unused rest of a reservation). `amount` is positive; the kind says which
-- way it moved.
CREATE TABLE credit_ledger (
    id           TEXT    NOT NULL PRIMARY KEY,              -- uuid v7: time order
    business_id  TEXT    NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('grant', 'reserve', 'charge', 'release')),
    amount       INTEGER NOT NULL CHECK (amount >= 0),
    reference    TEXT,                                      -- the call (or run) it belongs to
    note         TEXT,
    created_at   TEXT    NOT NULL
);
CREATE INDEX credit_ledger_business ON credit_ledger (business_id, id);
