#!/bin/bash
# Runs BenchmarkContinuation/<backend>/(RiverEquivalent|Baton) of several
# test binaries, alternating, the order reversed every round, and prints
# each invocation's baton / RiverEquivalent ratio and baton's rate, then the
# median ratio of each binary (an invocation whose benchmark fails is
# reported and left out; issue 18: ratios within one invocation, since
# this machine's rates move ±30% between runs).
#
#   go test -c -o /tmp/a.test ./continuation/   # at each commit to compare
#   BATON_TEST_DATABASE_URL=postgres://… bench/continuation-ab.sh 8 Postgres /tmp/a.test /tmp/b.test
#   bench/continuation-ab.sh 8 SQLite /tmp/a.test /tmp/b.test
#
# Run from the repository root, with nothing else running on the machine.
set -eu
rounds=$1 backend=$2
shift 2
bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done
cd continuation
declare -A ratios
for r in $(seq 1 "$rounds"); do
	order=("${bins[@]}")
	if ((r % 2 == 0)); then mapfile -t order < <(printf '%s\n' "${bins[@]}" | tac); fi
	for b in "${order[@]}"; do
		out=$("$b" -test.run '^$' -test.bench "BenchmarkContinuation/$backend/(RiverEquivalent|Baton)\$" -test.benchtime 1x 2>&1 || true)
		re=$(echo "$out" | grep RiverEquivalent | grep -oE '[0-9.]+ per-s' | cut -d' ' -f1 || true)
		bt=$(echo "$out" | grep 'Baton-' | grep -oE ' [0-9.]+ per-s' | cut -d' ' -f2 || true)
		if [ -z "$re" ] || [ -z "$bt" ]; then
			# A failed invocation is reported, not measured.
			echo "$(basename "$b") FAILED: $(echo "$out" | grep -m3 -E 'FAIL|not done|Error' | tr '\n' ' ')"
			continue
		fi
		rt=$(echo "scale=3; $bt/$re" | bc)
		echo "$(basename "$b") RiverEquivalent=$re baton=$bt ratio=$rt"
		ratios[$b]="${ratios[$b]:-} $rt"
	done
done
for b in "${bins[@]}"; do
	echo "$(basename "$b") median ratio: $(echo ${ratios[$b]} | tr ' ' '\n' | sort -n |
		awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), "of", NR, "min", a[1], "max", a[NR]}')"
done
