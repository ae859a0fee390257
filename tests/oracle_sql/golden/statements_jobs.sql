-- ===== store: default =====
-- jobs.insert
INSERT INTO "EXTRACTION_JOB" (job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, failure_reason)
VALUES (:job_id, :thread_id, :first_seq, :last_seq, :created_at, :attempts, :claimed_by, :claimed_until, :failed_at, :failure_reason)
--   :attempts = 1
--   :claimed_by = 'w1'
--   :claimed_until = datetime(2025-03-21T12:00:00)
--   :created_at = datetime(2025-03-14T12:00:00)
--   :failed_at = None
--   :failure_reason = None
--   :first_seq = 1
--   :job_id = 'j1'
--   :last_seq = 4
--   :thread_id = 't1'

-- jobs.get
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.job_id = :job_id
--   :job_id = 'j1'

-- jobs.pending
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND (j.claimed_until IS NULL OR j.claimed_until <= :now)
ORDER BY j.created_at, j.job_id
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.pending_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND (j.claimed_until IS NULL OR j.claimed_until <= :now)
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.claim
UPDATE "EXTRACTION_JOB"
SET claimed_by = :owner, claimed_until = :until, attempts = attempts + 1
WHERE job_id = :job_id AND failed_at IS NULL
AND (claimed_until IS NULL OR claimed_until <= :now OR claimed_by = :holder)
--   :holder = 'w1'
--   :job_id = 'j1'
--   :now = datetime(2025-03-14T12:00:00)
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.insert
INSERT INTO "EXTRACTION_JOB" (job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, failure_reason)
VALUES (:job_id, :thread_id, :first_seq, :last_seq, :created_at, :attempts, :claimed_by, :claimed_until, :failed_at, :failure_reason)
--   :attempts = 3
--   :claimed_by = None
--   :claimed_until = None
--   :created_at = datetime(2025-03-14T12:00:00)
--   :failed_at = datetime(2025-03-21T12:00:00)
--   :failure_reason = 'ModelOutputError: not JSON'
--   :first_seq = 5
--   :job_id = 'j2'
--   :last_seq = 6
--   :thread_id = 't1'

-- jobs.fail
UPDATE "EXTRACTION_JOB"
SET failed_at = :failed_at, failure_reason = :failure_reason, claimed_by = NULL, claimed_until = NULL
WHERE job_id = :job_id
--   :failed_at = datetime(2025-03-21T12:00:00)
--   :failure_reason = 'TimeoutError: slow'
--   :job_id = 'j1'

-- jobs.failed
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL
ORDER BY j.failed_at, j.job_id

-- jobs.failed_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL
ORDER BY j.failed_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5

-- jobs.failed_for_thread
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL AND j.thread_id = :thread_id
ORDER BY j.failed_at, j.job_id
--   :thread_id = 't1'

-- jobs.failed_for_thread_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL AND j.thread_id = :thread_id
ORDER BY j.failed_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5
--   :thread_id = 't1'

-- jobs.retry
UPDATE "EXTRACTION_JOB"
SET attempts = 0, claimed_by = NULL, claimed_until = NULL, failed_at = NULL, failure_reason = NULL
WHERE job_id = :job_id AND failed_at IS NOT NULL
--   :job_id = 'j1'

-- jobs.list
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NULL
ORDER BY j.created_at, j.job_id

-- jobs.list_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NULL
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5

-- jobs.list_for_thread
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND j.thread_id = :thread_id
ORDER BY j.created_at, j.job_id
--   :thread_id = 't1'

-- jobs.list_for_thread_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND j.thread_id = :thread_id
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5
--   :thread_id = 't1'

-- jobs.postpone
UPDATE "EXTRACTION_JOB"
SET claimed_until = :until, failure_reason = :failure_reason, attempts = GREATEST(0, attempts - :refund)
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :failure_reason = 'TimeoutError: slow'
--   :job_id = 'j1'
--   :owner = 'w1'
--   :refund = 0
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.postpone
UPDATE "EXTRACTION_JOB"
SET claimed_until = :until, failure_reason = :failure_reason, attempts = GREATEST(0, attempts - :refund)
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :failure_reason = 'StoreBusyError: busy'
--   :job_id = 'j1'
--   :owner = 'w1'
--   :refund = 1
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.renew
UPDATE "EXTRACTION_JOB"
SET claimed_until = :until
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :job_id = 'j1'
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.release
UPDATE "EXTRACTION_JOB"
SET claimed_by = NULL, claimed_until = :until
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :job_id = 'j1'
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.release
UPDATE "EXTRACTION_JOB"
SET claimed_by = NULL, claimed_until = :until
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :job_id = 'j1'
--   :owner = 'w1'
--   :until = None

-- jobs.delete
DELETE FROM "EXTRACTION_JOB"
WHERE job_id = :job_id
--   :job_id = 'j1'

