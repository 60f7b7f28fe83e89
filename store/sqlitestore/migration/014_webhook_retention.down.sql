DROP INDEX webhook_deliveries_event_idx;
DROP INDEX webhook_deliveries_id_idx;
ALTER TABLE webhook_deliveries DROP COLUMN final;
