-- create_registry
CREATE TABLE "PALIMPSEST_STORES" (
    memory_store_name  VARCHAR2(128) NOT NULL,
    lifecycle_state    VARCHAR2(30) DEFAULT 'CREATING' NOT NULL,
    schema_version     NUMBER NOT NULL,
    store_config       JSON NOT NULL,
    created_at         TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    updated_at         TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT "PALIMPSEST_STORES_PK" PRIMARY KEY (memory_store_name),
    CONSTRAINT "PALIMPSEST_STORES_STATE_CK" CHECK (lifecycle_state IN ('CREATING', 'CREATED', 'DROPPING'))
)

-- v1_create_thread
CREATE TABLE "THREAD" (
    record_id       VARCHAR2(128 CHAR) NOT NULL,
    user_id         VARCHAR2(128 CHAR),
    agent_id        VARCHAR2(128 CHAR),
    metadata        JSON,
    runtime_config  JSON,
    runtime_state   JSON,
    created_at      TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    updated_at      TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT "THREAD_PK" PRIMARY KEY (record_id)
)

-- v1_create_thread_created_i
CREATE INDEX "THREAD_CREATED_I" ON "THREAD" (created_at, record_id)

-- v1_create_thread_user_i
CREATE INDEX "THREAD_USER_I" ON "THREAD" (user_id, created_at)

-- v1_create_message
CREATE TABLE "MESSAGE" (
    record_id     VARCHAR2(128 CHAR) NOT NULL,
    thread_id     VARCHAR2(128 CHAR) NOT NULL,
    order_seq     NUMBER(19) NOT NULL,
    message_role  VARCHAR2(30 CHAR) NOT NULL,
    content       CLOB,
    timestamp     TIMESTAMP(6) WITH TIME ZONE,
    metadata      JSON,
    user_id       VARCHAR2(128 CHAR),
    agent_id      VARCHAR2(128 CHAR),
    created_at    TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    expires_at    TIMESTAMP(6) WITH TIME ZONE,
    CONSTRAINT "MESSAGE_PK" PRIMARY KEY (record_id),
    CONSTRAINT "MESSAGE_THREAD_FK" FOREIGN KEY (thread_id) REFERENCES "THREAD" (record_id) ON DELETE CASCADE,
    CONSTRAINT "MESSAGE_THREAD_ORDER_UQ" UNIQUE (thread_id, order_seq)
)

-- v1_create_message_expires_i
CREATE INDEX "MESSAGE_EXPIRES_I" ON "MESSAGE" (expires_at)

-- v1_create_memory
CREATE TABLE "MEMORY" (
    record_id            VARCHAR2(128 CHAR) NOT NULL,
    memory_type          VARCHAR2(30) NOT NULL,
    content              CLOB,
    user_id              VARCHAR2(128 CHAR),
    agent_id             VARCHAR2(128 CHAR),
    thread_id            VARCHAR2(128 CHAR),
    metadata             JSON,
    status               VARCHAR2(30) DEFAULT 'valid' NOT NULL,
    invalidation_reason  VARCHAR2(4000),
    invalidated_at       TIMESTAMP(6) WITH TIME ZONE,
    timestamp            TIMESTAMP(6) WITH TIME ZONE,
    expires_at           TIMESTAMP(6) WITH TIME ZONE,
    created_at           TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    updated_at           TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT "MEMORY_PK" PRIMARY KEY (record_id),
    CONSTRAINT "MEMORY_THREAD_FK" FOREIGN KEY (thread_id) REFERENCES "THREAD" (record_id) ON DELETE CASCADE,
    CONSTRAINT "MEMORY_TYPE_CK" CHECK (memory_type IN ('memory', 'fact', 'guideline', 'preference')),
    CONSTRAINT "MEMORY_STATUS_CK" CHECK (status IN ('valid', 'invalid'))
)

-- v1_create_memory_created_i
CREATE INDEX "MEMORY_CREATED_I" ON "MEMORY" (created_at, record_id)

-- v1_create_memory_user_i
CREATE INDEX "MEMORY_USER_I" ON "MEMORY" (user_id, created_at)

-- v1_create_memory_thread_i
CREATE INDEX "MEMORY_THREAD_I" ON "MEMORY" (thread_id)

-- v1_create_memory_expires_i
CREATE INDEX "MEMORY_EXPIRES_I" ON "MEMORY" (expires_at)

