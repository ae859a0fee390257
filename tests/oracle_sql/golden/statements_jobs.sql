-- ===== store: default =====
-- jobs.insert
INSERT INTO "EXTRACTION_JOB" (job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until)
VALUES (:job_id, :thread_id, :first_seq, :last_seq, :created_at, :attempts, :claimed_by, :claimed_until)
--   :attempts = 1
--   :claimed_by = 'w1'
--   :claimed_until = datetime(2025-03-21T12:00:00)
--   :created_at = datetime(2025-03-14T12:00:00)
--   :first_seq = 1
--   :job_id = 'j1'
--   :last_seq = 4
--   :thread_id = 't1'

-- jobs.get
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until
FROM "EXTRACTION_JOB" j
WHERE j.job_id = :job_id
--   :job_id = 'j1'

-- jobs.pending
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until
FROM "EXTRACTION_JOB" j
WHERE j.claimed_until IS NULL OR j.claimed_until <= :now
ORDER BY j.created_at, j.job_id
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.pending_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until
FROM "EXTRACTION_JOB" j
WHERE j.claimed_until IS NULL OR j.claimed_until <= :now
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.claim
UPDATE "EXTRACTION_JOB"
SET claimed_by = :owner, claimed_until = :until, attempts = attempts + 1
WHERE job_id = :job_id AND (claimed_until IS NULL OR claimed_until <= :now)
--   :job_id = 'j1'
--   :now = datetime(2025-03-14T12:00:00)
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.delete
DELETE FROM "EXTRACTION_JOB"
WHERE job_id = :job_id
--   :job_id = 'j1'

-- ===== store: acme =====
-- jobs.insert
INSERT INTO "ACME_EXTRACTION_JOB" (job_id, thread_id, first_seq, last_seq, created_at, attempts, claimed_by, claimed_until)
VALUES (:job_id, :thread_id, :first_seq, :last_seq, :created_at, :attempts, :claimed_by, :claimed_until)
--   :attempts = 1
--   :claimed_by = 'w1'
--   :claimed_until = datetime(2025-03-21T12:00:00)
--   :created_at = datetime(2025-03-14T12:00:00)
--   :first_seq = 1
--   :job_id = 'j1'
--   :last_seq = 4
--   :thread_id = 't1'

-- jobs.get
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until
FROM "ACME_EXTRACTION_JOB" j
WHERE j.job_id = :job_id
--   :job_id = 'j1'

-- jobs.pending
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until
FROM "ACME_EXTRACTION_JOB" j
WHERE j.claimed_until IS NULL OR j.claimed_until <= :now
ORDER BY j.created_at, j.job_id
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.pending_limited
SELECT j.job_id, j.thread_id, j.first_seq, j.last_seq, j.created_at, j.attempts, j.claimed_by, j.claimed_until
FROM "ACME_EXTRACTION_JOB" j
WHERE j.claimed_until IS NULL OR j.claimed_until <= :now
ORDER BY j.created_at, j.job_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- jobs.claim
UPDATE "ACME_EXTRACTION_JOB"
SET claimed_by = :owner, claimed_until = :until, attempts = attempts + 1
WHERE job_id = :job_id AND (claimed_until IS NULL OR claimed_until <= :now)
--   :job_id = 'j1'
--   :now = datetime(2025-03-14T12:00:00)
--   :owner = 'w1'
--   :until = datetime(2025-03-21T12:00:00)

-- jobs.delete
DELETE FROM "ACME_EXTRACTION_JOB"
WHERE job_id = :job_id
--   :job_id = 'j1'

