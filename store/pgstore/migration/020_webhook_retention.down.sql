DROP POLICY webhook_deliveries_sweep_read ON webhook_deliveries;
DROP POLICY webhook_deliveries_sweep ON webhook_deliveries;
DROP INDEX webhook_deliveries_event_idx;
DROP INDEX webhook_deliveries_id_idx;
ALTER TABLE webhook_deliveries DROP COLUMN final;
