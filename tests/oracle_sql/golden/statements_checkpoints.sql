-- ===== store: default =====
-- checkpoints.put
MERGE INTO "CHECKPOINT" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :checkpoint_id AS checkpoint_id, :parent_checkpoint_id AS parent_checkpoint_id, :run_id AS run_id, :type_tag AS type_tag, :checkpoint_data AS checkpoint_data, :metadata AS metadata, :channel_versions AS channel_versions, :created_at AS created_at FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id)
WHEN MATCHED THEN UPDATE SET t.parent_checkpoint_id = v.parent_checkpoint_id, t.run_id = v.run_id, t.type_tag = v.type_tag, t.checkpoint_data = v.checkpoint_data, t.metadata = JSON(v.metadata), t.channel_versions = JSON(v.channel_versions), t.created_at = v.created_at
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type_tag, checkpoint_data, metadata, channel_versions, created_at)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.parent_checkpoint_id, v.run_id, v.type_tag, v.checkpoint_data, JSON(v.metadata), JSON(v.channel_versions), v.created_at)
--   :channel_versions = '{"c":"1"}' as CLOB
--   :checkpoint_data = bytes(10) as BLOB
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"source":"loop"}' as CLOB
--   :parent_checkpoint_id = 'c0'
--   :run_id = 'r1'
--   :thread_id = 't1'
--   :type_tag = 'msgpack'

-- checkpoints.blob_insert
MERGE INTO "CHECKPOINT_BLOB" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :channel AS channel, :channel_version AS channel_version, :type_tag AS type_tag, :blob_data AS blob_data FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.channel = v.channel AND t.channel_version = v.channel_version)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, channel, channel_version, type_tag, blob_data)
VALUES (v.thread_id, v.checkpoint_ns, v.channel, v.channel_version, v.type_tag, v.blob_data)
--   :blob_data = bytes(1) as BLOB
--   :channel = 'c'
--   :channel_version = '1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'
--   :type_tag = 'msgpack'

-- checkpoints.write_replace
MERGE INTO "CHECKPOINT_WRITE" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :checkpoint_id AS checkpoint_id, :task_id AS task_id, :idx AS idx, :task_path AS task_path, :channel AS channel, :type_tag AS type_tag, :write_data AS write_data FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id AND t.task_id = v.task_id AND t.idx = v.idx)
WHEN MATCHED THEN UPDATE SET t.task_path = v.task_path, t.channel = v.channel, t.type_tag = v.type_tag, t.write_data = v.write_data
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, write_data)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.task_id, v.idx, v.task_path, v.channel, v.type_tag, v.write_data)
--   :channel = 'c'
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :idx = -1
--   :task_id = 'task'
--   :task_path = '~0'
--   :thread_id = 't1'
--   :type_tag = 'json'
--   :write_data = bytes(1) as BLOB

-- checkpoints.write_insert
MERGE INTO "CHECKPOINT_WRITE" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :checkpoint_id AS checkpoint_id, :task_id AS task_id, :idx AS idx, :task_path AS task_path, :channel AS channel, :type_tag AS type_tag, :write_data AS write_data FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id AND t.task_id = v.task_id AND t.idx = v.idx)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, write_data)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.task_id, v.idx, v.task_path, v.channel, v.type_tag, v.write_data)
--   :channel = 'c'
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/sub'
--   :idx = 0
--   :task_id = 'task'
--   :task_path = '~0'
--   :thread_id = 't1'
--   :type_tag = 'json'
--   :write_data = bytes(1) as BLOB

-- checkpoints.latest
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "CHECKPOINT" c
WHERE c.thread_id = :thread_id AND c.checkpoint_ns = :checkpoint_ns
ORDER BY c.checkpoint_id DESC
FETCH FIRST 1 ROWS ONLY
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.get
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "CHECKPOINT" c
WHERE c.thread_id = :thread_id AND c.checkpoint_ns = :checkpoint_ns AND c.checkpoint_id = :checkpoint_id
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.list
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "CHECKPOINT" c
ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC

-- checkpoints.list_limited
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "CHECKPOINT" c
WHERE c.thread_id = :thread_id AND c.checkpoint_ns = :checkpoint_ns AND c.checkpoint_id = :checkpoint_id AND c.checkpoint_id < :before
ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC
FETCH FIRST :limit ROWS ONLY
--   :before = 'c9'
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :limit = 3
--   :thread_id = 't1'

-- checkpoints.blobs
SELECT b.channel, b.channel_version, b.type_tag, b.blob_data
FROM "CHECKPOINT_BLOB" b
WHERE b.thread_id = :thread_id AND b.checkpoint_ns = :checkpoint_ns AND ((b.channel = :channel_0 AND b.channel_version = :version_0) OR (b.channel = :channel_1 AND b.channel_version = :version_1))
--   :channel_0 = 'a'
--   :channel_1 = 'b'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'
--   :version_0 = '1'
--   :version_1 = '2'

