-- Embedded store, schema version 8: images. An image is a record row of type 'image' (its
-- content is the description: search, scope, expiry and metadata filters need nothing new);
-- this table keeps its MIME type and bytes under the record's id, and for an image attached to
-- a message, the message and the image's place among the message's content parts. A row goes
-- with its record (a delete, a purge, or the cascade of its thread).
CREATE TABLE images (
    record_id   TEXT PRIMARY KEY REFERENCES records (id) ON DELETE CASCADE,
    mime_type   TEXT NOT NULL,
    data        BLOB NOT NULL,
    message_id  TEXT,
    position    INTEGER
);
CREATE INDEX images_message ON images (message_id, position) WHERE message_id IS NOT NULL;
