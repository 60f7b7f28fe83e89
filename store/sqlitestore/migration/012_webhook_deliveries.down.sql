DROP TABLE webhook_deliveries;