-- checkpoints.blobs
SELECT b.channel, b.channel_version, b.type_tag, b.blob_data
FROM "CHECKPOINT_BLOB" b
WHERE b.thread_id = :thread_id AND b.checkpoint_ns = :checkpoint_ns AND (1 = 0)
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.writes
SELECT w.task_id, w.task_path, w.idx, w.channel, w.type_tag, w.write_data
FROM "CHECKPOINT_WRITE" w
WHERE w.thread_id = :thread_id AND w.checkpoint_ns = :checkpoint_ns AND w.checkpoint_id = :checkpoint_id
ORDER BY w.task_path NULLS FIRST, w.task_id, w.idx
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoint_writes.delete_threads
DELETE FROM "CHECKPOINT_WRITE"
WHERE thread_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- checkpoint_blobs.delete_threads
DELETE FROM "CHECKPOINT_BLOB"
WHERE thread_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- checkpoints.delete_threads
DELETE FROM "CHECKPOINT"
WHERE thread_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- checkpoint_writes.delete_runs
DELETE FROM "CHECKPOINT_WRITE"
WHERE (thread_id, checkpoint_ns, checkpoint_id) IN (
    SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id FROM "CHECKPOINT" c
    WHERE c.run_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids))
--   :ids = '["r1","r2"]'

-- checkpoints.delete_runs
DELETE FROM "CHECKPOINT"
WHERE run_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["r1","r2"]'

-- checkpoint_writes.delete
DELETE FROM "CHECKPOINT_WRITE"
WHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns AND checkpoint_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :checkpoint_ns = '/'
--   :ids = '["c1"]'
--   :thread_id = 't1'

-- checkpoints.delete
DELETE FROM "CHECKPOINT"
WHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns AND checkpoint_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :checkpoint_ns = '/'
--   :ids = '["c1","c2"]'
--   :thread_id = 't1'

-- checkpoint_blobs.delete
DELETE FROM "CHECKPOINT_BLOB"
WHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns AND channel = :channel AND channel_version = :channel_version
--   :channel = 'c'
--   :channel_version = '1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.copy
MERGE INTO "CHECKPOINT" t
USING (SELECT :target_thread_id AS thread_id, s.checkpoint_ns, s.checkpoint_id, s.parent_checkpoint_id, s.run_id, s.type_tag, s.checkpoint_data, s.metadata, s.channel_versions, s.created_at
       FROM "CHECKPOINT" s WHERE s.thread_id = :source_thread_id) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type_tag, checkpoint_data, metadata, channel_versions, created_at)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.parent_checkpoint_id, v.run_id, v.type_tag, v.checkpoint_data, v.metadata, v.channel_versions, v.created_at)
--   :source_thread_id = 't1'
--   :target_thread_id = 't2'

-- checkpoint_blobs.copy
MERGE INTO "CHECKPOINT_BLOB" t
USING (SELECT :target_thread_id AS thread_id, s.checkpoint_ns, s.channel, s.channel_version, s.type_tag, s.blob_data
       FROM "CHECKPOINT_BLOB" s WHERE s.thread_id = :source_thread_id) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.channel = v.channel AND t.channel_version = v.channel_version)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, channel, channel_version, type_tag, blob_data)
VALUES (v.thread_id, v.checkpoint_ns, v.channel, v.channel_version, v.type_tag, v.blob_data)
--   :source_thread_id = 't1'
--   :target_thread_id = 't2'

-- checkpoint_writes.copy
MERGE INTO "CHECKPOINT_WRITE" t
USING (SELECT :target_thread_id AS thread_id, s.checkpoint_ns, s.checkpoint_id, s.task_id, s.idx, s.task_path, s.channel, s.type_tag, s.write_data
       FROM "CHECKPOINT_WRITE" s WHERE s.thread_id = :source_thread_id) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id AND t.task_id = v.task_id AND t.idx = v.idx)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, write_data)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.task_id, v.idx, v.task_path, v.channel, v.type_tag, v.write_data)
--   :source_thread_id = 't1'
--   :target_thread_id = 't2'

