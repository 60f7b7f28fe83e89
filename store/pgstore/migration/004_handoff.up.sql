-- Thread -> thread handoff summaries and agent memory documents. Their
-- threads and owners need not exist here: summaries may be mirrored from
-- another store.
CREATE TABLE thread_summaries (
    id              text PRIMARY KEY,
    owner_id        text NOT NULL,
    handoff_id      text NOT NULL,
    agent_id        text NOT NULL DEFAULT '',
    thread_id       text NOT NULL DEFAULT '',
    child_thread_id text NOT NULL DEFAULT '',
    summary         jsonb NOT NULL, -- {title, body, tldr}
    markdown        text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    UNIQUE (owner_id, handoff_id)
);

ALTER TABLE thread_summaries ENABLE ROW LEVEL SECURITY;
ALTER TABLE thread_summaries FORCE ROW LEVEL SECURITY;
CREATE POLICY thread_summaries_owner ON thread_summaries
    USING (owner_id = current_setting('baton.owner', true));

CREATE TABLE memory_documents (
    owner_id   text NOT NULL,
    agent_id   text NOT NULL,
    content    text NOT NULL,
    version    bigint NOT NULL, -- compare-and-swap
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (owner_id, agent_id)
);

ALTER TABLE memory_documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_documents FORCE ROW LEVEL SECURITY;
CREATE POLICY memory_documents_owner ON memory_documents
    USING (owner_id = current_setting('baton.owner', true));
