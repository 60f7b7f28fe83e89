CREATE INDEX run_leases_expiry_idx ON run_leases (expires_at);

ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_pkey;
ALTER TABLE checkpoints ADD CONSTRAINT checkpoints_id_key UNIQUE (id);
ALTER TABLE checkpoints ADD CONSTRAINT checkpoints_pkey PRIMARY KEY (seq);

ALTER TABLE messages ADD CONSTRAINT messages_id_owner_id_key UNIQUE (id, owner_id);
ALTER TABLE message_drafts DROP CONSTRAINT message_drafts_message_id_fkey;
ALTER TABLE message_drafts ADD CONSTRAINT message_drafts_message_id_owner_id_fkey
    FOREIGN KEY (message_id, owner_id) REFERENCES messages (id, owner_id) ON DELETE CASCADE;
