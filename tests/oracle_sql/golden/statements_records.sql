-- ===== store: default =====
-- records.insert
INSERT INTO "MEMORY" (record_id, memory_type, content, user_id, agent_id, thread_id, metadata, status, invalidation_reason, invalidated_at, timestamp, expires_at, created_at, updated_at)
VALUES (:record_id, :memory_type, :content, :user_id, :agent_id, :thread_id, :metadata, :status, :invalidation_reason, :invalidated_at, :event_time, :expires_at, :created_at, :updated_at)
--   :agent_id = 'a1'
--   :content = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :invalidated_at = datetime(2025-03-14T12:00:00)
--   :invalidation_reason = 'superseded'
--   :memory_type = 'fact'
--   :metadata = '{"k":[1,"v"]}'
--   :record_id = 'r1'
--   :status = 'invalid'
--   :thread_id = 't1'
--   :updated_at = datetime(2025-03-14T12:00:00)
--   :user_id = 'u1'

-- records.get
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "MEMORY" r
WHERE r.record_id = :record_id
--   :record_id = 'r1'

-- records.get_visible
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "MEMORY" r
WHERE r.record_id = :record_id AND (r.expires_at IS NULL OR r.expires_at > :now)
--   :now = datetime(2025-03-14T12:00:00)
--   :record_id = 'r1'

-- records.get_many
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "MEMORY" r
WHERE r.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["r1","r2"]'

-- records.scope
SELECT r.memory_type, r.user_id, r.agent_id, r.thread_id
FROM "MEMORY" r
WHERE r.record_id = :record_id
--   :record_id = 'r1'

-- records.update
UPDATE "MEMORY"
SET content = :content, metadata = :metadata, status = :status, invalidation_reason = :invalidation_reason, invalidated_at = :invalidated_at, timestamp = :event_time, expires_at = :expires_at, created_at = :created_at, updated_at = :updated_at
WHERE record_id = :record_id
--   :content = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :invalidated_at = datetime(2025-03-14T12:00:00)
--   :invalidation_reason = 'superseded'
--   :metadata = '{"k":[1,"v"]}'
--   :record_id = 'r1'
--   :status = 'invalid'
--   :updated_at = datetime(2025-03-14T12:00:00)

-- records.delete
DELETE FROM "MEMORY"
WHERE record_id = :record_id
--   :record_id = 'r1'

-- records.expired_ids
SELECT r.record_id
FROM "MEMORY" r
WHERE r.expires_at IS NOT NULL AND r.expires_at <= :now
ORDER BY r.expires_at, r.record_id
--   :now = datetime(2025-03-14T12:00:00)

-- records.expired_ids_limited
SELECT r.record_id
FROM "MEMORY" r
WHERE r.expires_at IS NOT NULL AND r.expires_at <= :now
ORDER BY r.expires_at, r.record_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5
--   :now = datetime(2025-03-14T12:00:00)

-- records.unembedded
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "RECORD_CHUNKS" c
  WHERE c.source_id = r.record_id AND c.source_record_type = r.memory_type
  AND c.embedding IS NOT NULL)
ORDER BY r.created_at, r.record_id
--   :now = datetime(2025-03-14T12:00:00)

-- records.unembedded_limited
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "RECORD_CHUNKS" c
  WHERE c.source_id = r.record_id AND c.source_record_type = r.memory_type
  AND c.embedding IS NOT NULL)
ORDER BY r.created_at, r.record_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 64
--   :now = datetime(2025-03-14T12:00:00)

-- records.list
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now)
ORDER BY r.created_at, r.record_id
--   :now = datetime(2025-03-14T12:00:00)

-- records.list_newest
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM (
  SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
  FROM "MEMORY" r
  WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND r.user_id = :user_id AND r.agent_id IS NULL AND r.thread_id = :thread_id AND r.memory_type IN (:memory_type_0, :memory_type_1) AND r.metadata IS NULL
  ORDER BY r.created_at DESC, r.record_id DESC
  FETCH FIRST :limit ROWS ONLY
) r
ORDER BY r.created_at, r.record_id
--   :limit = 2
--   :memory_type_0 = 'fact'
--   :memory_type_1 = 'guideline'
--   :now = datetime(2025-03-14T12:00:00)
--   :thread_id = 't1'
--   :user_id = 'u1'

-- records.list_page
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND r.thread_id IS NULL AND (r.created_at < :after_created_at OR (r.created_at = :after_created_at AND r.record_id < :after_id))
ORDER BY r.created_at DESC, r.record_id DESC
FETCH FIRST :page_size ROWS ONLY
--   :after_created_at = datetime(2025-03-14T12:00:00)
--   :after_id = 'r9'
--   :now = datetime(2025-03-14T12:00:00)
--   :page_size = 100

-- records.list_newest
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM (
  SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
  FROM "MEMORY" r
  WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND r.memory_type IN (:memory_type_0)
  ORDER BY r.created_at DESC, r.record_id DESC
  FETCH FIRST :limit ROWS ONLY
) r
ORDER BY r.created_at, r.record_id
--   :limit = 10
--   :memory_type_0 = 'user_profile'
--   :now = datetime(2025-03-14T12:00:00)

