-- The registry of the stores of one schema (decision D17): one row per store, keyed by the
-- store's memory_store_id (or __DEFAULT__ for the unprefixed store). Shared by every store, so
-- it is never prefixed and never dropped by a store. store_config is a JSON object holding the
-- store's embedding_dimension (null until the first vector fixes it) and vector_index kind.
--
-- Syntax checked against Oracle's SQL Language Reference (Oracle AI Database 23ai/26ai), not
-- against a running database.

CREATE TABLE {REGISTRY} (
    memory_store_name  VARCHAR2(128) NOT NULL,
    lifecycle_state    VARCHAR2(30) DEFAULT 'CREATING' NOT NULL,
    schema_version     NUMBER NOT NULL,
    store_config       JSON NOT NULL,
    created_at         TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    updated_at         TIMESTAMP(6) WITH TIME ZONE DEFAULT SYSTIMESTAMP NOT NULL,
    CONSTRAINT {REGISTRY_PK} PRIMARY KEY (memory_store_name),
    CONSTRAINT {REGISTRY_STATE_CK} CHECK (lifecycle_state IN ('CREATING', 'CREATED', 'DROPPING'))
)
