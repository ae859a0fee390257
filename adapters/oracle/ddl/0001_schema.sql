-- Oracle store, schema version 1: the objects of ONE store (decision D17).
--
-- Syntax checked against Oracle's documentation for Oracle AI Database 23ai/26ai (SQL Language
-- Reference; AI Vector Search User's Guide; Text Application Developer's Guide and Text
-- Reference; Property Graph Developer's Guide; Database Reference for the dictionary views),
-- not against a running database.
--
-- Conventions:
-- * {NAME} placeholders are the store's prefixed, double-quoted object names (StoreNames);
--   every constraint and index is named. Statements are separated by a line holding only "/"
--   and carry no trailing semicolon; full-line comments are dropped when the file is loaded.
-- * Ids are VARCHAR2(128 CHAR) (the domain allows 128 characters, not bytes: with the default
--   byte semantics a 128-character id of multi-byte characters would be refused, ORA-12899), as
--   is a message's role (30 characters); times are TIMESTAMP(6) WITH TIME ZONE, bound as UTC by the adapter;
--   JSON columns are of type JSON (text bound by the adapter is parsed on insert).
-- * Text columns (content, chunk_text) are nullable CLOBs: Oracle stores '' as NULL, and the
--   codec reads NULL back as "".
-- * RECORD_CHUNKS.embedding is VECTOR(*, FLOAT32): a flexible dimension, enforced by the adapter
--   from the registry before any write. Oracle allows a vector index on a flexible-dimension
--   column as long as every stored vector has the same dimension (AI Vector Search User's Guide,
--   "Guidelines for Using Vector Indexes"; ORA-51902 otherwise; only sharded tables refuse it,
--   ORA-05168). The vector index is therefore NOT in this file: the schema manager creates it
--   once the store's dimension is known.
-- * The unique constraint of MESSAGE (thread_id, order_seq) doubles as the (thread, seq) index,
--   and the one of THREAD_SUMMARY (thread_id, revision) as its thread index: Oracle names the
--   index of a unique constraint after the constraint and refuses a second index on the same
--   column list (ORA-01408).

