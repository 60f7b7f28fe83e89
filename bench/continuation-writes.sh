#!/bin/sh
# Counts the database work of a continuation (issue 18): statements, server
# execution time and WAL bytes per continuation on PostgreSQL
# (pg_stat_statements), committed write transactions per continuation on
# SQLite (fsyncs of the WAL: at synchronous=FULL SQLite syncs the WAL at each
# commit that wrote pages).
#
#   bench/continuation-writes.sh pg BINARY       # BINARY: go test -c ./continuation/
#   bench/continuation-writes.sh sqlite BINARY   #   needs strace
#   bench/continuation-writes.sh equiv BINARY    # RiverEquivalent (the yardstick), PostgreSQL
#   bench/continuation-writes.sh peer BINARY     # BINARY: go test -c in bench/peers/dbos:
#                                                #   baton and DBOS, on both backends
#
# pg and sqlite run BenchmarkContinuation/<backend>/Baton once: 1 160
# continuations (200 one at a time, 480 from 16 producers, 480 by the workers
# alone). peer runs BenchmarkPeers/<backend>/Baton (the same 1 160) and
# BenchmarkPeers/<backend>/DBOS (680 workflows: 200 one at a time, 480 from
# 16 producers), one after the other, and counts each alone.
#
# PostgreSQL: the shared server cannot preload pg_stat_statements, so unless
# STATS_URL names a database on a server that does, a private PostgreSQL
# cluster is created in /tmp/baton-pgstat, listening on 127.0.0.1:5499
# (default settings, synchronous_commit=on), and left running for the next
# count (stop it: runuser -u postgres -- pg_ctl -D /tmp/baton-pgstat/data stop).
# Its postmaster serves nothing else: its pid (head -1
# /tmp/baton-pgstat/data/postmaster.pid) is what BENCH_PG_PID takes for the
# pairs' server CPU per unit (continuationbench.ServerPIDVar).
#
# Per statement it prints calls per unit, server (execution) ms per unit and
# µs per call, shared buffers hit or read per unit, buffers dirtied and WAL
# bytes per unit, the costliest first; WIDTH sets how much of each
# statement's text is shown (default 100). Execution time is wall time: on
# a loaded machine it holds waits (locks, the CPU) as well as work.
# Run from the repository root.
set -eu
what=$1 bin=$(realpath "$2")

cluster() {
	if [ -n "${STATS_URL:-}" ]; then return; fi
	STATS_URL=postgres://postgres@127.0.0.1:5499/test?sslmode=disable
	if pg_isready -q -h 127.0.0.1 -p 5499; then return; fi
	dir=/tmp/baton-pgstat
	as=""
	if [ "$(id -u)" = 0 ]; then as="runuser -u postgres --"; fi
	rm -rf "$dir" && mkdir -p "$dir" && { [ -z "$as" ] || chown postgres "$dir"; }
	$as initdb -D "$dir/data" -A trust -U postgres >/dev/null
	$as pg_ctl -D "$dir/data" -l "$dir/log" -w \
		-o "-p 5499 -k $dir -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements -c max_connections=200" start >/dev/null
	psql -q "postgres://postgres@127.0.0.1:5499/postgres?sslmode=disable" -c "CREATE DATABASE test"
}

# pgcount BENCH UNITS: runs the benchmark BENCH (a -test.bench pattern) on
# the stats database and prints what pg_stat_statements counted, per unit.
pgcount() {
	n=$2
	psql -q "$STATS_URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" -c "SELECT pg_stat_statements_reset()" >/dev/null
	BATON_TEST_DATABASE_URL=$STATS_URL "$bin" -test.run '^$' -test.bench "$1" -test.benchtime 1x | grep Benchmark
	psql -q "$STATS_URL" -c "
WITH s AS (SELECT calls, total_exec_time, wal_bytes, query FROM pg_stat_statements
           WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND query !~* 'pg_stat_statements|^(create|alter|drop|comment|grant|revoke|do |lock )|river_migration|baton_schema_migrations|dbos_migrations|pg_catalog|information_schema')
SELECT CASE WHEN query ~* '^(begin|commit|rollback|savepoint|release)' THEN 'transaction control'
            WHEN query ~* 'river_' THEN 'River'
            WHEN query ~* 'app_threads|app_messages' THEN 'application (DBOS peer)'
            WHEN query ~* 'workflow_|operation_outputs|queues|notifications|streams|application_versions|event_dispatch|enqueue_workflow' THEN 'DBOS'
            ELSE 'baton' END AS what,
       round(sum(calls) / $n.0, 2) AS per_unit,
       round(sum(total_exec_time)::numeric / $n, 3) AS server_ms,
       round(sum(wal_bytes) / $n.0) AS wal_bytes
FROM s GROUP BY ROLLUP (1) ORDER BY 1"
	psql -q "$STATS_URL" -c "
SELECT round(calls / $n.0, 2) AS per_unit, round(total_exec_time::numeric / $n, 3) AS server_ms,
       round(total_exec_time::numeric * 1000 / calls) AS us_per_call,
       round((shared_blks_hit + shared_blks_read) / $n.0, 1) AS blks,
       round(shared_blks_dirtied / $n.0, 2) AS dirtied, round(wal_bytes / $n.0) AS wal_bytes,
       left(regexp_replace(query, '\s+', ' ', 'g'), ${WIDTH:-100}) AS statement
FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND calls >= $n / 4 ORDER BY total_exec_time DESC"
}

# sqlitecount BENCH UNITS: committed write transactions per unit of BENCH.
sqlitecount() {
	out=$(mktemp)
	strace -f -qq -e trace=fsync,fdatasync -y -o "$out" "$bin" -test.run '^$' -test.bench "$1" -test.benchtime 1x | grep Benchmark
	wal=$(grep -c -- '-wal>' "$out" || true)
	db=$(grep -c -- '\.db>' "$out" || true)
	echo "WAL syncs $wal, database-file syncs (checkpoints) $db"
	echo "committed write transactions per unit: $(echo "scale=2; ($wal - $db) / $2" | bc)"
	rm -f "$out"
}

case $what in
pg)
	cluster
	cd continuation && pgcount 'BenchmarkContinuation/Postgres/Baton$' 1160
	;;
equiv)
	cluster
	cd continuation && pgcount 'BenchmarkContinuation/Postgres/RiverEquivalent$' 480
	;;
sqlite)
	cd continuation && sqlitecount 'BenchmarkContinuation/SQLite/Baton$' 1160
	;;
peer)
	cluster
	cd bench/peers/dbos
	echo "== PostgreSQL, baton (per continuation)" && pgcount 'BenchmarkPeers/Postgres/Baton$' 1160
	echo "== PostgreSQL, DBOS (per workflow)" && pgcount 'BenchmarkPeers/Postgres/DBOS$' 680
	echo "== SQLite, baton (per continuation)" && sqlitecount 'BenchmarkPeers/SQLite/Baton$' 1160
	echo "== SQLite, DBOS (per workflow)" && sqlitecount 'BenchmarkPeers/SQLite/DBOS$' 680
	;;
*) echo "usage: $0 pg|equiv|sqlite|peer BINARY" >&2; exit 2 ;;
esac
