-- Oracle store, schema version 5: graph checkpoints (ARCHITECTURE.md D41), beside the memory in
-- the same schema and transactions.
--
-- Syntax checked against Oracle's documentation (SQL Language Reference: CREATE TABLE with
-- out-of-line constraints, BLOB and JSON columns, CREATE INDEX), not against a running
-- database; see the adapter's README.
--
-- How this file is applied (schema manager): the three tables and the index are named objects,
-- created when missing (a fresh store after 0004; a store at version 4 on its first open with
-- CREATE_IF_NECESSARY, which then records version 5).
--
-- Columns:
-- * checkpoint_ns is stored with a leading '/' ('/' for the root graph's ""): Oracle stores ''
--   as NULL, and a primary key column cannot be NULL. The adapter adds and strips it; a
--   namespace holds at most 511 characters here.
-- * values are opaque (the serializer's type tag and bytes): BLOBs, nullable because Oracle
--   stores empty bytes as NULL (read back as empty). type_tag and task_path are nullable for the
--   same reason ('' is NULL; read back as "").
-- * metadata and channel_versions are JSON objects (type JSON, as the memory's metadata): the
--   adapter filters listings by metadata in Python, with the domain's JSON equality.
-- * created_at is TIMESTAMP(6) WITH TIME ZONE, bound as UTC like every time of the store.
-- * No foreign keys: a checkpoint's rows are deleted by thread, run or id, explicitly.
--
-- Indexes: each primary key leads with (thread_id, checkpoint_ns), which serves the newest
-- checkpoint of a thread and namespace, a checkpoint's writes and blobs, and the deletes by
-- thread; CHECKPOINT_RUN_I serves the deletes by run.

CREATE TABLE {CHECKPOINT} (
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
    CONSTRAINT {CHECKPOINT_PK} PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
)
/
CREATE INDEX {CHECKPOINT_RUN_I} ON {CHECKPOINT} (run_id)
/
CREATE TABLE {CHECKPOINT_BLOB} (
    thread_id      VARCHAR2(128 CHAR) NOT NULL,
    checkpoint_ns  VARCHAR2(512 CHAR) NOT NULL,
    channel        VARCHAR2(256 CHAR) NOT NULL,
    channel_version  VARCHAR2(128 CHAR) NOT NULL,
    type_tag       VARCHAR2(64 CHAR),
    blob_data      BLOB,
    CONSTRAINT {CHECKPOINT_BLOB_PK} PRIMARY KEY (thread_id, checkpoint_ns, channel, channel_version)
)
/
CREATE TABLE {CHECKPOINT_WRITE} (
    thread_id      VARCHAR2(128 CHAR) NOT NULL,
    checkpoint_ns  VARCHAR2(512 CHAR) NOT NULL,
    checkpoint_id  VARCHAR2(128 CHAR) NOT NULL,
    task_id        VARCHAR2(128 CHAR) NOT NULL,
    idx            NUMBER(10) NOT NULL,
    task_path      VARCHAR2(1024 CHAR),
    channel        VARCHAR2(256 CHAR) NOT NULL,
    type_tag       VARCHAR2(64 CHAR),
    write_data     BLOB,
    CONSTRAINT {CHECKPOINT_WRITE_PK} PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
)
