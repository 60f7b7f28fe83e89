DROP TABLE push_configs;
