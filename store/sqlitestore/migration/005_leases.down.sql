DROP TABLE run_leases;