-- v1_create_memory_link
CREATE TABLE "MEMORY_LINK" (
    relation_id             VARCHAR2(128 CHAR) NOT NULL,
    source_memory_id        VARCHAR2(128 CHAR) NOT NULL,
    source_memory_type      VARCHAR2(30) NOT NULL,
    source_memory_user_id   VARCHAR2(128 CHAR),
    target_memory_id        VARCHAR2(128 CHAR) NOT NULL,
    target_memory_type      VARCHAR2(30) NOT NULL,
    target_memory_user_id   VARCHAR2(128 CHAR),
    relation_type           VARCHAR2(128 CHAR) NOT NULL,
    opposite_relation_type  VARCHAR2(128 CHAR) NOT NULL,
    metadata                JSON,
    timestamp               TIMESTAMP(6) WITH TIME ZONE,
    created_at              TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT "MEMORY_LINK_PK" PRIMARY KEY (relation_id),
    CONSTRAINT "MEMORY_LINK_UQ" UNIQUE (source_memory_id, target_memory_id, relation_type),
    CONSTRAINT "MEMORY_LINK_SOURCE_FK" FOREIGN KEY (source_memory_id) REFERENCES "MEMORY" (record_id) ON DELETE CASCADE,
    CONSTRAINT "MEMORY_LINK_TARGET_FK" FOREIGN KEY (target_memory_id) REFERENCES "MEMORY" (record_id) ON DELETE CASCADE,
    CONSTRAINT "MEMORY_LINK_NOT_SELF_CK" CHECK (source_memory_id <> target_memory_id)
)

-- v1_create_memory_link_source_i
CREATE INDEX "MEMORY_LINK_SOURCE_I" ON "MEMORY_LINK" (source_memory_id, created_at)

-- v1_create_memory_link_target_i
CREATE INDEX "MEMORY_LINK_TARGET_I" ON "MEMORY_LINK" (target_memory_id, created_at)

-- v1_create_thread_summary
CREATE TABLE "THREAD_SUMMARY" (
    record_id            VARCHAR2(128 CHAR) NOT NULL,
    thread_id            VARCHAR2(128 CHAR) NOT NULL,
    revision             NUMBER(19) NOT NULL,
    content              CLOB,
    topics               JSON,
    covered_through_seq  NUMBER(19) DEFAULT 0 NOT NULL,
    status               VARCHAR2(30) DEFAULT 'valid' NOT NULL,
    user_id              VARCHAR2(128 CHAR),
    agent_id             VARCHAR2(128 CHAR),
    metadata             JSON,
    created_at           TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT "THREAD_SUMMARY_PK" PRIMARY KEY (record_id),
    CONSTRAINT "THREAD_SUMMARY_THREAD_FK" FOREIGN KEY (thread_id) REFERENCES "THREAD" (record_id) ON DELETE CASCADE,
    CONSTRAINT "THREAD_SUMMARY_REVISION_UQ" UNIQUE (thread_id, revision),
    CONSTRAINT "THREAD_SUMMARY_STATUS_CK" CHECK (status IN ('valid', 'invalid'))
)

-- v1_create_extraction_job
CREATE TABLE "EXTRACTION_JOB" (
    job_id         VARCHAR2(128 CHAR) NOT NULL,
    thread_id      VARCHAR2(128 CHAR) NOT NULL,
    first_seq      NUMBER(19) NOT NULL,
    last_seq       NUMBER(19) NOT NULL,
    attempts       NUMBER(10) DEFAULT 0 NOT NULL,
    claimed_by     VARCHAR2(256),
    claimed_until  TIMESTAMP(6) WITH TIME ZONE,
    created_at     TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT "EXTRACTION_JOB_PK" PRIMARY KEY (job_id),
    CONSTRAINT "EXTRACTION_JOB_THREAD_FK" FOREIGN KEY (thread_id) REFERENCES "THREAD" (record_id) ON DELETE CASCADE
)

-- v1_create_extraction_job_thread_i
CREATE INDEX "EXTRACTION_JOB_THREAD_I" ON "EXTRACTION_JOB" (thread_id)

-- v1_create_store_setting
CREATE TABLE "STORE_SETTING" (
    setting_key    VARCHAR2(128 CHAR) NOT NULL,
    setting_value  JSON,
    CONSTRAINT "STORE_SETTING_PK" PRIMARY KEY (setting_key)
)

