-- ===== store: default =====
-- threads.insert
INSERT INTO "THREAD" (record_id, user_id, agent_id, metadata, runtime_config, runtime_state, created_at, updated_at)
VALUES (:record_id, :user_id, :agent_id, :metadata, :runtime_config, :runtime_state, :created_at, :updated_at)
--   :agent_id = None
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"topic":"tea"}'
--   :record_id = 't1'
--   :runtime_config = '{"ttl_days":3}'
--   :runtime_state = '{"turns":2}'
--   :updated_at = datetime(2025-03-21T12:00:00)
--   :user_id = 'u1'

-- threads.get
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "THREAD" t
WHERE t.record_id = :record_id
--   :record_id = 't1'

-- threads.existing
SELECT t.record_id
FROM "THREAD" t
WHERE t.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- threads.update
UPDATE "THREAD"
SET user_id = :user_id, agent_id = :agent_id, metadata = :metadata, runtime_config = :runtime_config, runtime_state = :runtime_state, created_at = :created_at, updated_at = :updated_at
WHERE record_id = :record_id
--   :agent_id = None
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"topic":"tea"}'
--   :record_id = 't1'
--   :runtime_config = '{"ttl_days":3}'
--   :runtime_state = '{"turns":2}'
--   :updated_at = datetime(2025-03-21T12:00:00)
--   :user_id = 'u1'

-- threads.delete
DELETE FROM "THREAD"
WHERE record_id = :record_id
--   :record_id = 't1'

-- threads.list
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "THREAD" t
ORDER BY t.created_at, t.record_id

-- threads.list_newest
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM (
  SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
  FROM "THREAD" t
  WHERE t.user_id = :user_id AND t.agent_id IS NULL
  ORDER BY t.created_at DESC, t.record_id DESC
  FETCH FIRST :limit ROWS ONLY
) t
ORDER BY t.created_at, t.record_id
--   :limit = 10
--   :user_id = 'u1'

-- threads.list
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "THREAD" t
WHERE t.metadata IS NULL
ORDER BY t.created_at, t.record_id

-- threads.list_page
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "THREAD" t
WHERE t.user_id = :user_id AND (t.created_at < :after_created_at OR (t.created_at = :after_created_at AND t.record_id < :after_id))
ORDER BY t.created_at DESC, t.record_id DESC
FETCH FIRST :page_size ROWS ONLY
--   :after_created_at = datetime(2025-03-14T12:00:00)
--   :after_id = 'r9'
--   :page_size = 100
--   :user_id = 'u1'

-- ===== store: acme =====
-- threads.insert
INSERT INTO "ACME_THREAD" (record_id, user_id, agent_id, metadata, runtime_config, runtime_state, created_at, updated_at)
VALUES (:record_id, :user_id, :agent_id, :metadata, :runtime_config, :runtime_state, :created_at, :updated_at)
--   :agent_id = None
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"topic":"tea"}'
--   :record_id = 't1'
--   :runtime_config = '{"ttl_days":3}'
--   :runtime_state = '{"turns":2}'
--   :updated_at = datetime(2025-03-21T12:00:00)
--   :user_id = 'u1'

-- threads.get
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "ACME_THREAD" t
WHERE t.record_id = :record_id
--   :record_id = 't1'

-- threads.existing
SELECT t.record_id
FROM "ACME_THREAD" t
WHERE t.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- threads.update
UPDATE "ACME_THREAD"
SET user_id = :user_id, agent_id = :agent_id, metadata = :metadata, runtime_config = :runtime_config, runtime_state = :runtime_state, created_at = :created_at, updated_at = :updated_at
WHERE record_id = :record_id
--   :agent_id = None
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"topic":"tea"}'
--   :record_id = 't1'
--   :runtime_config = '{"ttl_days":3}'
--   :runtime_state = '{"turns":2}'
--   :updated_at = datetime(2025-03-21T12:00:00)
--   :user_id = 'u1'

-- threads.delete
DELETE FROM "ACME_THREAD"
WHERE record_id = :record_id
--   :record_id = 't1'

-- threads.list
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "ACME_THREAD" t
ORDER BY t.created_at, t.record_id

-- threads.list_newest
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM (
  SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
  FROM "ACME_THREAD" t
  WHERE t.user_id = :user_id AND t.agent_id IS NULL
  ORDER BY t.created_at DESC, t.record_id DESC
  FETCH FIRST :limit ROWS ONLY
) t
ORDER BY t.created_at, t.record_id
--   :limit = 10
--   :user_id = 'u1'

-- threads.list
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "ACME_THREAD" t
WHERE t.metadata IS NULL
ORDER BY t.created_at, t.record_id

-- threads.list_page
SELECT t.record_id, t.user_id, t.agent_id, t.metadata, t.runtime_config, t.runtime_state, t.created_at, t.updated_at
FROM "ACME_THREAD" t
WHERE t.user_id = :user_id AND (t.created_at < :after_created_at OR (t.created_at = :after_created_at AND t.record_id < :after_id))
ORDER BY t.created_at DESC, t.record_id DESC
FETCH FIRST :page_size ROWS ONLY
--   :after_created_at = datetime(2025-03-14T12:00:00)
--   :after_id = 'r9'
--   :page_size = 100
--   :user_id = 'u1'

