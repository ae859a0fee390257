-- case: exact, everything
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])

-- case: exact, one user
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.user_id = :scope_user_id
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :scope_user_id = 'A'

-- case: exact, user, no agent, a thread
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.user_id = :scope_user_id
   AND c.agent_id IS NULL
   AND c.thread_id = :scope_thread_id
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :scope_thread_id = 't1'
--   :scope_user_id = 'A'

-- case: exact, unscoped only
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.user_id IS NULL
   AND c.agent_id IS NULL
   AND c.thread_id IS NULL
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])

-- case: exact, facts and messages
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.source_record_type IN (:record_type_0, :record_type_1)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :record_type_0 = 'fact'
--   :record_type_1 = 'message'

-- case: exact, messages only
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.source_record_type IN (:record_type_0)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :record_type_0 = 'message'

-- case: exact, memory types only
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.source_record_type IN (:record_type_0, :record_type_1, :record_type_2, :record_type_3)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :record_type_0 = 'fact'
--   :record_type_1 = 'guideline'
--   :record_type_2 = 'memory'
--   :record_type_3 = 'preference'

-- case: exact, valid only
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND (c.status IS NULL OR c.status <> 'invalid')
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])

-- case: exact, metadata
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND (c.expires_at IS NULL OR c.expires_at > :now)
   AND ((c.source_record_type = 'message' AND EXISTS (SELECT 1 FROM "MESSAGE" mm WHERE mm.record_id = c.source_id AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :msg_meta_0 AS "v") AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :msg_meta_1 AS "v") AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :msg_meta_2 AS "v")))
       OR (c.source_record_type <> 'message' AND EXISTS (SELECT 1 FROM "MEMORY" mr WHERE mr.record_id = c.source_id AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mem_meta_0 AS "v") AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mem_meta_1 AS "v") AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :mem_meta_2 AS "v"))))
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :mem_meta_0 = 'tea'
--   :mem_meta_1 = 'green'
--   :mem_meta_2 = 3
--   :msg_meta_0 = 'tea'
--   :msg_meta_1 = 'green'
--   :msg_meta_2 = 3
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])

-- case: exact, metadata not translated
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])

-- case: exact, metadata on messages
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.source_record_type IN (:record_type_0)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
   AND ((c.source_record_type = 'message' AND EXISTS (SELECT 1 FROM "MESSAGE" mm WHERE mm.record_id = c.source_id AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :msg_meta_0 AS "v"))))
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :msg_meta_0 = 1
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :record_type_0 = 'message'

-- case: exact, all filters
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.user_id = :scope_user_id
   AND c.agent_id = :scope_agent_id
   AND c.source_record_type IN (:record_type_0, :record_type_1)
   AND (c.status IS NULL OR c.status <> 'invalid')
   AND (c.expires_at IS NULL OR c.expires_at > :now)
   AND ((c.source_record_type <> 'message' AND EXISTS (SELECT 1 FROM "MEMORY" mr WHERE mr.record_id = c.source_id AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.booleanOnly() == true)'))))
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :record_type_0 = 'guideline'
--   :record_type_1 = 'preference'
--   :scope_agent_id = 'bot'
--   :scope_user_id = 'A'

-- case: approximate
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance
FETCH APPROX FIRST :limit ROWS ONLY
--   :limit = 10
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])

-- case: approximate, acme, one user
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "ACME_RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.user_id = :scope_user_id
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY distance
FETCH APPROX FIRST :limit ROWS ONLY
--   :limit = 7
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :scope_user_id = 'A'

-- case: exact, acme, all filters
-- search.vector_candidates
SELECT c.source_record_type, c.source_id, VECTOR_DISTANCE(c.embedding, :query_vector, COSINE) AS distance
  FROM "ACME_RECORD_CHUNKS" c
 WHERE c.embedding IS NOT NULL
   AND c.user_id = :scope_user_id
   AND c.agent_id = :scope_agent_id
   AND c.source_record_type IN (:record_type_0, :record_type_1)
   AND (c.status IS NULL OR c.status <> 'invalid')
   AND (c.expires_at IS NULL OR c.expires_at > :now)
   AND ((c.source_record_type <> 'message' AND EXISTS (SELECT 1 FROM "ACME_MEMORY" mr WHERE mr.record_id = c.source_id AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.booleanOnly() == true)'))))
ORDER BY distance, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :limit = 3
--   :now = datetime(2025-03-14T12:00:00)
--   :query_vector = array('f', [1.0, 0.0, 0.0, 0.0])
--   :record_type_0 = 'guideline'
--   :record_type_1 = 'preference'
--   :scope_agent_id = 'bot'
--   :scope_user_id = 'A'
