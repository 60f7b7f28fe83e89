-- Threads, their messages and the drafts of messages being streamed.
CREATE TABLE threads (
    id           text PRIMARY KEY,
    owner_id     text NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    parent_id    text,
    name         text NOT NULL DEFAULT '',
    network      text NOT NULL DEFAULT '',
    active_agent text NOT NULL DEFAULT '',
    metadata     jsonb NOT NULL DEFAULT '{}', -- namespace -> value
    version      bigint NOT NULL DEFAULT 1,
    next_seq     bigint NOT NULL DEFAULT 0,   -- last message seq handed out
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (id, owner_id),
    FOREIGN KEY (parent_id, owner_id) REFERENCES threads (id, owner_id)
);

CREATE INDEX threads_owner_created_idx ON threads (owner_id, created_at, id);
CREATE INDEX threads_parent_idx ON threads (parent_id) WHERE parent_id IS NOT NULL;

ALTER TABLE threads ENABLE ROW LEVEL SECURITY;
ALTER TABLE threads FORCE ROW LEVEL SECURITY;
CREATE POLICY threads_owner ON threads
    USING (owner_id = current_setting('baton.owner', true));

CREATE TABLE messages (
    id                text PRIMARY KEY,
    owner_id          text NOT NULL,
    thread_id         text NOT NULL,
    seq               bigint NOT NULL,
    role              text NOT NULL,
    agent             text NOT NULL DEFAULT '',
    -- json, not jsonb: parts are kept byte for byte (tool-call arguments as
    -- the model wrote them), as on SQLite.
    parts             json NOT NULL DEFAULT '[]', -- array of message.Part
    status            text NOT NULL DEFAULT 'completed'
                      CHECK (status IN ('queued', 'streaming', 'completed', 'error')),
    parent_message_id text,
    usage             json,                        -- message.Usage
    metadata          json NOT NULL DEFAULT '{}',  -- e.g. handoff_event_id
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    UNIQUE (id, owner_id),
    UNIQUE (thread_id, seq),
    FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id) ON DELETE CASCADE
);

CREATE INDEX messages_thread_created_idx ON messages (thread_id, created_at, seq);

ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages FORCE ROW LEVEL SECURITY;
CREATE POLICY messages_owner ON messages
    USING (owner_id = current_setting('baton.owner', true));

CREATE TABLE message_drafts (
    message_id text PRIMARY KEY,
    owner_id   text NOT NULL,
    text       text NOT NULL DEFAULT '',
    version    bigint NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL,
    FOREIGN KEY (message_id, owner_id) REFERENCES messages (id, owner_id) ON DELETE CASCADE
);

ALTER TABLE message_drafts ENABLE ROW LEVEL SECURITY;
ALTER TABLE message_drafts FORCE ROW LEVEL SECURITY;
CREATE POLICY message_drafts_owner ON message_drafts
    USING (owner_id = current_setting('baton.owner', true));