-- v1_create_record_chunks
CREATE TABLE "RECORD_CHUNKS" (
    chunk_id            NUMBER GENERATED ALWAYS AS IDENTITY,
    source_id           VARCHAR2(128 CHAR) NOT NULL,
    source_record_type  VARCHAR2(30) NOT NULL,
    source_emb_column   VARCHAR2(30) DEFAULT 'content' NOT NULL,
    chunk_seq           NUMBER(10) DEFAULT 1 NOT NULL,
    chunk_text          CLOB,
    thread_id           VARCHAR2(128 CHAR),
    user_id             VARCHAR2(128 CHAR),
    agent_id            VARCHAR2(128 CHAR),
    status              VARCHAR2(30) DEFAULT 'valid' NOT NULL,
    expires_at          TIMESTAMP(6) WITH TIME ZONE,
    created_at          TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    embedding           VECTOR(*, FLOAT32),
    CONSTRAINT "RECORD_CHUNKS_PK" PRIMARY KEY (chunk_id),
    CONSTRAINT "RECORD_CHUNKS_SOURCE_UQ" UNIQUE (source_record_type, source_id, chunk_seq),
    CONSTRAINT "RECORD_CHUNKS_STATUS_CK" CHECK (status IN ('valid', 'invalid'))
)

-- v1_create_record_chunks_scope_i
CREATE INDEX "RECORD_CHUNKS_SCOPE_I" ON "RECORD_CHUNKS" (user_id, agent_id, source_record_type)

-- v1_create_record_chunks_thread_i
CREATE INDEX "RECORD_CHUNKS_THREAD_I" ON "RECORD_CHUNKS" (thread_id)

-- v1_create_record_chunks_chunk_text_txt_i
CREATE INDEX "RECORD_CHUNKS_CHUNK_TEXT_TXT_I" ON "RECORD_CHUNKS" (chunk_text)
    INDEXTYPE IS CTXSYS.CONTEXT
    PARAMETERS ('SYNC (ON COMMIT) STOPLIST CTXSYS.EMPTY_STOPLIST')

-- v1_create_memory_graph
CREATE PROPERTY GRAPH "MEMORY_GRAPH"
    VERTEX TABLES (
        "MEMORY" KEY (record_id)
            LABEL memory
            PROPERTIES ARE ALL COLUMNS
    )
    EDGE TABLES (
        "MEMORY_LINK" KEY (relation_id)
            SOURCE KEY (source_memory_id) REFERENCES "MEMORY" (record_id)
            DESTINATION KEY (target_memory_id) REFERENCES "MEMORY" (record_id)
            LABEL memory_link
            PROPERTIES ARE ALL COLUMNS
    )

-- v2_add_extraction_job_columns
ALTER TABLE "EXTRACTION_JOB" ADD (
    failed_at       TIMESTAMP(6) WITH TIME ZONE,
    failure_reason  CLOB
)

-- v2_create_extraction_job_failed_i
CREATE INDEX "EXTRACTION_JOB_FAILED_I" ON "EXTRACTION_JOB" (failed_at)

-- v4_create_image
CREATE TABLE "IMAGE" (
    record_id    VARCHAR2(128 CHAR) NOT NULL,
    mime_type    VARCHAR2(30) NOT NULL,
    image_bytes  BLOB NOT NULL,
    message_id   VARCHAR2(128 CHAR),
    part_seq     NUMBER(10),
    CONSTRAINT "IMAGE_PK" PRIMARY KEY (record_id),
    CONSTRAINT "IMAGE_MEMORY_FK" FOREIGN KEY (record_id) REFERENCES "MEMORY" (record_id) ON DELETE CASCADE,
    CONSTRAINT "IMAGE_MIME_TYPE_CK" CHECK (mime_type IN ('image/png', 'image/jpeg', 'image/webp'))
)

-- v4_create_image_message_i
CREATE INDEX "IMAGE_MESSAGE_I" ON "IMAGE" (message_id, part_seq)

-- v5_create_checkpoint
CREATE TABLE "CHECKPOINT" (
    thread_id             VARCHAR2(128 CHAR) NOT NULL,
    checkpoint_ns         VARCHAR2(512 CHAR) NOT NULL,
    checkpoint_id         VARCHAR2(128 CHAR) NOT NULL,
    parent_checkpoint_id  VARCHAR2(128 CHAR),
    run_id                VARCHAR2(128 CHAR),
    type_tag              VARCHAR2(64 CHAR),
    checkpoint_data       BLOB,
    metadata              JSON NOT NULL,
    channel_versions      JSON NOT NULL,
    created_at            TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    CONSTRAINT "CHECKPOINT_PK" PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
)

-- v5_create_checkpoint_run_i
CREATE INDEX "CHECKPOINT_RUN_I" ON "CHECKPOINT" (run_id)

