-- ===== store: default =====
-- messages.insert
INSERT INTO "MESSAGE" (record_id, thread_id, order_seq, message_role, content, timestamp, metadata, user_id, agent_id, created_at, expires_at)
VALUES (:record_id, :thread_id, :order_seq, :message_role, :content, :event_time, :metadata, :user_id, :agent_id, :created_at, :expires_at)
--   :agent_id = None
--   :content = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T11:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :message_role = 'user'
--   :metadata = '{"lang":"en"}'
--   :order_seq = 3
--   :record_id = 'm1'
--   :thread_id = 't1'
--   :user_id = 'u1'

-- messages.get
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "MESSAGE" m
WHERE m.record_id = :record_id AND (m.expires_at IS NULL OR m.expires_at > :now)
--   :now = datetime(2025-03-14T12:00:00)
--   :record_id = 'm1'

-- messages.last_seq
SELECT MAX(m.order_seq)
FROM "MESSAGE" m
WHERE m.thread_id = :thread_id
--   :thread_id = 't1'

-- messages.list_for_thread
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "MESSAGE" m
WHERE m.thread_id = :thread_id AND (m.expires_at IS NULL OR m.expires_at > :now)
ORDER BY m.order_seq
--   :now = datetime(2025-03-14T12:00:00)
--   :thread_id = 't1'

-- messages.list_for_thread_newest
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM (
  SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
  FROM "MESSAGE" m
  WHERE m.thread_id = :thread_id AND (m.expires_at IS NULL OR m.expires_at > :now) AND m.order_seq >= :start_seq AND m.order_seq < :end_seq
  ORDER BY m.order_seq DESC
  FETCH FIRST :limit ROWS ONLY
) m
ORDER BY m.order_seq
--   :end_seq = 9
--   :limit = 3
--   :now = datetime(2025-03-14T12:00:00)
--   :start_seq = 2
--   :thread_id = 't1'

-- messages.list
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "MESSAGE" m
WHERE (m.expires_at IS NULL OR m.expires_at > :now)
ORDER BY m.created_at, m.thread_id, m.order_seq
--   :now = datetime(2025-03-14T12:00:00)

-- messages.list_newest
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM (
  SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
  FROM "MESSAGE" m
  WHERE (m.expires_at IS NULL OR m.expires_at > :now) AND m.user_id = :user_id AND m.agent_id IS NULL AND m.thread_id = :thread_id AND m.metadata IS NULL
  ORDER BY m.created_at DESC, m.thread_id DESC, m.order_seq DESC
  FETCH FIRST :limit ROWS ONLY
) m
ORDER BY m.created_at, m.thread_id, m.order_seq
--   :limit = 7
--   :now = datetime(2025-03-14T12:00:00)
--   :thread_id = 't1'
--   :user_id = 'u1'

-- messages.place
SELECT m.thread_id, m.order_seq
FROM "MESSAGE" m
WHERE m.record_id = :record_id
--   :record_id = 'm1'

-- messages.place_with_text
SELECT m.thread_id, m.order_seq, m.content, m.metadata
FROM "MESSAGE" m
WHERE m.record_id = :record_id
--   :record_id = 'm1'

-- messages.before
SELECT m.content, m.metadata
FROM "MESSAGE" m
WHERE m.thread_id = :thread_id AND m.order_seq < :order_seq
ORDER BY m.order_seq DESC
FETCH FIRST 1 ROWS ONLY
--   :order_seq = 3
--   :thread_id = 't1'

-- messages.after
SELECT m.record_id, m.order_seq, m.content, m.metadata
FROM "MESSAGE" m
WHERE m.thread_id = :thread_id AND m.order_seq > :order_seq
ORDER BY m.order_seq
FETCH FIRST 1 ROWS ONLY
--   :order_seq = 3
--   :thread_id = 't1'

-- messages.update
UPDATE "MESSAGE"
SET message_role = :message_role, content = :content, timestamp = :event_time, metadata = :metadata, user_id = :user_id, agent_id = :agent_id, created_at = :created_at, expires_at = :expires_at
WHERE record_id = :record_id
--   :agent_id = None
--   :content = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T11:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :message_role = 'user'
--   :metadata = '{"lang":"en"}'
--   :record_id = 'm1'
--   :user_id = 'u1'

