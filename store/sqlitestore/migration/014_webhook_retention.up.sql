-- Webhook delivery log retention (issue 39): final (0 or 1) marks a
-- delivery's last attempt (a 2xx answer, or the attempt after which River
-- gives up), so that the background sweep (store.PruneWebhookDeliveries)
-- deletes the attempts of deliveries that ended before the retention's
-- horizon and never those of a pending one. Rows logged before this had
-- no mark: a 2xx one is final.
ALTER TABLE webhook_deliveries ADD COLUMN final INTEGER NOT NULL DEFAULT 0;
UPDATE webhook_deliveries SET final = 1 WHERE status_code BETWEEN 200 AND 299;

CREATE INDEX webhook_deliveries_id_idx ON webhook_deliveries (id);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (owner_id, webhook_id, url);
