-- schema_inventory
SELECT 'TABLE' AS object_kind, table_name AS object_name FROM user_tables
WHERE table_name IN (:n0, :n1, :n2, :n3, :n4, :n5, :n6, :n7, :n8, :n9, :n10, :n11)
UNION ALL
SELECT 'INDEX' AS object_kind, index_name AS object_name FROM user_indexes
WHERE index_name IN (:n12, :n13, :n14, :n15, :n16, :n17, :n18, :n19, :n20, :n21, :n22, :n23, :n24, :n25, :n26, :n27, :n28)
UNION ALL
SELECT 'PROPERTY GRAPH' AS object_kind, graph_name AS object_name FROM user_property_graphs
WHERE graph_name IN (:n29)
UNION ALL
SELECT 'COLUMN' AS object_kind, table_name || '.' || column_name AS object_name FROM user_tab_columns
WHERE (table_name = :n30 AND column_name IN (:n31, :n32))
--   :n0 = 'ACME_THREAD'
--   :n1 = 'ACME_MESSAGE'
--   :n10 = 'ACME_CHECKPOINT_BLOB'
--   :n11 = 'ACME_CHECKPOINT_WRITE'
--   :n12 = 'ACME_THREAD_CREATED_I'
--   :n13 = 'ACME_THREAD_USER_I'
--   :n14 = 'ACME_MESSAGE_EXPIRES_I'
--   :n15 = 'ACME_MEMORY_CREATED_I'
--   :n16 = 'ACME_MEMORY_USER_I'
--   :n17 = 'ACME_MEMORY_THREAD_I'
--   :n18 = 'ACME_MEMORY_EXPIRES_I'
--   :n19 = 'ACME_MEMORY_LINK_SOURCE_I'
--   :n2 = 'ACME_MEMORY'
--   :n20 = 'ACME_MEMORY_LINK_TARGET_I'
--   :n21 = 'ACME_EXTRACTION_JOB_THREAD_I'
--   :n22 = 'ACME_RECORD_CHUNKS_SCOPE_I'
--   :n23 = 'ACME_RECORD_CHUNKS_THREAD_I'
--   :n24 = 'ACME_RECORD_CHUNKS_CHUNK_TEXT_TXT_I'
--   :n25 = 'ACME_EXTRACTION_JOB_FAILED_I'
--   :n26 = 'ACME_IMAGE_MESSAGE_I'
--   :n27 = 'ACME_CHECKPOINT_RUN_I'
--   :n28 = 'ACME_RECORD_CHUNKS_EMBEDDING_VEC_I'
--   :n29 = 'ACME_MEMORY_GRAPH'
--   :n3 = 'ACME_MEMORY_LINK'
--   :n30 = 'ACME_EXTRACTION_JOB'
--   :n31 = 'FAILED_AT'
--   :n32 = 'FAILURE_REASON'
--   :n4 = 'ACME_THREAD_SUMMARY'
--   :n5 = 'ACME_EXTRACTION_JOB'
--   :n6 = 'ACME_STORE_SETTING'
--   :n7 = 'ACME_RECORD_CHUNKS'
--   :n8 = 'ACME_IMAGE'
--   :n9 = 'ACME_CHECKPOINT'

-- registry_exists
SELECT table_name FROM user_tables WHERE table_name = :name
--   :name = 'PALIMPSEST_STORES'

-- vector_index_exists
SELECT index_type FROM user_indexes WHERE index_name = :name
--   :name = 'ACME_RECORD_CHUNKS_EMBEDDING_VEC_I'

-- registry_select
SELECT store_config, schema_version, lifecycle_state
FROM "PALIMPSEST_STORES"
WHERE memory_store_name = :store_name
--   :store_name = 'ACME'

-- registry_select_for_update
SELECT store_config, schema_version, lifecycle_state
FROM "PALIMPSEST_STORES"
WHERE memory_store_name = :store_name
FOR UPDATE
--   :store_name = 'ACME'

-- registry_set_dimension
UPDATE "PALIMPSEST_STORES"
SET store_config = JSON_TRANSFORM(store_config, SET '$.embedding_dimension' = :dimension),
    updated_at = SYSTIMESTAMP
WHERE memory_store_name = :store_name
--   :dimension = 384
--   :store_name = 'ACME'

-- registry_set_dimension
UPDATE "PALIMPSEST_STORES"
SET store_config = JSON_TRANSFORM(store_config, SET '$.embedding_dimension' = :dimension),
    updated_at = SYSTIMESTAMP
WHERE memory_store_name = :store_name
--   :dimension = None
--   :store_name = 'ACME'

-- registry_register
MERGE INTO "PALIMPSEST_STORES" r
USING (SELECT :store_name AS memory_store_name FROM dual) s
ON (r.memory_store_name = s.memory_store_name)
WHEN NOT MATCHED THEN INSERT
    (memory_store_name, lifecycle_state, schema_version, store_config, created_at, updated_at)
    VALUES (s.memory_store_name, :lifecycle_state, :schema_version, :store_config, SYSTIMESTAMP, SYSTIMESTAMP)
--   :lifecycle_state = 'CREATING'
--   :schema_version = 5
--   :store_config = '{"embedding_dimension":384,"vector_index":"hnsw"}'
--   :store_name = 'ACME'

-- registry_update
UPDATE "PALIMPSEST_STORES"
SET lifecycle_state = :lifecycle_state, schema_version = :schema_version,
    store_config = :store_config, updated_at = SYSTIMESTAMP
WHERE memory_store_name = :store_name
--   :lifecycle_state = 'CREATED'
--   :schema_version = 1
--   :store_config = '{"embedding_dimension":384,"vector_index":"hnsw"}'
--   :store_name = 'ACME'

-- registry_set_state
UPDATE "PALIMPSEST_STORES"
SET lifecycle_state = :lifecycle_state, updated_at = SYSTIMESTAMP
WHERE memory_store_name = :store_name
--   :lifecycle_state = 'DROPPING'
--   :store_name = 'ACME'

-- registry_delete
DELETE FROM "PALIMPSEST_STORES" WHERE memory_store_name = :store_name
--   :store_name = 'ACME'
