DROP INDEX webhook_deliveries_event_idx;
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (owner_id, webhook_id, url);
ALTER TABLE webhook_deliveries DROP COLUMN target;
