-- ===== store: default =====
-- chunks.insert
INSERT INTO "RECORD_CHUNKS" (source_id, source_record_type, source_emb_column, chunk_seq, chunk_text, thread_id, user_id, agent_id, status, expires_at, created_at, embedding)
VALUES (:source_id, :source_record_type, :source_emb_column, :chunk_seq, :chunk_text, :thread_id, :user_id, :agent_id, :status, :expires_at, :created_at, :embedding)
--   :agent_id = None
--   :chunk_seq = 1
--   :chunk_text = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :embedding = array('f', [0.6, 0.8, 0.0, 0.0])
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_emb_column = 'content'
--   :source_id = 'm1'
--   :source_record_type = 'message'
--   :status = 'valid'
--   :thread_id = 't1'
--   :user_id = 'u1'

-- chunks.insert_without_vector
INSERT INTO "RECORD_CHUNKS" (source_id, source_record_type, source_emb_column, chunk_seq, chunk_text, thread_id, user_id, agent_id, status, expires_at, created_at, embedding)
VALUES (:source_id, :source_record_type, :source_emb_column, :chunk_seq, :chunk_text, :thread_id, :user_id, :agent_id, :status, :expires_at, :created_at, NULL)
--   :agent_id = None
--   :chunk_seq = 1
--   :chunk_text = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_emb_column = 'content'
--   :source_id = 'm1'
--   :source_record_type = 'message'
--   :status = 'valid'
--   :thread_id = 't1'
--   :user_id = 'u1'

-- chunks.update
UPDATE "RECORD_CHUNKS"
SET chunk_text = :chunk_text, user_id = :user_id, agent_id = :agent_id, status = :status, expires_at = :expires_at, created_at = :created_at
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :agent_id = 'a1'
--   :chunk_seq = 1
--   :chunk_text = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_id = 'r1'
--   :source_record_type = 'fact'
--   :status = 'invalid'
--   :user_id = 'u1'

-- chunks.update_drop_vector
UPDATE "RECORD_CHUNKS"
SET chunk_text = :chunk_text, user_id = :user_id, agent_id = :agent_id, status = :status, expires_at = :expires_at, created_at = :created_at, embedding = NULL
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :agent_id = 'a1'
--   :chunk_seq = 1
--   :chunk_text = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_id = 'r1'
--   :source_record_type = 'fact'
--   :status = 'invalid'
--   :user_id = 'u1'

-- chunks.update_vector
UPDATE "RECORD_CHUNKS"
SET chunk_text = :chunk_text, user_id = :user_id, agent_id = :agent_id, status = :status, expires_at = :expires_at, created_at = :created_at, embedding = :embedding
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :agent_id = 'a1'
--   :chunk_seq = 1
--   :chunk_text = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :embedding = array('f', [0.6, 0.8, 0.0, 0.0])
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_id = 'r1'
--   :source_record_type = 'fact'
--   :status = 'invalid'
--   :user_id = 'u1'

-- chunks.update_text
UPDATE "RECORD_CHUNKS"
SET chunk_text = :chunk_text
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :chunk_seq = 1
--   :chunk_text = 'Ann: hi\nBob: hello'
--   :source_id = 'm1'
--   :source_record_type = 'message'

-- chunks.delete_message
DELETE FROM "RECORD_CHUNKS"
WHERE source_record_type = :source_record_type AND source_id = :source_id
--   :source_id = 'm1'
--   :source_record_type = 'message'

-- chunks.delete_record
DELETE FROM "RECORD_CHUNKS"
WHERE source_id = :source_id AND source_record_type IN (:record_type_0, :record_type_1, :record_type_2, :record_type_3, :record_type_4, :record_type_5, :record_type_6)
--   :record_type_0 = 'agent_profile'
--   :record_type_1 = 'fact'
--   :record_type_2 = 'guideline'
--   :record_type_3 = 'image'
--   :record_type_4 = 'memory'
--   :record_type_5 = 'preference'
--   :record_type_6 = 'user_profile'
--   :source_id = 'r1'

-- chunks.delete_for_thread
DELETE FROM "RECORD_CHUNKS"
WHERE thread_id = :thread_id
--   :thread_id = 't1'

-- chunks.clear_vectors
UPDATE "RECORD_CHUNKS"
SET embedding = NULL
WHERE embedding IS NOT NULL

