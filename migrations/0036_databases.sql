-- Businesses over several databases (issue 47). The main database (the
-- local switchboard.db, or the --primary-url primary) is also the control
-- database: it keeps the registry of the other databases, and each
-- business's placement. Every database has this same schema; a business's
-- own rows live in exactly one of them (its placement), and a copy of its
-- `businesses` row sits there too.
CREATE TABLE databases (
    name        TEXT PRIMARY KEY,   -- `main` is implicit, never a row
    url         TEXT NOT NULL,      -- a libSQL server's URL, or `local` (a file of its own in the data dir)
    created_at  TEXT NOT NULL
);

-- Where the business's rows live: `main`, or a name of `databases`.
ALTER TABLE businesses ADD COLUMN database TEXT NOT NULL DEFAULT 'main';
