-- Embedded store, schema version 6: the FTS5 keyword tables are dropped.
--
-- Keyword search ranks with an in-memory BM25 index (keyword_index.PostingsKeywordIndex),
-- rebuilt from records/messages at open and kept in step by the change log, like the vectors.
-- Nothing has read records_fts / messages_fts since, but every insert still wrote them
-- (measured: add_messages about a fifth faster without). The sync triggers go first: once the
-- tables are gone, a trigger still naming them would make every delete and update fail.
DROP TRIGGER IF EXISTS records_fts_ad;
DROP TRIGGER IF EXISTS records_fts_au;
DROP TRIGGER IF EXISTS messages_fts_ad;
DROP TRIGGER IF EXISTS messages_fts_au;
DROP TABLE IF EXISTS records_fts;
DROP TABLE IF EXISTS messages_fts;
