-- Embedded store, schema version 5: extraction jobs that failed their last attempt are kept.
--
-- A job whose every allowed attempt failed is no longer deleted: it is marked failed (when,
-- and why) and leaves the pending queue until it is retried or its thread is deleted.
ALTER TABLE extraction_jobs ADD COLUMN failed_at TEXT;
ALTER TABLE extraction_jobs ADD COLUMN failure_reason TEXT;
CREATE INDEX extraction_jobs_failed ON extraction_jobs (failed_at, id) WHERE failed_at IS NOT NULL;