-- ===== store: acme =====
-- checkpoints.put
MERGE INTO "ACME_CHECKPOINT" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :checkpoint_id AS checkpoint_id, :parent_checkpoint_id AS parent_checkpoint_id, :run_id AS run_id, :type_tag AS type_tag, :checkpoint_data AS checkpoint_data, :metadata AS metadata, :channel_versions AS channel_versions, :created_at AS created_at FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id)
WHEN MATCHED THEN UPDATE SET t.parent_checkpoint_id = v.parent_checkpoint_id, t.run_id = v.run_id, t.type_tag = v.type_tag, t.checkpoint_data = v.checkpoint_data, t.metadata = JSON(v.metadata), t.channel_versions = JSON(v.channel_versions), t.created_at = v.created_at
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type_tag, checkpoint_data, metadata, channel_versions, created_at)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.parent_checkpoint_id, v.run_id, v.type_tag, v.checkpoint_data, JSON(v.metadata), JSON(v.channel_versions), v.created_at)
--   :channel_versions = '{"c":"1"}' as CLOB
--   :checkpoint_data = bytes(10) as BLOB
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :metadata = '{"source":"loop"}' as CLOB
--   :parent_checkpoint_id = 'c0'
--   :run_id = 'r1'
--   :thread_id = 't1'
--   :type_tag = 'msgpack'

-- checkpoints.blob_insert
MERGE INTO "ACME_CHECKPOINT_BLOB" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :channel AS channel, :channel_version AS channel_version, :type_tag AS type_tag, :blob_data AS blob_data FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.channel = v.channel AND t.channel_version = v.channel_version)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, channel, channel_version, type_tag, blob_data)
VALUES (v.thread_id, v.checkpoint_ns, v.channel, v.channel_version, v.type_tag, v.blob_data)
--   :blob_data = bytes(1) as BLOB
--   :channel = 'c'
--   :channel_version = '1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'
--   :type_tag = 'msgpack'

-- checkpoints.write_replace
MERGE INTO "ACME_CHECKPOINT_WRITE" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :checkpoint_id AS checkpoint_id, :task_id AS task_id, :idx AS idx, :task_path AS task_path, :channel AS channel, :type_tag AS type_tag, :write_data AS write_data FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id AND t.task_id = v.task_id AND t.idx = v.idx)
WHEN MATCHED THEN UPDATE SET t.task_path = v.task_path, t.channel = v.channel, t.type_tag = v.type_tag, t.write_data = v.write_data
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, write_data)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.task_id, v.idx, v.task_path, v.channel, v.type_tag, v.write_data)
--   :channel = 'c'
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :idx = -1
--   :task_id = 'task'
--   :task_path = '~0'
--   :thread_id = 't1'
--   :type_tag = 'json'
--   :write_data = bytes(1) as BLOB

-- checkpoints.write_insert
MERGE INTO "ACME_CHECKPOINT_WRITE" t
USING (SELECT :thread_id AS thread_id, :checkpoint_ns AS checkpoint_ns, :checkpoint_id AS checkpoint_id, :task_id AS task_id, :idx AS idx, :task_path AS task_path, :channel AS channel, :type_tag AS type_tag, :write_data AS write_data FROM DUAL) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id AND t.task_id = v.task_id AND t.idx = v.idx)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, write_data)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.task_id, v.idx, v.task_path, v.channel, v.type_tag, v.write_data)
--   :channel = 'c'
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/sub'
--   :idx = 0
--   :task_id = 'task'
--   :task_path = '~0'
--   :thread_id = 't1'
--   :type_tag = 'json'
--   :write_data = bytes(1) as BLOB

-- checkpoints.latest
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "ACME_CHECKPOINT" c
WHERE c.thread_id = :thread_id AND c.checkpoint_ns = :checkpoint_ns
ORDER BY c.checkpoint_id DESC
FETCH FIRST 1 ROWS ONLY
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.get
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "ACME_CHECKPOINT" c
WHERE c.thread_id = :thread_id AND c.checkpoint_ns = :checkpoint_ns AND c.checkpoint_id = :checkpoint_id
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.list
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "ACME_CHECKPOINT" c
ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC

-- checkpoints.list_limited
SELECT c.thread_id, SUBSTR(c.checkpoint_ns, 2), c.checkpoint_id, c.parent_checkpoint_id, c.run_id, c.type_tag, c.checkpoint_data, c.metadata, c.channel_versions, c.created_at
FROM "ACME_CHECKPOINT" c
WHERE c.thread_id = :thread_id AND c.checkpoint_ns = :checkpoint_ns AND c.checkpoint_id = :checkpoint_id AND c.checkpoint_id < :before
ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC
FETCH FIRST :limit ROWS ONLY
--   :before = 'c9'
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :limit = 3
--   :thread_id = 't1'

-- checkpoints.blobs
SELECT b.channel, b.channel_version, b.type_tag, b.blob_data
FROM "ACME_CHECKPOINT_BLOB" b
WHERE b.thread_id = :thread_id AND b.checkpoint_ns = :checkpoint_ns AND ((b.channel = :channel_0 AND b.channel_version = :version_0) OR (b.channel = :channel_1 AND b.channel_version = :version_1))
--   :channel_0 = 'a'
--   :channel_1 = 'b'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'
--   :version_0 = '1'
--   :version_1 = '2'

