#!/usr/bin/env bash
# Runs the durability proof, TestKillEverything (e2e/kill_test.go), against
# the database you name: runs are submitted by concurrent clients to
# `baton serve` while serve, `baton worker` and `baton run` processes are
# SIGKILLed at random moments; then no run may be lost or stuck, no tool
# effect may have happened twice, and nothing may be left open.
#
#   scripts/killtest.sh [sqlite | postgres://…] [RUNS]
#
#   sqlite          a new SQLite file (the default)
#   postgres://…    a PostgreSQL database; the test works in a new schema
#                   of it, dropped at the end (the URL's role must be able
#                   to create schemas, and a role baton_app)
#   RUNS            runs submitted by the clients (default 60), on top of
#                   those of the killed `baton run` processes; every thread
#                   then takes a second turn
#
# Examples:
#   scripts/killtest.sh
#   scripts/killtest.sh postgres://postgres@127.0.0.1:5432/test?sslmode=disable 200
#
# BATON_E2E_LOGS=DIR keeps the logs of every process (serve.log,
# worker-N.log, cli-N.log, each life of a restarted process in turn) in
# DIR/<test name>/.
#
# It sets BATON_KILL_DATABASE and BATON_KILL_RUNS, which the test reads;
# without them (as in `go test ./...`) it runs both SQLite and, with
# BATON_TEST_DATABASE_URL, PostgreSQL, with 50 runs. The test prints every
# kill, the kills per kind of process and moment, the deliveries the tool
# service de-duplicated, and how long recovery took against its bound.
set -euo pipefail
cd "$(dirname "$0")/.."

db=${1:-sqlite}
runs=${2:-60}
case "$db" in
  sqlite | postgres://* | postgresql://*) ;;
  *) echo "usage: $0 [sqlite | postgres://…] [RUNS]" >&2; exit 2 ;;
esac
case "$runs" in
  '' | *[!0-9]* | 0) echo "RUNS must be a positive number, got \"$runs\"" >&2; exit 2 ;;
esac

export BATON_KILL_DATABASE="$db" BATON_KILL_RUNS="$runs"
exec go test ./e2e -run 'TestKillEverything$' -count=1 -v -timeout 30m
