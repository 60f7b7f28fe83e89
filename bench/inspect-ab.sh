#!/bin/bash
# The inspector's cost on the hot path (issue 35): runs, in one test binary
# of the current tree, BenchmarkContinuation/<backend>/(Baton|Inline)
# without and with the recording of calls (BENCH_RECORD_CALLS unset, =1),
# alternating, the order reversed every round, and prints each
# invocation's figures.
#
#   BATON_TEST_DATABASE_URL=postgres://… bench/inspect-ab.sh 4 Postgres
#   bench/inspect-ab.sh 4 SQLite
#
# Run from the repository root.
set -eu
rounds=$1 backend=$2
go test -c -o /tmp/inspect-ab.test ./continuation/
cd continuation
for r in $(seq 1 "$rounds"); do
	modes=(off on)
	if ((r % 2 == 0)); then modes=(on off); fi
	for m in "${modes[@]}"; do
		env=()
		if [ "$m" = on ]; then env=(BENCH_RECORD_CALLS=1); fi
		out=$(env "${env[@]}" /tmp/inspect-ab.test -test.run '^$' -test.bench "BenchmarkContinuation/$backend/(Baton|Inline)\$" -test.benchtime 1x 2>&1 || true)
		echo "round $r record=$m"
		echo "$out" | grep -E '^Benchmark' || echo "$out" | grep -m3 -E 'FAIL|Error'
	done
done