-- ===== store: acme =====
-- records.insert
INSERT INTO "ACME_MEMORY" (record_id, memory_type, content, user_id, agent_id, thread_id, metadata, status, invalidation_reason, invalidated_at, timestamp, expires_at, created_at, updated_at)
VALUES (:record_id, :memory_type, :content, :user_id, :agent_id, :thread_id, :metadata, :status, :invalidation_reason, :invalidated_at, :event_time, :expires_at, :created_at, :updated_at)
--   :agent_id = 'a1'
--   :content = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :invalidated_at = datetime(2025-03-14T12:00:00)
--   :invalidation_reason = 'superseded'
--   :memory_type = 'fact'
--   :metadata = '{"k":[1,"v"]}'
--   :record_id = 'r1'
--   :status = 'invalid'
--   :thread_id = 't1'
--   :updated_at = datetime(2025-03-14T12:00:00)
--   :user_id = 'u1'

-- records.get
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "ACME_MEMORY" r
WHERE r.record_id = :record_id
--   :record_id = 'r1'

-- records.get_visible
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "ACME_MEMORY" r
WHERE r.record_id = :record_id AND (r.expires_at IS NULL OR r.expires_at > :now)
--   :now = datetime(2025-03-14T12:00:00)
--   :record_id = 'r1'

-- records.get_many
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "ACME_MEMORY" r
WHERE r.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["r1","r2"]'

-- records.scope
SELECT r.memory_type, r.user_id, r.agent_id, r.thread_id
FROM "ACME_MEMORY" r
WHERE r.record_id = :record_id
--   :record_id = 'r1'

-- records.update
UPDATE "ACME_MEMORY"
SET content = :content, metadata = :metadata, status = :status, invalidation_reason = :invalidation_reason, invalidated_at = :invalidated_at, timestamp = :event_time, expires_at = :expires_at, created_at = :created_at, updated_at = :updated_at
WHERE record_id = :record_id
--   :content = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :invalidated_at = datetime(2025-03-14T12:00:00)
--   :invalidation_reason = 'superseded'
--   :metadata = '{"k":[1,"v"]}'
--   :record_id = 'r1'
--   :status = 'invalid'
--   :updated_at = datetime(2025-03-14T12:00:00)

-- records.delete
DELETE FROM "ACME_MEMORY"
WHERE record_id = :record_id
--   :record_id = 'r1'

-- records.expired_ids
SELECT r.record_id
FROM "ACME_MEMORY" r
WHERE r.expires_at IS NOT NULL AND r.expires_at <= :now
ORDER BY r.expires_at, r.record_id
--   :now = datetime(2025-03-14T12:00:00)

-- records.expired_ids_limited
SELECT r.record_id
FROM "ACME_MEMORY" r
WHERE r.expires_at IS NOT NULL AND r.expires_at <= :now
ORDER BY r.expires_at, r.record_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 5
--   :now = datetime(2025-03-14T12:00:00)

-- records.unembedded
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "ACME_MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "ACME_RECORD_CHUNKS" c
  WHERE c.source_id = r.record_id AND c.source_record_type = r.memory_type
  AND c.embedding IS NOT NULL)
ORDER BY r.created_at, r.record_id
--   :now = datetime(2025-03-14T12:00:00)

-- records.unembedded_limited
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "ACME_MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "ACME_RECORD_CHUNKS" c
  WHERE c.source_id = r.record_id AND c.source_record_type = r.memory_type
  AND c.embedding IS NOT NULL)
ORDER BY r.created_at, r.record_id
FETCH FIRST :limit ROWS ONLY
--   :limit = 64
--   :now = datetime(2025-03-14T12:00:00)

-- records.list
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "ACME_MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now)
ORDER BY r.created_at, r.record_id
--   :now = datetime(2025-03-14T12:00:00)

-- records.list_newest
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM (
  SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
  FROM "ACME_MEMORY" r
  WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND r.user_id = :user_id AND r.agent_id IS NULL AND r.thread_id = :thread_id AND r.memory_type IN (:memory_type_0, :memory_type_1) AND r.metadata IS NULL
  ORDER BY r.created_at DESC, r.record_id DESC
  FETCH FIRST :limit ROWS ONLY
) r
ORDER BY r.created_at, r.record_id
--   :limit = 2
--   :memory_type_0 = 'fact'
--   :memory_type_1 = 'guideline'
--   :now = datetime(2025-03-14T12:00:00)
--   :thread_id = 't1'
--   :user_id = 'u1'

-- records.list_page
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM "ACME_MEMORY" r
WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND r.thread_id IS NULL AND (r.created_at < :after_created_at OR (r.created_at = :after_created_at AND r.record_id < :after_id))
ORDER BY r.created_at DESC, r.record_id DESC
FETCH FIRST :page_size ROWS ONLY
--   :after_created_at = datetime(2025-03-14T12:00:00)
--   :after_id = 'r9'
--   :now = datetime(2025-03-14T12:00:00)
--   :page_size = 100

-- records.list_newest
SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
FROM (
  SELECT r.record_id, r.memory_type, r.content, r.user_id, r.agent_id, r.thread_id, r.metadata, r.status, r.invalidation_reason, r.invalidated_at, r.timestamp, r.expires_at, r.created_at, r.updated_at
  FROM "ACME_MEMORY" r
  WHERE (r.expires_at IS NULL OR r.expires_at > :now) AND r.memory_type IN (:memory_type_0)
  ORDER BY r.created_at DESC, r.record_id DESC
  FETCH FIRST :limit ROWS ONLY
) r
ORDER BY r.created_at, r.record_id
--   :limit = 10
--   :memory_type_0 = 'user_profile'
--   :now = datetime(2025-03-14T12:00:00)

