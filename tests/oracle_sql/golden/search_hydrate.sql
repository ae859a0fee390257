-- case: memory records
-- search.memory_records_by_ids
SELECT t.record_id, t.memory_type, t.content, t.user_id, t.agent_id, t.thread_id, t.metadata, t.status, t.invalidation_reason, t.invalidated_at, t.timestamp, t.expires_at, t.created_at, t.updated_at
  FROM "MEMORY" t
 WHERE t.record_id IN (:id_0, :id_1)
--   :id_0 = 'r1'
--   :id_1 = 'r2'

-- case: messages
-- search.messages_by_ids
SELECT t.record_id, t.thread_id, t.order_seq, t.message_role, t.content, t.timestamp, t.metadata, t.user_id, t.agent_id, t.created_at, t.expires_at
  FROM "MESSAGE" t
 WHERE t.record_id IN (:id_0)
--   :id_0 = 'm1'

-- case: acme memory records
-- search.memory_records_by_ids
SELECT t.record_id, t.memory_type, t.content, t.user_id, t.agent_id, t.thread_id, t.metadata, t.status, t.invalidation_reason, t.invalidated_at, t.timestamp, t.expires_at, t.created_at, t.updated_at
  FROM "ACME_MEMORY" t
 WHERE t.record_id IN (:id_0)
--   :id_0 = 'r1'

-- case: acme messages
-- search.messages_by_ids
SELECT t.record_id, t.thread_id, t.order_seq, t.message_role, t.content, t.timestamp, t.metadata, t.user_id, t.agent_id, t.created_at, t.expires_at
  FROM "ACME_MESSAGE" t
 WHERE t.record_id IN (:id_0, :id_1)
--   :id_0 = 'm1'
--   :id_1 = 'm2'
