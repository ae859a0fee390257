-- case: two ids, radius 1
-- search.message_neighbours
WITH wanted AS (
  SELECT t.record_id, t.thread_id
    FROM "MESSAGE" t
   WHERE t.record_id IN (:id_0, :id_1)
     AND JSON_EXISTS(t.metadata, '$.speaker?(@.type() == "string")') AND TRIM(JSON_VALUE(t.metadata, '$.speaker')) IS NOT NULL
), placed AS (
  SELECT m.record_id, m.thread_id,
         ROW_NUMBER() OVER (PARTITION BY m.thread_id ORDER BY m.order_seq) AS place
    FROM "MESSAGE" m
   WHERE m.thread_id IN (SELECT w.thread_id FROM wanted w)
     AND JSON_EXISTS(m.metadata, '$.speaker?(@.type() == "string")') AND TRIM(JSON_VALUE(m.metadata, '$.speaker')) IS NOT NULL
)
SELECT p.record_id AS wanted_id, n.record_id AS neighbour_id
  FROM placed p
  JOIN wanted w ON w.record_id = p.record_id
  LEFT OUTER JOIN placed n
    ON n.thread_id = p.thread_id AND ABS(n.place - p.place) BETWEEN 1 AND :radius
ORDER BY p.record_id, n.place
--   :id_0 = 'm1'
--   :id_1 = 'm2'
--   :radius = 1

-- case: acme, one id, radius 3
-- search.message_neighbours
WITH wanted AS (
  SELECT t.record_id, t.thread_id
    FROM "ACME_MESSAGE" t
   WHERE t.record_id IN (:id_0)
     AND JSON_EXISTS(t.metadata, '$.speaker?(@.type() == "string")') AND TRIM(JSON_VALUE(t.metadata, '$.speaker')) IS NOT NULL
), placed AS (
  SELECT m.record_id, m.thread_id,
         ROW_NUMBER() OVER (PARTITION BY m.thread_id ORDER BY m.order_seq) AS place
    FROM "ACME_MESSAGE" m
   WHERE m.thread_id IN (SELECT w.thread_id FROM wanted w)
     AND JSON_EXISTS(m.metadata, '$.speaker?(@.type() == "string")') AND TRIM(JSON_VALUE(m.metadata, '$.speaker')) IS NOT NULL
)
SELECT p.record_id AS wanted_id, n.record_id AS neighbour_id
  FROM placed p
  JOIN wanted w ON w.record_id = p.record_id
  LEFT OUTER JOIN placed n
    ON n.thread_id = p.thread_id AND ABS(n.place - p.place) BETWEEN 1 AND :radius
ORDER BY p.record_id, n.place
--   :id_0 = 'm1'
--   :radius = 3
