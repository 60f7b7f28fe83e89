#!/bin/sh
# Counts the database work of a continuation (issue 18): statements per
# continuation on PostgreSQL (pg_stat_statements), committed write
# transactions per continuation on SQLite (fsyncs of the WAL: at
# synchronous=FULL SQLite syncs the WAL at each commit that wrote pages).
# Both run BenchmarkContinuation/<backend>/Baton once: 1 160 continuations
# (200 one at a time, 480 from 16 producers, 480 by the workers alone).
#
#   bench/continuation-writes.sh pg BINARY       # STATS_URL: a database on a server that
#                                                #   preloads pg_stat_statements (created here)
#   bench/continuation-writes.sh sqlite BINARY   # needs strace
#
# BINARY is `go test -c ./continuation/`. Run from the repository root.
set -eu
what=$1 bin=$(realpath "$2") n=1160
cd continuation
case $what in
pg)
	: "${STATS_URL:?a database URL on a server with shared_preload_libraries=pg_stat_statements}"
	psql -q "$STATS_URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" -c "SELECT pg_stat_statements_reset()" >/dev/null
	BATON_TEST_DATABASE_URL=$STATS_URL "$bin" -test.run '^$' -test.bench 'BenchmarkContinuation/Postgres/Baton$' -test.benchtime 1x | grep Benchmark
	psql -q "$STATS_URL" -c "
WITH s AS (SELECT calls, total_exec_time, wal_bytes, query FROM pg_stat_statements
           WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND query !~* 'pg_stat_statements|^(create|alter|drop|comment|grant|revoke|do |lock )|river_migration|baton_schema_migrations|pg_catalog|information_schema')
SELECT CASE WHEN query ~* '^(begin|commit|rollback)' THEN 'transaction control'
            WHEN query ~* 'river_' THEN 'River' ELSE 'baton' END AS what,
       round(sum(calls) / $n.0, 2) AS per_continuation,
       round(sum(total_exec_time)::numeric / $n, 3) AS server_ms,
       round(sum(wal_bytes) / $n.0) AS wal_bytes
FROM s GROUP BY ROLLUP (1) ORDER BY 1"
	psql -q "$STATS_URL" -c "
SELECT round(calls / $n.0, 2) AS per_continuation, left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS statement
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND calls >= $n / 4 ORDER BY calls DESC, 2"
	;;
sqlite)
	out=$(mktemp)
	strace -f -qq -e trace=fsync,fdatasync -y -o "$out" "$bin" -test.run '^$' -test.bench 'BenchmarkContinuation/SQLite/Baton$' -test.benchtime 1x | grep Benchmark
	wal=$(grep -c -- '-wal>' "$out" || true)
	db=$(grep -c -- '\.db>' "$out" || true)
	echo "WAL syncs $wal, database-file syncs (checkpoints) $db"
	echo "committed write transactions per continuation: $(echo "scale=2; ($wal - $db) / $n" | bc)"
	rm -f "$out"
	;;
*) echo "usage: $0 pg|sqlite BINARY" >&2; exit 2 ;;
esac