-- v5_create_checkpoint_blob
CREATE TABLE "CHECKPOINT_BLOB" (
    thread_id      VARCHAR2(128 CHAR) NOT NULL,
    checkpoint_ns  VARCHAR2(512 CHAR) NOT NULL,
    channel        VARCHAR2(256 CHAR) NOT NULL,
    channel_version  VARCHAR2(128 CHAR) NOT NULL,
    type_tag       VARCHAR2(64 CHAR),
    blob_data      BLOB,
    CONSTRAINT "CHECKPOINT_BLOB_PK" PRIMARY KEY (thread_id, checkpoint_ns, channel, channel_version)
)

-- v5_create_checkpoint_write
CREATE TABLE "CHECKPOINT_WRITE" (
    thread_id      VARCHAR2(128 CHAR) NOT NULL,
    checkpoint_ns  VARCHAR2(512 CHAR) NOT NULL,
    checkpoint_id  VARCHAR2(128 CHAR) NOT NULL,
    task_id        VARCHAR2(128 CHAR) NOT NULL,
    idx            NUMBER(10) NOT NULL,
    task_path      VARCHAR2(1024 CHAR),
    channel        VARCHAR2(256 CHAR) NOT NULL,
    type_tag       VARCHAR2(64 CHAR),
    write_data     BLOB,
    CONSTRAINT "CHECKPOINT_WRITE_PK" PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
)

-- v3_1
ALTER TABLE "MEMORY" DROP CONSTRAINT "MEMORY_TYPE_CK"

-- v3_2
ALTER TABLE "MEMORY" ADD CONSTRAINT "MEMORY_TYPE_CK"
    CHECK (memory_type IN ('memory', 'fact', 'guideline', 'preference', 'user_profile', 'agent_profile'))

-- v4_3
ALTER TABLE "MEMORY" DROP CONSTRAINT "MEMORY_TYPE_CK"

-- v4_4
ALTER TABLE "MEMORY" ADD CONSTRAINT "MEMORY_TYPE_CK"
    CHECK (memory_type IN ('memory', 'fact', 'guideline', 'preference', 'user_profile', 'agent_profile', 'image'))

-- create_vector_index_hnsw
CREATE VECTOR INDEX "RECORD_CHUNKS_EMBEDDING_VEC_I" ON "RECORD_CHUNKS" (embedding)
    ORGANIZATION INMEMORY NEIGHBOR GRAPH
    DISTANCE COSINE
    WITH TARGET ACCURACY 90

-- create_vector_index_ivf
CREATE VECTOR INDEX "RECORD_CHUNKS_EMBEDDING_VEC_I" ON "RECORD_CHUNKS" (embedding)
    ORGANIZATION NEIGHBOR PARTITIONS
    DISTANCE COSINE
    WITH TARGET ACCURACY 90

-- drop_vector_index
DROP INDEX "RECORD_CHUNKS_EMBEDDING_VEC_I"

-- drop_memory_graph
DROP PROPERTY GRAPH "MEMORY_GRAPH"

-- drop_checkpoint_write
DROP TABLE "CHECKPOINT_WRITE" CASCADE CONSTRAINTS PURGE

-- drop_checkpoint_blob
DROP TABLE "CHECKPOINT_BLOB" CASCADE CONSTRAINTS PURGE

-- drop_checkpoint
DROP TABLE "CHECKPOINT" CASCADE CONSTRAINTS PURGE

-- drop_image
DROP TABLE "IMAGE" CASCADE CONSTRAINTS PURGE

-- drop_record_chunks
DROP TABLE "RECORD_CHUNKS" CASCADE CONSTRAINTS PURGE

-- drop_store_setting
DROP TABLE "STORE_SETTING" CASCADE CONSTRAINTS PURGE

-- drop_extraction_job
DROP TABLE "EXTRACTION_JOB" CASCADE CONSTRAINTS PURGE

-- drop_thread_summary
DROP TABLE "THREAD_SUMMARY" CASCADE CONSTRAINTS PURGE

-- drop_memory_link
DROP TABLE "MEMORY_LINK" CASCADE CONSTRAINTS PURGE

-- drop_memory
DROP TABLE "MEMORY" CASCADE CONSTRAINTS PURGE

-- drop_message
DROP TABLE "MESSAGE" CASCADE CONSTRAINTS PURGE

-- drop_thread
DROP TABLE "THREAD" CASCADE CONSTRAINTS PURGE
