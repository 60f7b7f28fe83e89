-- The webhook delivery log tells endpoints apart (issue 39): target is the
-- key of a run's own target among those of the same URL (an A2A push
-- notification config's id; '' for the server's and a run's webhook
-- URLs), so a delivery is (owner, webhook id, URL, target) and the sweep
-- deletes the attempts of one that has ended without touching another of
-- the same event and URL still pending (two push configs of a task on one
-- URL). Rows logged before this have no target, as before.
ALTER TABLE webhook_deliveries ADD COLUMN target TEXT NOT NULL DEFAULT '';

DROP INDEX webhook_deliveries_event_idx;
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (owner_id, webhook_id, url, target);
