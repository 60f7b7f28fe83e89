DROP TABLE call_records;
