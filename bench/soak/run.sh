#!/usr/bin/env bash
# The chaos soak (issue 37): e2e TestSoak for a chosen duration — three
# `baton serve` replicas behind HAProxy and two `baton worker`s on a private
# PostgreSQL server (started by the test with the Debian binaries under
# /usr/lib/postgresql/*/bin, on a free port: the shared database is never
# restarted), clients holding two-turn conversations (inline, background
# continuations, transfers; a refund the client approves; a thread handoff
# proposed, approved and followed by a turn on the child) through HAProxy,
# a SIGKILL of a random replica
# or worker every 2–5 s, one PostgreSQL restart halfway. It prints and
# appends to bench/results/soak.txt: turns and thread handoffs accepted,
# answered, lost, duplicated and stuck, the longest stall and the p99 turn latency; it
# fails on any loss, duplicate or stuck turn.
#
#   bench/soak/run.sh [DURATION]     (default 5m; CI runs the test for 60 s)
#
# Needs haproxy and the PostgreSQL server binaries; as root, the server runs
# as the postgres user.
set -euo pipefail
cd "$(dirname "$0")/../.."
duration=${1:-5m}
export BATON_SOAK_DURATION=$duration
export BATON_SOAK_REPORT=$PWD/bench/results/soak.txt
mkdir -p bench/results
go test -count=1 -timeout 30m -run '^TestSoak$' -v ./e2e/ | grep -E 'soak_test|^(--- |ok|FAIL)'
