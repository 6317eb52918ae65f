-- Moving a business between databases online (issue 47).
--
-- In every database: the businesses this database does not own (any
-- more, or not yet): their writes here are refused (the request path
-- answers 503 business_moving; triggers named switchboard_moved_* refuse
-- any other writer, a node with a stale placement included). A row stays
-- after the move as the tombstone that keeps the old database fenced.
CREATE TABLE moved_businesses (
    business_id TEXT PRIMARY KEY,
    to_database TEXT NOT NULL,
    moved_at    TEXT NOT NULL,
    -- 1 once its copy is the target's: its rows here may be deleted.
    cleaning    INTEGER NOT NULL DEFAULT 0
);

-- In main: a move under way, and how far it got (fenced, copied, placed),
-- so `admin business move` run again after a crash resumes it.
CREATE TABLE business_moves (
    business_id TEXT PRIMARY KEY,
    from_database TEXT NOT NULL,
    to_database TEXT NOT NULL,
    phase       TEXT NOT NULL,
    started_at  TEXT NOT NULL
);