-- messages.vectors
SELECT c.source_id, c.embedding
FROM "RECORD_CHUNKS" c
WHERE c.source_record_type = :source_record_type AND c.thread_id = :thread_id
AND c.embedding IS NOT NULL AND c.source_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["m1", "m2"]'
--   :source_record_type = 'message'
--   :thread_id = 't1'

-- messages.delete
DELETE FROM "MESSAGE"
WHERE record_id = :record_id
--   :record_id = 'm1'

-- messages.expired
SELECT m.record_id, m.thread_id, m.order_seq
FROM "MESSAGE" m
WHERE m.expires_at IS NOT NULL AND m.expires_at <= :now
FOR UPDATE
--   :now = datetime(2025-03-14T12:00:00)

-- messages.unembedded
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "MESSAGE" m
WHERE (m.expires_at IS NULL OR m.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "RECORD_CHUNKS" c
  WHERE c.source_id = m.record_id AND c.source_record_type = :source_record_type
  AND c.embedding IS NOT NULL)
ORDER BY m.created_at, m.thread_id, m.order_seq
--   :now = datetime(2025-03-14T12:00:00)
--   :source_record_type = 'message'

-- messages.unembedded_limited
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "MESSAGE" m
WHERE (m.expires_at IS NULL OR m.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "RECORD_CHUNKS" c
  WHERE c.source_id = m.record_id AND c.source_record_type = :source_record_type
  AND c.embedding IS NOT NULL)
ORDER BY m.created_at, m.thread_id, m.order_seq
FETCH FIRST :limit ROWS ONLY
--   :limit = 64
--   :now = datetime(2025-03-14T12:00:00)
--   :source_record_type = 'message'

-- ===== store: acme =====
-- messages.insert
INSERT INTO "ACME_MESSAGE" (record_id, thread_id, order_seq, message_role, content, timestamp, metadata, user_id, agent_id, created_at, expires_at)
VALUES (:record_id, :thread_id, :order_seq, :message_role, :content, :event_time, :metadata, :user_id, :agent_id, :created_at, :expires_at)
--   :agent_id = None
--   :content = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T11:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :message_role = 'user'
--   :metadata = '{"lang":"en"}'
--   :order_seq = 3
--   :record_id = 'm1'
--   :thread_id = 't1'
--   :user_id = 'u1'

-- messages.get
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "ACME_MESSAGE" m
WHERE m.record_id = :record_id AND (m.expires_at IS NULL OR m.expires_at > :now)
--   :now = datetime(2025-03-14T12:00:00)
--   :record_id = 'm1'

-- messages.last_seq
SELECT MAX(m.order_seq)
FROM "ACME_MESSAGE" m
WHERE m.thread_id = :thread_id
--   :thread_id = 't1'

-- messages.list_for_thread
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "ACME_MESSAGE" m
WHERE m.thread_id = :thread_id AND (m.expires_at IS NULL OR m.expires_at > :now)
ORDER BY m.order_seq
--   :now = datetime(2025-03-14T12:00:00)
--   :thread_id = 't1'

-- messages.list_for_thread_newest
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM (
  SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
  FROM "ACME_MESSAGE" m
  WHERE m.thread_id = :thread_id AND (m.expires_at IS NULL OR m.expires_at > :now) AND m.order_seq >= :start_seq AND m.order_seq < :end_seq
  ORDER BY m.order_seq DESC
  FETCH FIRST :limit ROWS ONLY
) m
ORDER BY m.order_seq
--   :end_seq = 9
--   :limit = 3
--   :now = datetime(2025-03-14T12:00:00)
--   :start_seq = 2
--   :thread_id = 't1'

-- messages.list
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "ACME_MESSAGE" m
WHERE (m.expires_at IS NULL OR m.expires_at > :now)
ORDER BY m.created_at, m.thread_id, m.order_seq
--   :now = datetime(2025-03-14T12:00:00)