-- ===== store: acme =====
-- chunks.insert
INSERT INTO "ACME_RECORD_CHUNKS" (source_id, source_record_type, source_emb_column, chunk_seq, chunk_text, thread_id, user_id, agent_id, status, expires_at, created_at, embedding)
VALUES (:source_id, :source_record_type, :source_emb_column, :chunk_seq, :chunk_text, :thread_id, :user_id, :agent_id, :status, :expires_at, :created_at, :embedding)
--   :agent_id = None
--   :chunk_seq = 1
--   :chunk_text = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :embedding = array('f', [0.6, 0.8, 0.0, 0.0])
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_emb_column = 'content'
--   :source_id = 'm1'
--   :source_record_type = 'message'
--   :status = 'valid'
--   :thread_id = 't1'
--   :user_id = 'u1'

-- chunks.insert_without_vector
INSERT INTO "ACME_RECORD_CHUNKS" (source_id, source_record_type, source_emb_column, chunk_seq, chunk_text, thread_id, user_id, agent_id, status, expires_at, created_at, embedding)
VALUES (:source_id, :source_record_type, :source_emb_column, :chunk_seq, :chunk_text, :thread_id, :user_id, :agent_id, :status, :expires_at, :created_at, NULL)
--   :agent_id = None
--   :chunk_seq = 1
--   :chunk_text = 'hello'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_emb_column = 'content'
--   :source_id = 'm1'
--   :source_record_type = 'message'
--   :status = 'valid'
--   :thread_id = 't1'
--   :user_id = 'u1'

-- chunks.update
UPDATE "ACME_RECORD_CHUNKS"
SET chunk_text = :chunk_text, user_id = :user_id, agent_id = :agent_id, status = :status, expires_at = :expires_at, created_at = :created_at
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :agent_id = 'a1'
--   :chunk_seq = 1
--   :chunk_text = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_id = 'r1'
--   :source_record_type = 'fact'
--   :status = 'invalid'
--   :user_id = 'u1'

-- chunks.update_drop_vector
UPDATE "ACME_RECORD_CHUNKS"
SET chunk_text = :chunk_text, user_id = :user_id, agent_id = :agent_id, status = :status, expires_at = :expires_at, created_at = :created_at, embedding = NULL
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :agent_id = 'a1'
--   :chunk_seq = 1
--   :chunk_text = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_id = 'r1'
--   :source_record_type = 'fact'
--   :status = 'invalid'
--   :user_id = 'u1'

-- chunks.update_vector
UPDATE "ACME_RECORD_CHUNKS"
SET chunk_text = :chunk_text, user_id = :user_id, agent_id = :agent_id, status = :status, expires_at = :expires_at, created_at = :created_at, embedding = :embedding
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :agent_id = 'a1'
--   :chunk_seq = 1
--   :chunk_text = 'Ann likes tea'
--   :created_at = datetime(2025-03-14T12:00:00)
--   :embedding = array('f', [0.6, 0.8, 0.0, 0.0])
--   :expires_at = datetime(2025-03-21T12:00:00)
--   :source_id = 'r1'
--   :source_record_type = 'fact'
--   :status = 'invalid'
--   :user_id = 'u1'

-- chunks.update_text
UPDATE "ACME_RECORD_CHUNKS"
SET chunk_text = :chunk_text
WHERE source_record_type = :source_record_type AND source_id = :source_id AND chunk_seq = :chunk_seq
--   :chunk_seq = 1
--   :chunk_text = 'Ann: hi\nBob: hello'
--   :source_id = 'm1'
--   :source_record_type = 'message'

-- chunks.delete_message
DELETE FROM "ACME_RECORD_CHUNKS"
WHERE source_record_type = :source_record_type AND source_id = :source_id
--   :source_id = 'm1'
--   :source_record_type = 'message'

-- chunks.delete_record
DELETE FROM "ACME_RECORD_CHUNKS"
WHERE source_id = :source_id AND source_record_type IN (:record_type_0, :record_type_1, :record_type_2, :record_type_3, :record_type_4, :record_type_5, :record_type_6)
--   :record_type_0 = 'agent_profile'
--   :record_type_1 = 'fact'
--   :record_type_2 = 'guideline'
--   :record_type_3 = 'image'
--   :record_type_4 = 'memory'
--   :record_type_5 = 'preference'
--   :record_type_6 = 'user_profile'
--   :source_id = 'r1'

-- chunks.delete_for_thread
DELETE FROM "ACME_RECORD_CHUNKS"
WHERE thread_id = :thread_id
--   :thread_id = 't1'

-- chunks.clear_vectors
UPDATE "ACME_RECORD_CHUNKS"
SET embedding = NULL
WHERE embedding IS NOT NULL

