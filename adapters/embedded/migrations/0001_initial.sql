-- Embedded store, schema version 1: threads, messages, memory records, links, FTS5 keyword
-- indexes (dropped in version 6) and the change log that keeps in-process caches (numpy,
-- networkx) in step.
--
-- Conventions: datetimes are ISO-8601 UTC text with fixed-width microseconds
-- ("2024-05-01T12:00:00.000000Z") so that text order is time order; JSON columns hold
-- compact JSON text (NULL = no metadata); embeddings are L2-normalised float32
-- little-endian blobs.
--
-- messages and records carry an INTEGER PRIMARY KEY ("pk") next to their text id because
-- the FTS5 external-content tables address rows by rowid, and only an aliased rowid is
-- guaranteed to survive VACUUM.

CREATE TABLE threads (
    id          TEXT PRIMARY KEY,
    user_id     TEXT,
    agent_id    TEXT,
    metadata    TEXT,
    config      TEXT NOT NULL DEFAULT '{}',
    state       TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX threads_created ON threads (created_at, id);
CREATE INDEX threads_user ON threads (user_id, created_at);
CREATE INDEX threads_agent ON threads (agent_id);

CREATE TABLE messages (
    pk          INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    thread_id   TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    timestamp   TEXT,
    metadata    TEXT,
    user_id     TEXT,
    agent_id    TEXT,
    created_at  TEXT NOT NULL,
    expires_at  TEXT,
    embedding   BLOB,
    UNIQUE (thread_id, seq)
);
CREATE INDEX messages_user ON messages (user_id);
CREATE INDEX messages_agent ON messages (agent_id);

CREATE TABLE records (
    pk                   INTEGER PRIMARY KEY,
    id                   TEXT NOT NULL UNIQUE,
    record_type          TEXT NOT NULL,
    content              TEXT NOT NULL,
    user_id              TEXT,
    agent_id             TEXT,
    thread_id            TEXT REFERENCES threads (id) ON DELETE CASCADE,
    metadata             TEXT,
    status               TEXT NOT NULL DEFAULT 'valid',
    invalidation_reason  TEXT,
    invalidated_at       TEXT,
    timestamp            TEXT,
    expires_at           TEXT,
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    embedding            BLOB
);
CREATE INDEX records_created ON records (created_at, id);
CREATE INDEX records_user ON records (user_id, created_at);
CREATE INDEX records_agent ON records (agent_id);
CREATE INDEX records_thread ON records (thread_id);

CREATE TABLE links (
    id                      TEXT PRIMARY KEY,
    source_id               TEXT NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    source_type             TEXT NOT NULL,
    target_id               TEXT NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    target_type             TEXT NOT NULL,
    relation_type           TEXT NOT NULL,
    opposite_relation_type  TEXT NOT NULL,
    metadata                TEXT,
    timestamp               TEXT,
    created_at              TEXT NOT NULL,
    CONSTRAINT links_unique_edge UNIQUE (source_id, target_id, relation_type),
    CONSTRAINT links_no_self_link CHECK (source_id <> target_id)
);
CREATE INDEX links_source ON links (source_id);
CREATE INDEX links_target ON links (target_id);
CREATE INDEX links_created ON links (created_at, id);

-- Keyword indexes (external content: the text lives once, in records/messages). Terms are
-- case-folded, diacritic-free Unicode words; "_" is a word character, as in Python's \w,
-- which is how query text was split into terms.
CREATE VIRTUAL TABLE records_fts USING fts5 (
    content, content = 'records', content_rowid = 'pk', tokenize = "unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    content, content = 'messages', content_rowid = 'pk', tokenize = "unicode61 remove_diacritics 2 tokenchars '_'"
);

-- The documented external-content sync triggers, for deletes (foreign-key cascades fire them
-- too) and content updates. Inserts are indexed by the repositories with a separate
-- "INSERT INTO records_fts (rowid, content)" in the same transaction: a trigger that writes a
-- virtual table makes SQLite open a statement savepoint, and FTS5 flushes its pending terms
-- to a new segment at every savepoint, which made each insert about four times slower.
CREATE TRIGGER records_fts_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts (records_fts, rowid, content) VALUES ('delete', old.pk, old.content);
END;
CREATE TRIGGER records_fts_au AFTER UPDATE OF content ON records
WHEN old.content IS NOT new.content BEGIN
    INSERT INTO records_fts (records_fts, rowid, content) VALUES ('delete', old.pk, old.content);
    INSERT INTO records_fts (rowid, content) VALUES (new.pk, new.content);
END;

CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.pk, old.content);
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages
WHEN old.content IS NOT new.content BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.pk, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.pk, new.content);
END;

-- Change log read by every process to refresh its caches (AUTOINCREMENT: a seq is never
-- reused, even after the log is pruned). Triggers catch cascaded deletes as well.
CREATE TABLE changes (
    seq   INTEGER PRIMARY KEY AUTOINCREMENT,
    kind  TEXT NOT NULL,
    ref   TEXT NOT NULL
);

CREATE TRIGGER records_changes_ai AFTER INSERT ON records BEGIN
    INSERT INTO changes (kind, ref) VALUES ('record', new.id);
END;
CREATE TRIGGER records_changes_au AFTER UPDATE ON records BEGIN
    INSERT INTO changes (kind, ref) SELECT 'record', new.id UNION SELECT 'record', old.id;
END;
CREATE TRIGGER records_changes_ad AFTER DELETE ON records BEGIN
    INSERT INTO changes (kind, ref) VALUES ('record', old.id);
END;

CREATE TRIGGER messages_changes_ai AFTER INSERT ON messages BEGIN
    INSERT INTO changes (kind, ref) VALUES ('message', new.id);
END;
CREATE TRIGGER messages_changes_au AFTER UPDATE ON messages BEGIN
    INSERT INTO changes (kind, ref) SELECT 'message', new.id UNION SELECT 'message', old.id;
END;
CREATE TRIGGER messages_changes_ad AFTER DELETE ON messages BEGIN
    INSERT INTO changes (kind, ref) VALUES ('message', old.id);
END;

CREATE TRIGGER links_changes_ai AFTER INSERT ON links BEGIN
    INSERT INTO changes (kind, ref) VALUES ('link', new.id);
END;
CREATE TRIGGER links_changes_au AFTER UPDATE ON links BEGIN
    INSERT INTO changes (kind, ref) SELECT 'link', new.id UNION SELECT 'link', old.id;
END;
CREATE TRIGGER links_changes_ad AFTER DELETE ON links BEGIN
    INSERT INTO changes (kind, ref) VALUES ('link', old.id);
END;
