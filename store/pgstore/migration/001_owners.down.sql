DROP TABLE api_keys;
DROP TABLE owners;
