-- Webhook delivery log retention (issue 39): final marks a delivery's last
-- attempt (a 2xx answer, or the attempt after which River gives up), so
-- that the background sweep (store.PruneWebhookDeliveries) deletes, across
-- owners, the attempts of deliveries that ended before the retention's
-- horizon and never those of a pending one. Rows logged before this had
-- no mark: a 2xx one is final. pgstore sets baton.sweep for the sweeps
-- only; the sweep reads ids, event ids, URLs and times.
ALTER TABLE webhook_deliveries ADD COLUMN final boolean NOT NULL DEFAULT false;
UPDATE webhook_deliveries SET final = true WHERE status_code BETWEEN 200 AND 299;

CREATE INDEX webhook_deliveries_id_idx ON webhook_deliveries (id);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (owner_id, webhook_id, url);

CREATE POLICY webhook_deliveries_sweep ON webhook_deliveries FOR DELETE
    USING (current_setting('baton.sweep', true) = 'on');
CREATE POLICY webhook_deliveries_sweep_read ON webhook_deliveries FOR SELECT
    USING (current_setting('baton.sweep', true) = 'on');
