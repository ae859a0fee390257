-- case: everything
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- case: one user
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.user_id = :scope_user_id
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)
--   :scope_user_id = 'A'

-- case: user, no agent, a thread
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.user_id = :scope_user_id
   AND c.agent_id IS NULL
   AND c.thread_id = :scope_thread_id
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)
--   :scope_thread_id = 't1'
--   :scope_user_id = 'A'

-- case: unscoped only
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.user_id IS NULL
   AND c.agent_id IS NULL
   AND c.thread_id IS NULL
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- case: facts and messages
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.source_record_type IN (:record_type_0, :record_type_1)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)
--   :record_type_0 = 'fact'
--   :record_type_1 = 'message'

-- case: messages only
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.source_record_type IN (:record_type_0)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)
--   :record_type_0 = 'message'

-- case: memory types only
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.source_record_type IN (:record_type_0, :record_type_1, :record_type_2, :record_type_3)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)
--   :record_type_0 = 'fact'
--   :record_type_1 = 'guideline'
--   :record_type_2 = 'memory'
--   :record_type_3 = 'preference'

-- case: valid only
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND (c.status IS NULL OR c.status <> 'invalid')
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- case: metadata
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND (c.expires_at IS NULL OR c.expires_at > :now)
   AND ((c.source_record_type = 'message' AND EXISTS (SELECT 1 FROM "MESSAGE" mm WHERE mm.record_id = c.source_id AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :msg_meta_0 AS "v") AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :msg_meta_1 AS "v") AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :msg_meta_2 AS "v")))
       OR (c.source_record_type <> 'message' AND EXISTS (SELECT 1 FROM "MEMORY" mr WHERE mr.record_id = c.source_id AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mem_meta_0 AS "v") AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.stringOnly() == $v)' PASSING :mem_meta_1 AS "v") AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :mem_meta_2 AS "v"))))
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :mem_meta_0 = 'tea'
--   :mem_meta_1 = 'green'
--   :mem_meta_2 = 3
--   :msg_meta_0 = 'tea'
--   :msg_meta_1 = 'green'
--   :msg_meta_2 = 3
--   :now = datetime(2025-03-14T12:00:00)

-- case: metadata not translated
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)

-- case: metadata on messages
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.source_record_type IN (:record_type_0)
   AND (c.expires_at IS NULL OR c.expires_at > :now)
   AND ((c.source_record_type = 'message' AND EXISTS (SELECT 1 FROM "MESSAGE" mm WHERE mm.record_id = c.source_id AND JSON_EXISTS(mm.metadata, '$.*[*]?(@.numberOnly() == $v)' PASSING :msg_meta_0 AS "v"))))
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :msg_meta_0 = 1
--   :now = datetime(2025-03-14T12:00:00)
--   :record_type_0 = 'message'

-- case: all filters
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.user_id = :scope_user_id
   AND c.agent_id = :scope_agent_id
   AND c.source_record_type IN (:record_type_0, :record_type_1)
   AND (c.status IS NULL OR c.status <> 'invalid')
   AND (c.expires_at IS NULL OR c.expires_at > :now)
   AND ((c.source_record_type <> 'message' AND EXISTS (SELECT 1 FROM "MEMORY" mr WHERE mr.record_id = c.source_id AND JSON_EXISTS(mr.metadata, '$.*[*]?(@.booleanOnly() == true)'))))
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{green} ACCUM {tea} ACCUM {lemon}'
--   :limit = 20
--   :now = datetime(2025-03-14T12:00:00)
--   :record_type_0 = 'guideline'
--   :record_type_1 = 'preference'
--   :scope_agent_id = 'bot'
--   :scope_user_id = 'A'

-- case: acme
-- search.keyword_candidates
SELECT c.source_record_type, c.source_id, SCORE(1) AS score
  FROM "ACME_RECORD_CHUNKS" c
 WHERE CONTAINS(c.chunk_text, :keyword_query, 1) > 0
   AND c.user_id = :scope_user_id
   AND (c.expires_at IS NULL OR c.expires_at > :now)
ORDER BY score DESC, c.source_record_type, NLSSORT(c.source_id, 'NLS_SORT=BINARY')
FETCH FIRST :limit ROWS ONLY
--   :keyword_query = '{near} ACCUM {tea} ACCUM {2}'
--   :limit = 5
--   :now = datetime(2025-03-14T12:00:00)
--   :scope_user_id = 'A'
