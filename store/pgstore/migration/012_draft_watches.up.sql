-- Who listens for draft events (issue 18). A process whose draft broker
-- (package draft/pgbroker) has subscribers to a thread's or a message's
-- drafts keeps a row here per subscription, and a publisher sends its
-- NOTIFY only when a row names the event's thread or message: nobody
-- subscribed, no notification (each one is a transaction of its own,
-- PostgreSQL's notify lock and a wake-up of every listening session of the
-- database).
--
-- No race: a subscriber commits its row before it reads the current state,
-- and a publisher looks for rows in a statement after its change committed,
-- so a publisher that finds no row committed before the subscriber read.
-- Rows hold ids and times, nothing of a conversation; only the broker, in
-- the connecting role, reads and writes them.
CREATE TABLE draft_watches (
    id         text PRIMARY KEY,     -- the subscription
    key        text NOT NULL,        -- 't:' and a thread id, or 'm:' and a message id
    owner_id   text NOT NULL,
    holder     text NOT NULL,        -- the broker: renews its rows while it runs
    expires_at timestamptz NOT NULL  -- rows not renewed by then are deleted
);

CREATE INDEX draft_watches_key_idx ON draft_watches (key, owner_id);
