-- Fewer indexes per write (issue 18): every index an insert touches is
-- another b-tree insert, WAL record and page to write.
--
-- messages loses UNIQUE (id, owner_id): it existed only for the composite
-- foreign key of message_drafts, which now references messages (id). That a
-- draft has its message's owner is the store's invariant: UpsertDraft
-- writes a draft only after finding the message among the owner's, and a
-- message's owner never changes.
ALTER TABLE message_drafts DROP CONSTRAINT message_drafts_message_id_owner_id_fkey;
ALTER TABLE message_drafts ADD CONSTRAINT message_drafts_message_id_fkey
    FOREIGN KEY (message_id) REFERENCES messages (id) ON DELETE CASCADE;
ALTER TABLE messages DROP CONSTRAINT messages_id_owner_id_key;

-- checkpoints' primary key was its identity column seq, whose index no
-- query uses: a checkpoint is found by id, by (owner_id, run_id, step) or
-- as the latest of a thread by (thread_id, seq). id, unique already, is the
-- primary key now (its index built anew: a constraint's index cannot
-- change hands); seq still numbers the writes (an identity column: values
-- from its sequence only), without an index of its own.
ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_pkey;
ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_id_key;
ALTER TABLE checkpoints ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (id);

-- run_leases loses its index on expires_at: the table holds a row per run
-- executing now (written when a run starts, deleted when it hands over or
-- ends), and finding the expired ones (every AdoptEvery, 15 s by default)
-- reads it whole, as renewing a process's leases (holder, run_id: no index)
-- already does every LeaseTTL/3. Each run paid an index insert, and each
-- renewal, which changes expires_at, a new index entry (no HOT update).
DROP INDEX run_leases_expiry_idx;
