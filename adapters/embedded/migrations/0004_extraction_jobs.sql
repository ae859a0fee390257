-- Embedded store, schema version 4: durable pending-extraction jobs.
--
-- A job is inserted in the same transaction as the messages it covers, claimed with a lease
-- by a worker, and deleted when the extraction is done; a crash leaves the row, and an expired
-- lease lets the next worker (or the next process to open the store) run it again. Jobs do not
-- feed search, so they need no change-log triggers.
CREATE TABLE extraction_jobs (
    id             TEXT PRIMARY KEY,
    thread_id      TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    first_seq      INTEGER NOT NULL,
    last_seq       INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    claimed_by     TEXT,
    claimed_until  TEXT
);
CREATE INDEX extraction_jobs_thread ON extraction_jobs (thread_id);
CREATE INDEX extraction_jobs_created ON extraction_jobs (created_at, id);
