-- Forks share their source's stored messages instead of copying them
-- (issue 35). A fork reads the messages of fork_of up to position fork_seq
-- (which reads its own source's the same way: a chain), then its own rows,
-- which are numbered after fork_seq: its positions are its source's, so
-- checkpoints that refer to rows by position read the same rows either way.
-- A thread that is no fork has fork_of NULL and fork_seq 0; forks made
-- before this hold copies and stay as they are.
ALTER TABLE threads ADD COLUMN fork_of text, ADD COLUMN fork_seq bigint NOT NULL DEFAULT 0,
    ADD FOREIGN KEY (fork_of, owner_id) REFERENCES threads (id, owner_id);

CREATE INDEX threads_fork_idx ON threads (fork_of) WHERE fork_of IS NOT NULL;

-- Deleting a thread keeps its forks whole: each fork that stays gets copies
-- (new ids, same positions) of the rows it read through the deleted
-- threads of its chain, then reads the first source that stays from the
-- same position on, its parent that source. It runs for each deleted row
-- after the statement (every thread it deletes is gone, every message
-- still there: threads_delete_messages runs after it) and before the
-- foreign keys' checks of the row (triggers fire in name order, and
-- "RI_ConstraintTrigger_…" sorts after "Fork…"), with the deleting role's
-- row-level security, like the DELETE.
CREATE FUNCTION forks_of_deleted_thread() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    f record;
    cur text;
    cur_from bigint;
    nxt text;
    upto bigint;
BEGIN
    FOR f IN SELECT id, owner_id, fork_seq FROM threads WHERE fork_of = OLD.id AND owner_id = OLD.owner_id LOOP
        cur := OLD.id;
        upto := f.fork_seq;
        LOOP
            SELECT d.fork_of, d.fork_seq INTO nxt, cur_from FROM deleted_threads d WHERE d.id = cur AND d.owner_id = f.owner_id;
            EXIT WHEN NOT FOUND;
            INSERT INTO messages (id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata, created_at, updated_at)
                SELECT gen_random_uuid()::text, m.owner_id, f.id, m.seq, m.role, m.agent, m.parts, m.status, m.parent_message_id, m.usage, m.metadata, m.created_at, m.updated_at
                FROM messages m WHERE m.thread_id = cur AND m.owner_id = f.owner_id AND m.seq > cur_from AND m.seq <= upto;
            upto := LEAST(upto, cur_from);
            cur := nxt;
            EXIT WHEN cur IS NULL;
        END LOOP;
        UPDATE threads SET fork_of = cur, parent_id = cur, fork_seq = CASE WHEN cur IS NULL THEN 0 ELSE upto END
            WHERE id = f.id AND owner_id = f.owner_id;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER "Fork_rows_of_deleted_thread" AFTER DELETE ON threads
    REFERENCING OLD TABLE AS deleted_threads
    FOR EACH ROW EXECUTE FUNCTION forks_of_deleted_thread();