CREATE TABLE {THREAD} (
    record_id       VARCHAR2(128 CHAR) NOT NULL,
    user_id         VARCHAR2(128 CHAR),
    agent_id        VARCHAR2(128 CHAR),
    metadata        JSON,
    runtime_config  JSON,
    runtime_state   JSON,
    created_at      TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    updated_at      TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT {THREAD_PK} PRIMARY KEY (record_id)
)
/
CREATE INDEX {THREAD_CREATED_I} ON {THREAD} (created_at, record_id)
/
CREATE INDEX {THREAD_USER_I} ON {THREAD} (user_id, created_at)
/
CREATE TABLE {MESSAGE} (
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
    CONSTRAINT {MESSAGE_PK} PRIMARY KEY (record_id),
    CONSTRAINT {MESSAGE_THREAD_FK} FOREIGN KEY (thread_id) REFERENCES {THREAD} (record_id) ON DELETE CASCADE,
    CONSTRAINT {MESSAGE_THREAD_ORDER_UQ} UNIQUE (thread_id, order_seq)
)
/
CREATE INDEX {MESSAGE_EXPIRES_I} ON {MESSAGE} (expires_at)
/
CREATE TABLE {MEMORY} (
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
    CONSTRAINT {MEMORY_PK} PRIMARY KEY (record_id),
    CONSTRAINT {MEMORY_THREAD_FK} FOREIGN KEY (thread_id) REFERENCES {THREAD} (record_id) ON DELETE CASCADE,
    CONSTRAINT {MEMORY_TYPE_CK} CHECK (memory_type IN ('memory', 'fact', 'guideline', 'preference')),
    CONSTRAINT {MEMORY_STATUS_CK} CHECK (status IN ('valid', 'invalid'))
)
/
CREATE INDEX {MEMORY_CREATED_I} ON {MEMORY} (created_at, record_id)
/
CREATE INDEX {MEMORY_USER_I} ON {MEMORY} (user_id, created_at)
/
CREATE INDEX {MEMORY_THREAD_I} ON {MEMORY} (thread_id)
/
CREATE INDEX {MEMORY_EXPIRES_I} ON {MEMORY} (expires_at)
/
CREATE TABLE {MEMORY_LINK} (
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
    CONSTRAINT {MEMORY_LINK_PK} PRIMARY KEY (relation_id),
    CONSTRAINT {MEMORY_LINK_UQ} UNIQUE (source_memory_id, target_memory_id, relation_type),
    CONSTRAINT {MEMORY_LINK_SOURCE_FK} FOREIGN KEY (source_memory_id) REFERENCES {MEMORY} (record_id) ON DELETE CASCADE,
    CONSTRAINT {MEMORY_LINK_TARGET_FK} FOREIGN KEY (target_memory_id) REFERENCES {MEMORY} (record_id) ON DELETE CASCADE,
    CONSTRAINT {MEMORY_LINK_NOT_SELF_CK} CHECK (source_memory_id <> target_memory_id)
)
/
CREATE INDEX {MEMORY_LINK_SOURCE_I} ON {MEMORY_LINK} (source_memory_id, created_at)
/
CREATE INDEX {MEMORY_LINK_TARGET_I} ON {MEMORY_LINK} (target_memory_id, created_at)
/
CREATE TABLE {THREAD_SUMMARY} (
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
    CONSTRAINT {THREAD_SUMMARY_PK} PRIMARY KEY (record_id),
    CONSTRAINT {THREAD_SUMMARY_THREAD_FK} FOREIGN KEY (thread_id) REFERENCES {THREAD} (record_id) ON DELETE CASCADE,
    CONSTRAINT {THREAD_SUMMARY_REVISION_UQ} UNIQUE (thread_id, revision),
    CONSTRAINT {THREAD_SUMMARY_STATUS_CK} CHECK (status IN ('valid', 'invalid'))
)
/
CREATE TABLE {EXTRACTION_JOB} (
    job_id         VARCHAR2(128 CHAR) NOT NULL,
    thread_id      VARCHAR2(128 CHAR) NOT NULL,
    first_seq      NUMBER(19) NOT NULL,
    last_seq       NUMBER(19) NOT NULL,
    attempts       NUMBER(10) DEFAULT 0 NOT NULL,
    claimed_by     VARCHAR2(256),
    claimed_until  TIMESTAMP(6) WITH TIME ZONE,
    created_at     TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT {EXTRACTION_JOB_PK} PRIMARY KEY (job_id),
    CONSTRAINT {EXTRACTION_JOB_THREAD_FK} FOREIGN KEY (thread_id) REFERENCES {THREAD} (record_id) ON DELETE CASCADE
)
/
CREATE INDEX {EXTRACTION_JOB_THREAD_I} ON {EXTRACTION_JOB} (thread_id)
/
CREATE TABLE {STORE_SETTING} (
    setting_key    VARCHAR2(128 CHAR) NOT NULL,
    setting_value  JSON,
    CONSTRAINT {STORE_SETTING_PK} PRIMARY KEY (setting_key)
)
/
-- The one search table for messages and memory records: one chunk per record (chunk_seq 1),
-- with copies of the record's scope, status and expiry kept in step by the repositories.
-- No foreign key: a source is a message or a memory; deletes remove chunks explicitly.
CREATE TABLE {RECORD_CHUNKS} (
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
    CONSTRAINT {RECORD_CHUNKS_PK} PRIMARY KEY (chunk_id),
    CONSTRAINT {RECORD_CHUNKS_SOURCE_UQ} UNIQUE (source_record_type, source_id, chunk_seq),
    CONSTRAINT {RECORD_CHUNKS_STATUS_CK} CHECK (status IN ('valid', 'invalid'))
)
/
CREATE INDEX {RECORD_CHUNKS_SCOPE_I} ON {RECORD_CHUNKS} (user_id, agent_id, source_record_type)
/
CREATE INDEX {RECORD_CHUNKS_THREAD_I} ON {RECORD_CHUNKS} (thread_id)
/
-- Keyword search: an Oracle Text CONTEXT index, synchronised at commit, with the supplied empty
-- stoplist (every word is indexed, as in the embedded store). The default lexer is used.
CREATE INDEX {RECORD_CHUNKS_CHUNK_TEXT_TXT_I} ON {RECORD_CHUNKS} (chunk_text)
    INDEXTYPE IS CTXSYS.CONTEXT
    PARAMETERS ('SYNC (ON COMMIT) STOPLIST CTXSYS.EMPTY_STOPLIST')
/
-- Graph hops: memory records are vertices (label memory), links are edges (label memory_link)
-- from source_memory_id to target_memory_id. Every column is a property, so GRAPH_TABLE
-- queries can read record_id, memory_type, user_id, agent_id, thread_id, status, expires_at,
-- created_at and metadata of a vertex and every column of an edge. The properties both
-- labels share (metadata, timestamp, created_at) have the same types in both tables: a SQL
-- property graph refuses one property name with mixed types unless told otherwise.
CREATE PROPERTY GRAPH {MEMORY_GRAPH}
    VERTEX TABLES (
        {MEMORY} KEY (record_id)
            LABEL memory
            PROPERTIES ARE ALL COLUMNS
    )
    EDGE TABLES (
        {MEMORY_LINK} KEY (relation_id)
            SOURCE KEY (source_memory_id) REFERENCES {MEMORY} (record_id)
            DESTINATION KEY (target_memory_id) REFERENCES {MEMORY} (record_id)
            LABEL memory_link
            PROPERTIES ARE ALL COLUMNS
    )