-- ===== store: acme =====
-- jobs.insert
INSERT INTO "ACME_EXTRACTION_JOB" (job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, failure_reason)
VALUES (:job_id, :thread_id, :first_seq, :last_seq, :created_at, :attempts, :claimed_by, :claimed_until, :failed_at, :failure_reason)
--   :attempts = 1
--   :claimed_by = 'w1'
--   :claimed_until = datetime(2025-03-21T12:00:00)
--   :created_at = datetime(2025-03-14T12:00:00)
--   :failed_at = None
--   :failure_reason = None
--   :first_seq = 1
--   :job_id = 'j1'
--   :last_seq = 4
--   :thread_id = 't1'

-- jobs.get
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.job_id = :job_id
--   :job_id = 'j1'

-- jobs.pending
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND (j.claimed_until IS NULL OR j.claimed_until <= :now)
ORDER BY j.created_at, j.job_id
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.pending_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND (j.claimed_until IS NULL OR j.claimed_until <= :now)
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.claim
UPDATE "ACME_EXTRACTION_JOB"
SET claimed_by = :owner, claimed_until = :until, attempts = attempts + 1
WHERE job_id = :job_id AND failed_at IS NULL
AND (claimed_until IS NULL OR claimed_until <= :now OR claimed_by = :holder)
--   :holder = 'w1'
--   :job_id = 'j1'
--   :now = datetime(2025-03-14T12:00:00)
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.insert
INSERT INTO "ACME_EXTRACTION_JOB" (job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until, failed_at, failure_reason)
VALUES (:job_id, :thread_id, :first_seq, :last_seq, :created_at, :attempts, :claimed_by, :claimed_until, :failed_at, :failure_reason)
--   :attempts = 3
--   :claimed_by = None
--   :claimed_until = None
--   :created_at = datetime(2025-03-14T12:00:00)
--   :failed_at = datetime(2025-03-21T12:00:00)
--   :failure_reason = 'ModelOutputError: not JSON'
--   :first_seq = 5
--   :job_id = 'j2'
--   :last_seq = 6
--   :thread_id = 't1'

-- jobs.fail
UPDATE "ACME_EXTRACTION_JOB"
SET failed_at = :failed_at, failure_reason = :failure_reason, claimed_by = NULL, claimed_until = NULL
WHERE job_id = :job_id
--   :failed_at = datetime(2025-03-21T12:00:00)
--   :failure_reason = 'TimeoutError: slow'
--   :job_id = 'j1'

-- jobs.failed
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL
ORDER BY j.failed_at, j.job_id

-- jobs.failed_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL
ORDER BY j.failed_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5

-- jobs.failed_for_thread
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL AND j.thread_id = :thread_id
ORDER BY j.failed_at, j.job_id
--   :thread_id = 't1'

-- jobs.failed_for_thread_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NOT NULL AND j.thread_id = :thread_id
ORDER BY j.failed_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5
--   :thread_id = 't1'

-- jobs.retry
UPDATE "ACME_EXTRACTION_JOB"
SET attempts = 0, claimed_by = NULL, claimed_until = NULL, failed_at = NULL, failure_reason = NULL
WHERE job_id = :job_id AND failed_at IS NOT NULL
--   :job_id = 'j1'

-- jobs.list
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NULL
ORDER BY j.created_at, j.job_id

-- jobs.list_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NULL
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5

-- jobs.list_for_thread
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND j.thread_id = :thread_id
ORDER BY j.created_at, j.job_id
--   :thread_id = 't1'

-- jobs.list_for_thread_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until, j.failed_at, j.failure_reason
FROM "ACME_EXTRACTION_JOB" j
WHERE j.failed_at IS NULL AND j.thread_id = :thread_id
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5
--   :thread_id = 't1'

-- jobs.postpone
UPDATE "ACME_EXTRACTION_JOB"
SET claimed_until = :until, failure_reason = :failure_reason, attempts = GREATEST(0, attempts - :refund)
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :failure_reason = 'TimeoutError: slow'
--   :job_id = 'j1'
--   :owner = 'w1'
--   :refund = 0
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.postpone
UPDATE "ACME_EXTRACTION_JOB"
SET claimed_until = :until, failure_reason = :failure_reason, attempts = GREATEST(0, attempts - :refund)
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :failure_reason = 'StoreBusyError: busy'
--   :job_id = 'j1'
--   :owner = 'w1'
--   :refund = 1
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.renew
UPDATE "ACME_EXTRACTION_JOB"
SET claimed_until = :until
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :job_id = 'j1'
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.release
UPDATE "ACME_EXTRACTION_JOB"
SET claimed_by = NULL, claimed_until = :until
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :job_id = 'j1'
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.release
UPDATE "ACME_EXTRACTION_JOB"
SET claimed_by = NULL, claimed_until = :until
WHERE job_id = :job_id AND failed_at IS NULL AND claimed_by = :owner
--   :job_id = 'j1'
--   :owner = 'w1'
--   :until = None

-- jobs.delete
DELETE FROM "ACME_EXTRACTION_JOB"
WHERE job_id = :job_id
--   :job_id = 'j1'

