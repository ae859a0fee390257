-- ===== store: default =====
-- images.insert
INSERT INTO "IMAGE" (record_id, mime_type, image_bytes, message_id, part_seq)
VALUES (:record_id, :mime_type, :image_bytes, :message_id, :part_seq)
--   :image_bytes = bytes(3)
--   :message_id = None
--   :mime_type = 'image/png'
--   :part_seq = None
--   :record_id = 'i1'

-- images.insert
INSERT INTO "IMAGE" (record_id, mime_type, image_bytes, message_id, part_seq)
VALUES (:record_id, :mime_type, :image_bytes, :message_id, :part_seq)
--   :image_bytes = bytes(3)
--   :message_id = 'm1'
--   :mime_type = 'image/jpeg'
--   :part_seq = 1
--   :record_id = 'i2'

-- images.replace
UPDATE "IMAGE" i
SET i.mime_type = :mime_type, i.image_bytes = :image_bytes
WHERE i.record_id = :record_id
--   :image_bytes = bytes(1)
--   :mime_type = 'image/webp'
--   :record_id = 'i1'

-- images.get_many
SELECT i.record_id, i.mime_type, i.image_bytes, i.message_id, i.part_seq
FROM "IMAGE" i
WHERE i.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["i1","i2"]'

-- images.get_many_headers
SELECT i.record_id, i.mime_type, NULL, i.message_id, i.part_seq
FROM "IMAGE" i
WHERE i.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["i1"]'

-- images.of_messages
SELECT i.record_id, i.mime_type, NULL, i.message_id, i.part_seq
FROM "IMAGE" i
WHERE i.message_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
ORDER BY i.message_id, i.part_seq
--   :ids = '["m1","m2"]'

-- ===== store: acme =====
-- images.insert
INSERT INTO "ACME_IMAGE" (record_id, mime_type, image_bytes, message_id, part_seq)
VALUES (:record_id, :mime_type, :image_bytes, :message_id, :part_seq)
--   :image_bytes = bytes(3)
--   :message_id = None
--   :mime_type = 'image/png'
--   :part_seq = None
--   :record_id = 'i1'

-- images.insert
INSERT INTO "ACME_IMAGE" (record_id, mime_type, image_bytes, message_id, part_seq)
VALUES (:record_id, :mime_type, :image_bytes, :message_id, :part_seq)
--   :image_bytes = bytes(3)
--   :message_id = 'm1'
--   :mime_type = 'image/jpeg'
--   :part_seq = 1
--   :record_id = 'i2'

-- images.replace
UPDATE "ACME_IMAGE" i
SET i.mime_type = :mime_type, i.image_bytes = :image_bytes
WHERE i.record_id = :record_id
--   :image_bytes = bytes(1)
--   :mime_type = 'image/webp'
--   :record_id = 'i1'

-- images.get_many
SELECT i.record_id, i.mime_type, i.image_bytes, i.message_id, i.part_seq
FROM "ACME_IMAGE" i
WHERE i.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["i1","i2"]'

-- images.get_many_headers
SELECT i.record_id, i.mime_type, NULL, i.message_id, i.part_seq
FROM "ACME_IMAGE" i
WHERE i.record_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
--   :ids = '["i1"]'

-- images.of_messages
SELECT i.record_id, i.mime_type, NULL, i.message_id, i.part_seq
FROM "ACME_IMAGE" i
WHERE i.message_id IN (SELECT ids.id FROM JSON_TABLE(:ids, '$[*]' COLUMNS (id VARCHAR2(512) PATH '$')) ids)
ORDER BY i.message_id, i.part_seq
--   :ids = '["m1","m2"]'

