-- ===== store: default =====
-- links.check_add
SELECT
  (SELECT COUNT(*) FROM "MEMORY" r WHERE r.record_id = :source_memory_id) AS source_found,
  (SELECT COUNT(*) FROM "MEMORY" r WHERE r.record_id = :target_memory_id) AS target_found,
  (SELECT COUNT(*) FROM "MEMORY_LINK" l WHERE l.relation_id = :relation_id) AS id_taken,
  (SELECT COUNT(*) FROM "MEMORY_LINK" l WHERE l.source_memory_id = :source_memory_id AND l.target_memory_id = :target_memory_id AND l.relation_type = :relation_type) AS link_taken
FROM DUAL
--   :relation_id = 'l1'
--   :relation_type = 'supersedes'
--   :source_memory_id = 'r2'
--   :target_memory_id = 'r1'

-- links.insert
INSERT INTO "MEMORY_LINK" (relation_id, source_memory_id, source_memory_type, target_memory_id, target_memory_type, relation_type, opposite_relation_type, metadata, timestamp, created_at, source_memory_user_id, target_memory_user_id)
VALUES (:relation_id, :source_memory_id, :source_memory_type, :target_memory_id, :target_memory_type, :relation_type, :opposite_relation_type, :metadata, :event_time, :created_at,
  (SELECT r.user_id FROM "MEMORY" r WHERE r.record_id = :source_memory_id),
  (SELECT r.user_id FROM "MEMORY" r WHERE r.record_id = :target_memory_id))
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :metadata = '{"why":"newer"}'
--   :opposite_relation_type = 'is_superseded_by'
--   :relation_id = 'l1'
--   :relation_type = 'supersedes'
--   :source_memory_id = 'r2'
--   :source_memory_type = 'fact'
--   :target_memory_id = 'r1'
--   :target_memory_type = 'preference'

-- links.get
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "MEMORY_LINK" l
WHERE l.relation_id = :relation_id
ORDER BY l.created_at, l.relation_id
--   :relation_id = 'l1'

-- links.find
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "MEMORY_LINK" l
WHERE l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type
ORDER BY l.created_at, l.relation_id
--   :relation_type = 'supersedes'
--   :source_id = 'r2'
--   :target_id = 'r1'

-- links.find_id
SELECT l.relation_id
FROM "MEMORY_LINK" l
WHERE l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type
--   :relation_type = 'supersedes'
--   :source_id = 'r2'
--   :target_id = 'r1'

-- links.between
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "MEMORY_LINK" l
WHERE ((l.source_memory_id = :a AND l.target_memory_id = :b) OR (l.source_memory_id = :b AND l.target_memory_id = :a))
ORDER BY l.created_at, l.relation_id
--   :a = 'r1'
--   :b = 'r2'

-- links.touching
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM (
  SELECT s.relation_id, s.source_memory_id, s.source_memory_type, s.target_memory_id, s.target_memory_type, s.relation_type, s.opposite_relation_type, s.metadata, s.timestamp, s.created_at FROM "MEMORY_LINK" s WHERE s.source_memory_id = :record_id
  UNION ALL
  SELECT t.relation_id, t.source_memory_id, t.source_memory_type, t.target_memory_id, t.target_memory_type, t.relation_type, t.opposite_relation_type, t.metadata, t.timestamp, t.created_at FROM "MEMORY_LINK" t WHERE t.target_memory_id = :record_id
) l
ORDER BY l.created_at, l.relation_id
--   :record_id = 'r1'

-- links.endpoints
SELECT l.source_memory_id, l.target_memory_id
FROM "MEMORY_LINK" l
WHERE l.relation_id = :relation_id
--   :relation_id = 'l1'

-- links.update
UPDATE "MEMORY_LINK"
SET source_memory_type = :source_memory_type, target_memory_type = :target_memory_type, relation_type = :relation_type, opposite_relation_type = :opposite_relation_type, metadata = :metadata, timestamp = :event_time, created_at = :created_at
WHERE relation_id = :relation_id
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :metadata = '{"why":"newer"}'
--   :opposite_relation_type = 'is_superseded_by'
--   :relation_id = 'l1'
--   :relation_type = 'supersedes'
--   :source_memory_type = 'fact'
--   :target_memory_type = 'preference'

-- links.delete
DELETE FROM "MEMORY_LINK"
WHERE relation_id = :relation_id
--   :relation_id = 'l1'

-- links.list
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "MEMORY_LINK" l
ORDER BY l.created_at, l.relation_id

-- links.list_newest
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM (
  SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
  FROM "MEMORY_LINK" l
  WHERE l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type
  ORDER BY l.created_at DESC, l.relation_id DESC
  FETCH FIRST :limit ROWS ONLY
) l
ORDER BY l.created_at, l.relation_id
--   :limit = 3
--   :relation_type = 'supersedes'
--   :source_id = 'r2'
--   :target_id = 'r1'

