-- Forks share their source's stored messages instead of copying them
-- (issue 35). A fork reads the messages of fork_of up to position fork_seq
-- (which reads its own source's the same way: a chain), then its own rows,
-- which are numbered after fork_seq: its positions are its source's, so
-- checkpoints that refer to rows by position read the same rows either way.
-- A thread that is no fork has fork_of NULL and fork_seq 0; forks made
-- before this hold copies and stay as they are.
ALTER TABLE threads ADD COLUMN fork_of TEXT REFERENCES threads (id);
ALTER TABLE threads ADD COLUMN fork_seq INTEGER NOT NULL DEFAULT 0;

CREATE INDEX threads_fork_idx ON threads (fork_of) WHERE fork_of IS NOT NULL;

-- Deleting a thread keeps its forks whole: before its row goes (and its
-- messages with it), each fork gets copies (new ids, same positions) of
-- the thread's own rows it reads, then reads the thread's own source from
-- the same position on, its parent the thread's source. A thread deleted
-- with its forks in one statement copies into forks that go too; their
-- copies go with them.
CREATE TRIGGER threads_delete_forks BEFORE DELETE ON threads
WHEN EXISTS (SELECT 1 FROM threads WHERE fork_of = OLD.id)
BEGIN
    INSERT INTO messages (id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata, created_at, updated_at)
        SELECT lower(hex(randomblob(16))), m.owner_id, f.id, m.seq, m.role, m.agent, m.parts, m.status, m.parent_message_id, m.usage, m.metadata, m.created_at, m.updated_at
        FROM threads AS f JOIN messages AS m ON m.thread_id = OLD.id AND m.owner_id = f.owner_id AND m.seq > OLD.fork_seq AND m.seq <= f.fork_seq
        WHERE f.fork_of = OLD.id AND f.owner_id = OLD.owner_id;
    UPDATE threads SET fork_of = OLD.fork_of, parent_id = OLD.fork_of,
        fork_seq = CASE WHEN OLD.fork_of IS NULL THEN 0 WHEN OLD.fork_seq < fork_seq THEN OLD.fork_seq ELSE fork_seq END
        WHERE fork_of = OLD.id AND owner_id = OLD.owner_id;
END;
