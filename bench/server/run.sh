#!/usr/bin/env bash
# Load benchmark of the server (not run by CI): see main.go. Raises the
# file descriptor limit (one socket per stream in each process) and runs
# the benchmark; flags go to it (defaults: 10 000 held streams, 2 000
# timed runs):
#
#   bench/server/run.sh [-streams N] [-ttfb N] [-hold 30s] ...
set -euo pipefail
cd "$(dirname "$0")/../.."
ulimit -n "$(ulimit -Hn)"
echo "ulimit -n $(ulimit -n); $(go version); commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/server-bench" ./bench/server
"$bin/server-bench" "$@"