-- ===== store: acme =====
-- links.check_add
SELECT
  (SELECT COUNT(*) FROM "ACME_MEMORY" r WHERE r.record_id = :source_memory_id) AS source_found,
  (SELECT COUNT(*) FROM "ACME_MEMORY" r WHERE r.record_id = :target_memory_id) AS target_found,
  (SELECT COUNT(*) FROM "ACME_MEMORY_LINK" l WHERE l.relation_id = :relation_id) AS id_taken,
  (SELECT COUNT(*) FROM "ACME_MEMORY_LINK" l WHERE l.source_memory_id = :source_memory_id AND l.target_memory_id = :target_memory_id AND l.relation_type = :relation_type) AS link_taken
FROM DUAL
--   :relation_id = 'l1'
--   :relation_type = 'supersedes'
--   :source_memory_id = 'r2'
--   :target_memory_id = 'r1'

-- links.insert
INSERT INTO "ACME_MEMORY_LINK" (relation_id, source_memory_id, source_memory_type, target_memory_id, target_memory_type, relation_type, opposite_relation_type, metadata, timestamp, created_at, source_memory_user_id, target_memory_user_id)
VALUES (:relation_id, :source_memory_id, :source_memory_type, :target_memory_id, :target_memory_type, :relation_type, :opposite_relation_type, :metadata, :event_time, :created_at,
  (SELECT r.user_id FROM "ACME_MEMORY" r WHERE r.record_id = :source_memory_id),
  (SELECT r.user_id FROM "ACME_MEMORY" r WHERE r.record_id = :target_memory_id))
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :metadata = '{"why":"newer"}'
--   :opposite_relation_type = 'is_superseded_by'
--   :relation_id = 'l1'
--   :relation_type = 'supersedes'
--   :source_memory_id = 'r2'
--   :source_memory_type = 'fact'
--   :target_memory_id = 'r1'
--   :target_memory_type = 'preference'

-- links.get
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "ACME_MEMORY_LINK" l
WHERE l.relation_id = :relation_id
ORDER BY l.created_at, l.relation_id
--   :relation_id = 'l1'

-- links.find
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "ACME_MEMORY_LINK" l
WHERE l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type
ORDER BY l.created_at, l.relation_id
--   :relation_type = 'supersedes'
--   :source_id = 'r2'
--   :target_id = 'r1'

-- links.find_id
SELECT l.relation_id
FROM "ACME_MEMORY_LINK" l
WHERE l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type
--   :relation_type = 'supersedes'
--   :source_id = 'r2'
--   :target_id = 'r1'

-- links.between
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "ACME_MEMORY_LINK" l
WHERE ((l.source_memory_id = :a AND l.target_memory_id = :b) OR (l.source_memory_id = :b AND l.target_memory_id = :a))
ORDER BY l.created_at, l.relation_id
--   :a = 'r1'
--   :b = 'r2'

-- links.touching
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM (
  SELECT s.relation_id, s.source_memory_id, s.source_memory_type, s.target_memory_id, s.target_memory_type, s.relation_type, s.opposite_relation_type, s.metadata, s.timestamp, s.created_at FROM "ACME_MEMORY_LINK" s WHERE s.source_memory_id = :record_id
  UNION ALL
  SELECT t.relation_id, t.source_memory_id, t.source_memory_type, t.target_memory_id, t.target_memory_type, t.relation_type, t.opposite_relation_type, t.metadata, t.timestamp, t.created_at FROM "ACME_MEMORY_LINK" t WHERE t.target_memory_id = :record_id
) l
ORDER BY l.created_at, l.relation_id
--   :record_id = 'r1'

-- links.endpoints
SELECT l.source_memory_id, l.target_memory_id
FROM "ACME_MEMORY_LINK" l
WHERE l.relation_id = :relation_id
--   :relation_id = 'l1'

-- links.update
UPDATE "ACME_MEMORY_LINK"
SET source_memory_type = :source_memory_type, target_memory_type = :target_memory_type, relation_type = :relation_type, opposite_relation_type = :opposite_relation_type, metadata = :metadata, timestamp = :event_time, created_at = :created_at
WHERE relation_id = :relation_id
--   :created_at = datetime(2025-03-14T12:00:00)
--   :event_time = datetime(2025-03-14T12:00:00)
--   :metadata = '{"why":"newer"}'
--   :opposite_relation_type = 'is_superseded_by'
--   :relation_id = 'l1'
--   :relation_type = 'supersedes'
--   :source_memory_type = 'fact'
--   :target_memory_type = 'preference'

-- links.delete
DELETE FROM "ACME_MEMORY_LINK"
WHERE relation_id = :relation_id
--   :relation_id = 'l1'

-- links.list
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM "ACME_MEMORY_LINK" l
ORDER BY l.created_at, l.relation_id

-- links.list_newest
SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
FROM (
  SELECT l.relation_id, l.source_memory_id, l.source_memory_type, l.target_memory_id, l.target_memory_type, l.relation_type, l.opposite_relation_type, l.metadata, l.timestamp, l.created_at
  FROM "ACME_MEMORY_LINK" l
  WHERE l.source_memory_id = :source_id AND l.target_memory_id = :target_id AND l.relation_type = :relation_type
  ORDER BY l.created_at DESC, l.relation_id DESC
  FETCH FIRST :limit ROWS ONLY
) l
ORDER BY l.created_at, l.relation_id
--   :limit = 3
--   :relation_type = 'supersedes'
--   :source_id = 'r2'
--   :target_id = 'r1'

