-- Oracle store, schema version 2: extraction jobs that failed their last attempt are kept.
--
-- A job whose every allowed attempt failed is no longer deleted: it is marked failed (when, and
-- why) and leaves the pending queue until it is retried or its thread is deleted.
--
-- Syntax checked against Oracle's documentation (SQL Language Reference, ALTER TABLE
-- add_column_clause and CREATE INDEX), not against a running database; see the adapter's
-- README for what was checked where.
--
-- How this file is applied (schema manager):
-- * a fresh store runs it right after 0001, so EXTRACTION_JOB gets the columns at creation;
-- * a store at version 1 runs it on its first open with CREATE_IF_NECESSARY, which then records
--   version 2 in the registry;
-- * the ALTER TABLE is a named schema object like the CREATE statements: it counts as present
--   when USER_TAB_COLUMNS lists every column it adds, so it is never run twice, and a store
--   missing the columns is reported (REQUIRE_EXISTING) or repaired (CREATE_IF_NECESSARY).
--
-- Column types:
-- * failed_at is TIMESTAMP(6) WITH TIME ZONE, like claimed_until and created_at (bound as UTC);
-- * failure_reason is a CLOB, like the other free texts (content, chunk_text): the domain allows
--   2000 characters (MAX_FAILURE_REASON_LENGTH), which in AL32UTF8 can take up to 8000 bytes,
--   more than the 4000 bytes a VARCHAR2 can hold unless the database runs with
--   MAX_STRING_SIZE = EXTENDED (the default is STANDARD). A VARCHAR2(2000 CHAR) would refuse
--   some valid reasons; the CLOB stores every one. The reason is never compared, sorted or
--   indexed, so nothing is lost.
-- * both are nullable with no default: adding them leaves every existing job not failed.
--
-- The index serves failed() (WHERE failed_at IS NOT NULL ORDER BY failed_at, job_id): a B-tree
-- index keeps no entry for a row whose indexed columns are all NULL, so an index on failed_at
-- alone holds the failed jobs only, and the hot path (inserting, claiming and deleting pending
-- jobs, whose failed_at is NULL) never writes to it. failed(thread_id=...) uses the existing
-- EXTRACTION_JOB_THREAD_I.

ALTER TABLE {EXTRACTION_JOB} ADD (
    failed_at       TIMESTAMP(6) WITH TIME ZONE,
    failure_reason  CLOB
)
/
CREATE INDEX {EXTRACTION_JOB_FAILED_I} ON {EXTRACTION_JOB} (failed_at)
