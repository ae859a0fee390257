-- Oracle store, schema version 4: images.
--
-- An image is a MEMORY row of memory_type 'image' whose content is the image's description (so
-- its chunk is searched, scoped, expired and filtered like any record's); IMAGE keeps its MIME
-- type and bytes under the same record_id, and for an image attached to a message, the message
-- and the image's place among the message's content parts. The foreign key deletes an IMAGE row
-- with its MEMORY row (a delete, a purge, or the cascade of its thread).
--
-- Syntax checked against Oracle's documentation (SQL Language Reference: CREATE TABLE with
-- out-of-line constraints and a BLOB column, CREATE INDEX, ALTER TABLE drop_constraint_clause
-- and add_table_constraint), not against a running database; see the adapter's README.
--
-- How this file is applied (schema manager): IMAGE and its index are named objects, created when
-- missing; the two ALTER TABLE statements create nothing nameable, so they run once, after them,
-- when a store is created or upgraded to version 4: they replace MEMORY's type check by one that
-- also admits 'image' (a check constraint cannot be altered in place; the name is kept).
--
-- Column types:
-- * image_bytes is a BLOB (images up to the absolute limit of 32 MiB; a RAW holds 2000 bytes,
--   or 32767 with MAX_STRING_SIZE = EXTENDED);
-- * mime_type is checked against the three formats the domain stores;
-- * part_seq is the image's position among its message's content parts (NULL for a standalone
--   image, as message_id is).

CREATE TABLE {IMAGE} (
    record_id    VARCHAR2(128 CHAR) NOT NULL,
    mime_type    VARCHAR2(30) NOT NULL,
    image_bytes  BLOB NOT NULL,
    message_id   VARCHAR2(128 CHAR),
    part_seq     NUMBER(10),
    CONSTRAINT {IMAGE_PK} PRIMARY KEY (record_id),
    CONSTRAINT {IMAGE_MEMORY_FK} FOREIGN KEY (record_id) REFERENCES {MEMORY} (record_id) ON DELETE CASCADE,
    CONSTRAINT {IMAGE_MIME_TYPE_CK} CHECK (mime_type IN ('image/png', 'image/jpeg', 'image/webp'))
)
/
CREATE INDEX {IMAGE_MESSAGE_I} ON {IMAGE} (message_id, part_seq)
/
ALTER TABLE {MEMORY} DROP CONSTRAINT {MEMORY_TYPE_CK}
/
ALTER TABLE {MEMORY} ADD CONSTRAINT {MEMORY_TYPE_CK}
    CHECK (memory_type IN ('memory', 'fact', 'guideline', 'preference', 'user_profile', 'agent_profile', 'image'))
