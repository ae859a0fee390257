-- Oracle store, schema version 3: user and agent profiles are records.
--
-- A profile (record type user_profile or agent_profile) is a row of MEMORY like a memory, so that
-- it is chunked, embedded, keyword-indexed and searched by the same statements (ARCHITECTURE.md
-- D37). Version 1's check on memory_type named the four memory-like types only: it is replaced
-- by one that also admits the two profile types. No other object changes (RECORD_CHUNKS'
-- source_record_type is free text; MEMORY_LINK's endpoint types are the domain's to check).
--
-- Syntax checked against the ALTER TABLE grammar (constraint_clauses: ADD out_of_line_constraint,
-- drop_constraint_clause), not against a running database; a check's condition cannot be
-- modified in place, hence drop then add. See the adapter's README for what was checked where.
--
-- How this file is applied (schema manager): neither statement creates a nameable object, so
-- both run once, in order, when a store below version 3 is upgraded (CREATE_IF_NECESSARY) and
-- when a store is created (after 0001 made the old check), before version 3 is recorded in the
-- registry. The new check keeps the constraint's name. ADD CONSTRAINT validates the existing
-- rows, which all hold one of the four old types.

ALTER TABLE {MEMORY} DROP CONSTRAINT {MEMORY_TYPE_CK}
/
ALTER TABLE {MEMORY} ADD CONSTRAINT {MEMORY_TYPE_CK}
    CHECK (memory_type IN ('memory', 'fact', 'guideline', 'preference', 'user_profile', 'agent_profile'))
