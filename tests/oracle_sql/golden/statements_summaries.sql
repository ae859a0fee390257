-- ===== store: default =====
-- summaries.check_add
SELECT
  (SELECT COUNT(*) FROM "THREAD" t WHERE t.record_id = :thread_id) AS thread_found,
  (SELECT COUNT(*) FROM "THREAD_SUMMARY" s WHERE s.record_id = :record_id) AS id_taken,
  (SELECT COUNT(*) FROM "THREAD_SUMMARY" s WHERE s.thread_id = :thread_id AND s.revision = :revision) AS revision_taken
FROM DUAL
--   :record_id = 's1'
--   :revision = 2
--   :thread_id = 't1'

-- summaries.insert
INSERT INTO "THREAD_SUMMARY" (record_id, thread_id, revision, content, topics, covered_through_seq, status, user_id, agent_id, metadata, created_at)
VALUES (:record_id, :thread_id, :revision, :content, :topics, :covered_through_seq, :status, :user_id, :agent_id, :metadata, :created_at)
--   :agent_id = None
--   :content = 'summary'
--   :covered_through_seq = 7
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"m":"v"}'
--   :record_id = 's1'
--   :revision = 2
--   :status = 'valid'
--   :thread_id = 't1'
--   :topics = '["tea"]'
--   :user_id = 'u1'

-- summaries.latest
SELECT s.record_id, s.thread_id, s.revision, s.content, s.topics, s.covered_through_seq, s.status, s.user_id, s.agent_id, s.metadata, s.created_at
FROM "THREAD_SUMMARY" s
WHERE s.thread_id = :thread_id
ORDER BY s.revision DESC
FETCH FIRST 1 ROWS ONLY
--   :thread_id = 't1'

-- summaries.latest_valid
SELECT s.record_id, s.thread_id, s.revision, s.content, s.topics, s.covered_through_seq, s.status, s.user_id, s.agent_id, s.metadata, s.created_at
FROM "THREAD_SUMMARY" s
WHERE s.thread_id = :thread_id AND s.status = :status
ORDER BY s.revision DESC
FETCH FIRST 1 ROWS ONLY
--   :status = 'valid'
--   :thread_id = 't1'

-- summaries.list_for_thread
SELECT s.record_id, s.thread_id, s.revision, s.content, s.topics, s.covered_through_seq, s.status, s.user_id, s.agent_id, s.metadata, s.created_at
FROM "THREAD_SUMMARY" s
WHERE s.thread_id = :thread_id
ORDER BY s.revision
--   :thread_id = 't1'

-- summaries.invalidate_covering
UPDATE "THREAD_SUMMARY"
SET status = :invalid
WHERE thread_id = :thread_id AND status = :valid AND covered_through_seq >= :seq
--   :invalid = 'invalid'
--   :seq = 5
--   :thread_id = 't1'
--   :valid = 'valid'

-- summaries.prune
DELETE FROM "THREAD_SUMMARY"
WHERE record_id IN (
  SELECT ranked.record_id FROM (
    SELECT s.record_id, ROW_NUMBER() OVER (ORDER BY s.revision DESC) AS newest
    FROM "THREAD_SUMMARY" s WHERE s.thread_id = :thread_id
  ) ranked
  WHERE ranked.newest > :keep
)
--   :keep = 50
--   :thread_id = 't1'

-- ===== store: acme =====
-- summaries.check_add
SELECT
  (SELECT COUNT(*) FROM "ACME_THREAD" t WHERE t.record_id = :thread_id) AS thread_found,
  (SELECT COUNT(*) FROM "ACME_THREAD_SUMMARY" s WHERE s.record_id = :record_id) AS id_taken,
  (SELECT COUNT(*) FROM "ACME_THREAD_SUMMARY" s WHERE s.thread_id = :thread_id AND s.revision = :revision) AS revision_taken
FROM DUAL
--   :record_id = 's1'
--   :revision = 2
--   :thread_id = 't1'

-- summaries.insert
INSERT INTO "ACME_THREAD_SUMMARY" (record_id, thread_id, revision, content, topics, covered_through_seq, status, user_id, agent_id, metadata, created_at)
VALUES (:record_id, :thread_id, :revision, :content, :topics, :covered_through_seq, :status, :user_id, :agent_id, :metadata, :created_at)
--   :agent_id = None
--   :content = 'summary'
--   :covered_through_seq = 7
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"m":"v"}'
--   :record_id = 's1'
--   :revision = 2
--   :status = 'valid'
--   :thread_id = 't1'
--   :topics = '["tea"]'
--   :user_id = 'u1'

-- summaries.latest
SELECT s.record_id, s.thread_id, s.revision, s.content, s.topics, s.covered_through_seq, s.status, s.user_id, s.agent_id, s.metadata, s.created_at
FROM "ACME_THREAD_SUMMARY" s
WHERE s.thread_id = :thread_id
ORDER BY s.revision DESC
FETCH FIRST 1 ROWS ONLY
--   :thread_id = 't1'

-- summaries.latest_valid
SELECT s.record_id, s.thread_id, s.revision, s.content, s.topics, s.covered_through_seq, s.status, s.user_id, s.agent_id, s.metadata, s.created_at
FROM "ACME_THREAD_SUMMARY" s
WHERE s.thread_id = :thread_id AND s.status = :status
ORDER BY s.revision DESC
FETCH FIRST 1 ROWS ONLY
--   :status = 'valid'
--   :thread_id = 't1'

-- summaries.list_for_thread
SELECT s.record_id, s.thread_id, s.revision, s.content, s.topics, s.covered_through_seq, s.status, s.user_id, s.agent_id, s.metadata, s.created_at
FROM "ACME_THREAD_SUMMARY" s
WHERE s.thread_id = :thread_id
ORDER BY s.revision
--   :thread_id = 't1'

-- summaries.invalidate_covering
UPDATE "ACME_THREAD_SUMMARY"
SET status = :invalid
WHERE thread_id = :thread_id AND status = :valid AND covered_through_seq >= :seq
--   :invalid = 'invalid'
--   :seq = 5
--   :thread_id = 't1'
--   :valid = 'valid'

-- summaries.prune
DELETE FROM "ACME_THREAD_SUMMARY"
WHERE record_id IN (
  SELECT ranked.record_id FROM (
    SELECT s.record_id, ROW_NUMBER() OVER (ORDER BY s.revision DESC) AS newest
    FROM "ACME_THREAD_SUMMARY" s WHERE s.thread_id = :thread_id
  ) ranked
  WHERE ranked.newest > :keep
)
--   :keep = 50
--   :thread_id = 't1'

