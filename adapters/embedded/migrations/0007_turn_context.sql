-- Embedded store, schema version 7: a named turn's keyword text follows the turn before it
-- (palimpsest.domain.model.keyword_text), so an edit or a delete of a message changes the
-- keyword text of the message after it: the change log names that message too, and the caches
-- re-read it with the others. An update of the vector alone does not.
CREATE TRIGGER IF NOT EXISTS messages_next_au AFTER UPDATE OF content, metadata ON messages BEGIN
    INSERT INTO changes (kind, ref)
    SELECT 'message', id FROM messages
     WHERE thread_id = new.thread_id AND seq > new.seq ORDER BY seq LIMIT 1;
END;
CREATE TRIGGER IF NOT EXISTS messages_next_ad AFTER DELETE ON messages BEGIN
    INSERT INTO changes (kind, ref)
    SELECT 'message', id FROM messages
     WHERE thread_id = old.thread_id AND seq > old.seq ORDER BY seq LIMIT 1;
END;
