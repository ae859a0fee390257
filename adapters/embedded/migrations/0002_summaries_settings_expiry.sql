-- Embedded store, schema version 2: versioned thread summaries, store-wide settings, and
-- indexes for purging expired rows. None of these feed search, so they need no change-log
-- triggers and no FTS.

CREATE TABLE summaries (
    id                   TEXT PRIMARY KEY,
    thread_id            TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    revision             INTEGER NOT NULL,
    text                 TEXT NOT NULL,
    topics               TEXT NOT NULL DEFAULT '[]',
    covered_through_seq  INTEGER NOT NULL DEFAULT 0,
    status               TEXT NOT NULL DEFAULT 'valid',
    user_id              TEXT,
    agent_id             TEXT,
    metadata             TEXT,
    created_at           TEXT NOT NULL,
    -- The compare-and-set of concurrent refreshes: one row per (thread, revision).
    CONSTRAINT summaries_unique_revision UNIQUE (thread_id, revision)
);

CREATE TABLE settings (
    key    TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

-- Partial indexes: most rows never expire, and only expiring rows are ever purged.
CREATE INDEX messages_expiry ON messages (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX records_expiry ON records (expires_at, id) WHERE expires_at IS NOT NULL;
