-- Embedded store, schema version 9: graph checkpoints (ARCHITECTURE.md D41), beside the memory in
-- the same file and transactions. Values are opaque bytes with their serializer's type tag; the
-- store reads ids, the parent, the run id, the JSON metadata (listing filters) and the channel
-- versions. No foreign keys: a checkpoint's rows are deleted by thread, run or id, explicitly.
CREATE TABLE checkpoints (
    thread_id             TEXT NOT NULL,
    checkpoint_ns         TEXT NOT NULL,
    checkpoint_id         TEXT NOT NULL,
    parent_checkpoint_id  TEXT,
    run_id                TEXT,
    type_tag              TEXT NOT NULL,
    data                  BLOB NOT NULL,
    metadata              TEXT NOT NULL,
    channel_versions      TEXT NOT NULL,
    created_at            TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
-- The primary key serves the newest of a thread and namespace and the deletes by thread.
CREATE INDEX checkpoints_run ON checkpoints (run_id) WHERE run_id IS NOT NULL;
CREATE TABLE checkpoint_blobs (
    thread_id      TEXT NOT NULL,
    checkpoint_ns  TEXT NOT NULL,
    channel        TEXT NOT NULL,
    version        TEXT NOT NULL,
    type_tag       TEXT NOT NULL,
    data           BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);
CREATE TABLE checkpoint_writes (
    thread_id      TEXT NOT NULL,
    checkpoint_ns  TEXT NOT NULL,
    checkpoint_id  TEXT NOT NULL,
    task_id        TEXT NOT NULL,
    idx            INTEGER NOT NULL,
    task_path      TEXT NOT NULL,
    channel        TEXT NOT NULL,
    type_tag       TEXT NOT NULL,
    data           BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
