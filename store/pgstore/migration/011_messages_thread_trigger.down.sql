DROP TRIGGER threads_delete_messages ON threads;
DROP FUNCTION messages_of_deleted_threads();
ALTER TABLE messages ADD CONSTRAINT messages_thread_id_owner_id_fkey
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE;