-- messages.list_newest
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM (
  SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
  FROM "ACME_MESSAGE" m
  WHERE (m.expires_at IS NULL OR m.expires_at > :now) AND m.user_id = :user_id AND m.agent_id IS NULL AND m.thread_id = :thread_id AND m.metadata IS NULL
  ORDER BY m.created_at DESC, m.thread_id DESC, m.order_seq DESC
  FETCH FIRST :limit ROWS ONLY
) m
ORDER BY m.created_at, m.thread_id, m.order_seq
--   :limit = 7
--   :now = datetime(2025-03-14T12:00:00)
--   :thread_id = 't1'
--   :user_id = 'u1'

-- messages.place
SELECT m.thread_id, m.order_seq
FROM "ACME_MESSAGE" m
WHERE m.record_id = :record_id
--   :record_id = 'm1'

-- messages.place_with_text
SELECT m.thread_id, m.order_seq, m.content, m.metadata
FROM "ACME_MESSAGE" m
WHERE m.record_id = :record_id
--   :record_id = 'm1'

-- messages.before
SELECT m.content, m.metadata
FROM "ACME_MESSAGE" m
WHERE m.thread_id = :thread_id AND m.order_seq < :order_seq
ORDER BY m.order_seq DESC
FETCH FIRST 1 ROWS ONLY
--   :order_seq = 3
--   :thread_id = 't1'

-- messages.after
SELECT m.record_id, m.order_seq, m.content, m.metadata
FROM "ACME_MESSAGE" m
WHERE m.thread_id = :thread_id AND m.order_seq > :order_seq
ORDER BY m.order_seq
FETCH FIRST 1 ROWS ONLY
--   :order_seq = 3
--   :thread_id = 't1'

-- messages.update
UPDATE "ACME_MESSAGE"
SET message_role = :message_role, content = :content, timestamp = :event_time, metadata = :metadata, user_id = :user_id, agent_id = :agent_id, created_at = :created_at, expires_at = :expires_at
WHERE record_id = :record_id
--   :agent_id = None
--   :content = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T11:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :message_role = 'user'
--   :metadata = '{"lang":"en"}'
--   :record_id = 'm1'
--   :user_id = 'u1'

-- messages.vectors
SELECT c.source_id, c.embedding
FROM "ACME_RECORD_CHUNKS" c
WHERE c.source_record_type = :source_record_type AND c.thread_id = :thread_id
AND c.embedding IS NOT NULL AND c.source_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["m1", "m2"]'
--   :source_record_type = 'message'
--   :thread_id = 't1'

-- messages.delete
DELETE FROM "ACME_MESSAGE"
WHERE record_id = :record_id
--   :record_id = 'm1'

-- messages.expired
SELECT m.record_id, m.thread_id, m.order_seq
FROM "ACME_MESSAGE" m
WHERE m.expires_at IS NOT NULL AND m.expires_at <= :now
FOR UPDATE
--   :now = datetime(2025-03-14T12:00:00)

-- messages.unembedded
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "ACME_MESSAGE" m
WHERE (m.expires_at IS NULL OR m.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "ACME_RECORD_CHUNKS" c
  WHERE c.source_id = m.record_id AND c.source_record_type = :source_record_type
  AND c.embedding IS NOT NULL)
ORDER BY m.created_at, m.thread_id, m.order_seq
--   :now = datetime(2025-03-14T12:00:00)
--   :source_record_type = 'message'

-- messages.unembedded_limited
SELECT m.record_id, m.thread_id, m.order_seq, m.message_role, m.content, m.timestamp, m.metadata, m.user_id, m.agent_id, m.created_at, m.expires_at
FROM "ACME_MESSAGE" m
WHERE (m.expires_at IS NULL OR m.expires_at > :now) AND NOT EXISTS (
  SELECT 1 FROM "ACME_RECORD_CHUNKS" c
  WHERE c.source_id = m.record_id AND c.source_record_type = :source_record_type
  AND c.embedding IS NOT NULL)
ORDER BY m.created_at, m.thread_id, m.order_seq
FETCH FIRST :limit ROWS ONLY
--   :limit = 64
--   :now = datetime(2025-03-14T12:00:00)
--   :source_record_type = 'message'

