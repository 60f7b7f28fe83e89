-- messages lose their foreign key to threads; its ON DELETE CASCADE stays,
-- as a trigger (issue 18).
--
-- Every message is inserted by the statement that reserves its sequence
-- number on its thread's row (UPDATE threads ... WHERE id AND owner_id, in
-- the same WITH, or the same transaction before it): a thread that is
-- missing or another owner's reserves nothing and gets no message, and the
-- reservation locks the row, so a DELETE of the thread waits for the
-- message's transaction and then sees the message. The key's check repeated
-- that per message row, through the executor and SPI and whichever index of
-- threads the planner picked (on a new database the listing index, reading
-- every thread of the owner): measured paired (BenchmarkSchemaPair), about 6%
-- of a continuation's CPU.
--
-- Deleting threads still deletes their messages (and through messages their
-- drafts): after each DELETE on threads, by hand or through owners' cascade,
-- with the deleting role's row-level security, as the DELETE itself had.
-- The function's search_path is the migration's, so that a session with
-- another search_path deletes the messages of this schema.
ALTER TABLE messages DROP CONSTRAINT messages_thread_id_owner_id_fkey;

CREATE FUNCTION messages_of_deleted_threads() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM messages m USING deleted_threads d WHERE m.thread_id = d.id AND m.owner_id = d.owner_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER threads_delete_messages AFTER DELETE ON threads
    REFERENCING OLD TABLE AS deleted_threads
    FOR EACH STATEMENT EXECUTE FUNCTION messages_of_deleted_threads();
