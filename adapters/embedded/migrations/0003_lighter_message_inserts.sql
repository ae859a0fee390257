-- Embedded store, schema version 3: cheaper message inserts (add_messages is the hottest write).
--
-- * Messages are read by thread (thread_id, seq) or through the in-memory vector index and the
--   FTS join; nothing looks them up by user or agent alone, so those two indexes only cost
--   every insert two B-tree writes.
-- * The change-log row of a new message is written by the repository, one statement per batch,
--   instead of a row trigger (measured: the trigger alone cost a third of a batch insert).
--   Update and delete triggers stay, so cascaded deletes are still logged.
DROP INDEX IF EXISTS messages_user;
DROP INDEX IF EXISTS messages_agent;
DROP TRIGGER IF EXISTS messages_changes_ai;
