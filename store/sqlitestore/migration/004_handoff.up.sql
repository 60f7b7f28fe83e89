-- Thread -> thread handoff summaries and agent memory documents. Their
-- threads and owners need not exist here: summaries may be mirrored from
-- another store.
CREATE TABLE thread_summaries (
    id              TEXT PRIMARY KEY,
    owner_id        TEXT NOT NULL,
    handoff_id      TEXT NOT NULL,
    agent_id        TEXT NOT NULL DEFAULT '',
    thread_id       TEXT NOT NULL DEFAULT '',
    child_thread_id TEXT NOT NULL DEFAULT '',
    summary         TEXT NOT NULL,  -- JSON {title, body, tldr}
    markdown        TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (owner_id, handoff_id)
) STRICT;

CREATE TABLE memory_documents (
    owner_id   TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    content    TEXT NOT NULL,
    version    INTEGER NOT NULL,  -- compare-and-swap
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (owner_id, agent_id)
) STRICT;
