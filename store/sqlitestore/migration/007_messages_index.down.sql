CREATE INDEX messages_thread_created_idx ON messages (thread_id, created_at, seq);
