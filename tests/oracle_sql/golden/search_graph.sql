-- case: everything
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)

-- case: one user
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND b.user_id = :scope_user_id
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)
--   :scope_user_id = 'A'

-- case: user, no agent, a thread
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND b.user_id = :scope_user_id
    AND b.agent_id IS NULL
    AND b.thread_id = :scope_thread_id
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)
--   :scope_thread_id = 't1'
--   :scope_user_id = 'A'

-- case: unscoped only
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND b.user_id IS NULL
    AND b.agent_id IS NULL
    AND b.thread_id IS NULL
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)

-- case: facts and messages
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND b.memory_type IN (:record_type_0)
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)
--   :record_type_0 = 'fact'

-- case: memory types only
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)

-- case: valid only
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)

-- case: metadata
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)

-- case: metadata not translated
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)

-- case: all filters
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0, :frontier_1)
    AND b.memory_type IN (:record_type_0, :record_type_1)
    AND b.user_id = :scope_user_id
    AND b.agent_id = :scope_agent_id
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :frontier_1 = 'r2'
--   :now = datetime(2025-03-14T12:00:00)
--   :record_type_0 = 'guideline'
--   :record_type_1 = 'preference'
--   :scope_agent_id = 'bot'
--   :scope_user_id = 'A'

-- case: acme
-- search.graph_step
SELECT g.from_id, g.link_relation_id, g.link_source_memory_id, g.link_source_memory_type, g.link_target_memory_id, g.link_target_memory_type, g.link_relation_type, g.link_opposite_relation_type, g.link_metadata, g.link_timestamp, g.link_created_at, g.node_record_id, g.node_memory_type, g.node_content, g.node_user_id, g.node_agent_id, g.node_thread_id, g.node_metadata, g.node_status, g.node_invalidation_reason, g.node_invalidated_at, g.node_timestamp, g.node_expires_at, g.node_created_at, g.node_updated_at
  FROM GRAPH_TABLE ("ACME_MEMORY_GRAPH"
  MATCH (a IS memory) -[e IS memory_link]- (b IS memory)
  WHERE a.record_id IN (:frontier_0)
    AND b.user_id = :scope_user_id
    AND (b.expires_at IS NULL OR b.expires_at > :now)
  COLUMNS (
    a.record_id AS from_id,
    e.relation_id AS link_relation_id,
    e.source_memory_id AS link_source_memory_id,
    e.source_memory_type AS link_source_memory_type,
    e.target_memory_id AS link_target_memory_id,
    e.target_memory_type AS link_target_memory_type,
    e.relation_type AS link_relation_type,
    e.opposite_relation_type AS link_opposite_relation_type,
    e.metadata AS link_metadata,
    e.timestamp AS link_timestamp,
    e.created_at AS link_created_at,
    b.record_id AS node_record_id,
    b.memory_type AS node_memory_type,
    b.content AS node_content,
    b.user_id AS node_user_id,
    b.agent_id AS node_agent_id,
    b.thread_id AS node_thread_id,
    b.metadata AS node_metadata,
    b.status AS node_status,
    b.invalidation_reason AS node_invalidation_reason,
    b.invalidated_at AS node_invalidated_at,
    b.timestamp AS node_timestamp,
    b.expires_at AS node_expires_at,
    b.created_at AS node_created_at,
    b.updated_at AS node_updated_at
  )
) g
--   :frontier_0 = 'r1'
--   :now = datetime(2025-03-14T12:00:00)
--   :scope_user_id = 'A'