-- checkpoints.blobs
SELECT b.channel, b.channel_version, b.type_tag, b.blob_data
FROM "ACME_CHECKPOINT_BLOB" b
WHERE b.thread_id = :thread_id AND b.checkpoint_ns = :checkpoint_ns AND (1 = 0)
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.writes
SELECT w.task_id, w.task_path, w.idx, w.channel, w.type_tag, w.write_data
FROM "ACME_CHECKPOINT_WRITE" w
WHERE w.thread_id = :thread_id AND w.checkpoint_ns = :checkpoint_ns AND w.checkpoint_id = :checkpoint_id
ORDER BY w.task_path NULLS FIRST, w.task_id, w.idx
--   :checkpoint_id = 'c1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoint_writes.delete_threads
DELETE FROM "ACME_CHECKPOINT_WRITE"
WHERE thread_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- checkpoint_blobs.delete_threads
DELETE FROM "ACME_CHECKPOINT_BLOB"
WHERE thread_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- checkpoints.delete_threads
DELETE FROM "ACME_CHECKPOINT"
WHERE thread_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["t1","t2"]'

-- checkpoint_writes.delete_runs
DELETE FROM "ACME_CHECKPOINT_WRITE"
WHERE (thread_id, checkpoint_ns, checkpoint_id) IN (
    SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id FROM "ACME_CHECKPOINT" c
    WHERE c.run_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids))
--   :ids = '["r1","r2"]'

-- checkpoints.delete_runs
DELETE FROM "ACME_CHECKPOINT"
WHERE run_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["r1","r2"]'

-- checkpoint_writes.delete
DELETE FROM "ACME_CHECKPOINT_WRITE"
WHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns AND checkpoint_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :checkpoint_ns = '/'
--   :ids = '["c1"]'
--   :thread_id = 't1'

-- checkpoints.delete
DELETE FROM "ACME_CHECKPOINT"
WHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns AND checkpoint_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :checkpoint_ns = '/'
--   :ids = '["c1","c2"]'
--   :thread_id = 't1'

-- checkpoint_blobs.delete
DELETE FROM "ACME_CHECKPOINT_BLOB"
WHERE thread_id = :thread_id AND checkpoint_ns = :checkpoint_ns AND channel = :channel AND channel_version = :channel_version
--   :channel = 'c'
--   :channel_version = '1'
--   :checkpoint_ns = '/'
--   :thread_id = 't1'

-- checkpoints.copy
MERGE INTO "ACME_CHECKPOINT" t
USING (SELECT :target_thread_id AS thread_id, s.checkpoint_ns, s.checkpoint_id, s.parent_checkpoint_id, s.run_id, s.type_tag, s.checkpoint_data, s.metadata, s.channel_versions, s.created_at
       FROM "ACME_CHECKPOINT" s WHERE s.thread_id = :source_thread_id) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type_tag, checkpoint_data, metadata, channel_versions, created_at)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.parent_checkpoint_id, v.run_id, v.type_tag, v.checkpoint_data, v.metadata, v.channel_versions, v.created_at)
--   :source_thread_id = 't1'
--   :target_thread_id = 't2'

-- checkpoint_blobs.copy
MERGE INTO "ACME_CHECKPOINT_BLOB" t
USING (SELECT :target_thread_id AS thread_id, s.checkpoint_ns, s.channel, s.channel_version, s.type_tag, s.blob_data
       FROM "ACME_CHECKPOINT_BLOB" s WHERE s.thread_id = :source_thread_id) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.channel = v.channel AND t.channel_version = v.channel_version)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, channel, channel_version, type_tag, blob_data)
VALUES (v.thread_id, v.checkpoint_ns, v.channel, v.channel_version, v.type_tag, v.blob_data)
--   :source_thread_id = 't1'
--   :target_thread_id = 't2'

-- checkpoint_writes.copy
MERGE INTO "ACME_CHECKPOINT_WRITE" t
USING (SELECT :target_thread_id AS thread_id, s.checkpoint_ns, s.checkpoint_id, s.task_id, s.idx, s.task_path, s.channel, s.type_tag, s.write_data
       FROM "ACME_CHECKPOINT_WRITE" s WHERE s.thread_id = :source_thread_id) v
ON (t.thread_id = v.thread_id AND t.checkpoint_ns = v.checkpoint_ns AND t.checkpoint_id = v.checkpoint_id AND t.task_id = v.task_id AND t.idx = v.idx)
WHEN NOT MATCHED THEN INSERT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, task_path, channel, type_tag, write_data)
VALUES (v.thread_id, v.checkpoint_ns, v.checkpoint_id, v.task_id, v.idx, v.task_path, v.channel, v.type_tag, v.write_data)
--   :source_thread_id = 't1'
--   :target_thread_id = 't2'

