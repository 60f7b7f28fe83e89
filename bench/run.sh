#!/usr/bin/env bash
# run.sh runs baton's core-runtime benchmarks and the eino peer benchmarks
# side by side in one run, interleaved round by round so that machine noise
# hits both alike, and prints a benchstat summary and a table of medians and
# ratios.
#
#   bench/run.sh                 # 10 rounds of 1s per benchmark
#   COUNT=6 BENCHTIME=500ms bench/run.sh
#   NOPEER=1 bench/run.sh        # baton only
#   BENCH='^BenchmarkTurn$' bench/run.sh   # one regexp for both modules
#   BEFORE=65bc5f4 bench/run.sh  # also baton at that commit, right before
#                                # each baton benchmark: before/after and
#                                # eino/before in the same rounds
#
# Raw outputs go to bench/results/core-*.txt (OUT=dir to change). benchstat
# is used when it is on PATH or in $(go env GOPATH)/bin:
#   go install golang.org/x/perf/cmd/benchstat@latest
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
count=${COUNT:-10}
benchtime=${BENCHTIME:-1s}
out=${OUT:-$here/results}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Build the test binaries once: every round runs the same code.
(cd "$here" && go test -c -o "$tmp/baton.test" .)
before=""
if [[ -n ${BEFORE:-} ]]; then
	# baton at commit BEFORE, from an export of it (not a working tree).
	mkdir "$tmp/before-src"
	git -C "$here/.." archive "$BEFORE" | tar -x -C "$tmp/before-src"
	(cd "$tmp/before-src/bench" && go test -c -o "$tmp/before.test" .)
	before=$(git -C "$here" rev-parse "$BEFORE")
fi
peer=""
if [[ -z "${NOPEER:-}" ]]; then
	(cd "$here/peers/eino" && go test -c -o "$tmp/eino.test" .)
	peer=1
fi

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: ${REV:-$(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)}"
	dirty=$({ git -C "$here/.." status --porcelain -- agent transfer message model runner runstate policy internal 2>/dev/null || true; } | tr '\n' ' ')
	if git -C "$here" rev-parse --git-dir >/dev/null 2>&1; then
		echo "dirty: ${dirty:-none}"
	else
		echo "dirty: unknown (not a git checkout)"
	fi
	echo "go: $(go version)"
	echo "nproc: $(nproc)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
	echo "uname: $(uname -srm)"
	if [[ -n $peer ]]; then
		echo "eino: $(cd "$here/peers/eino" && go list -m -f '{{.Version}}' github.com/cloudwego/eino)"
	fi
	if [[ -n $before ]]; then
		echo "before: $before (run right before each baton benchmark)"
	fi
	echo "rounds: $count x -benchtime=$benchtime, each baton benchmark run right before its eino counterpart"
} >"$out/core-env.txt"
cat "$out/core-env.txt"

: >"$out/core-baton.txt"
: >"$out/core-eino.txt"
if [[ -n $before ]]; then
	: >"$out/core-before.txt"
fi
# Each round runs every benchmark once, a baton benchmark right before the
# eino benchmark it is compared with, so that each pair sees the same load.
steps=(
	"baton ^BenchmarkTransfer$"
	"eino ^BenchmarkEinoTransfer$"
	"baton ^BenchmarkTransferStream$"
	"baton ^BenchmarkTransferChain10$"
	"eino ^BenchmarkEinoTransferChain10$"
	"baton ^(BenchmarkTransferScripted|BenchmarkTurn)$"
)
if [[ -n ${BENCH:-} ]]; then
	steps=("baton $BENCH" "eino $BENCH")
fi
for ((i = 1; i <= count; i++)); do
	echo "round $i/$count" >&2
	for step in "${steps[@]}"; do
		which=${step%% *} re=${step#* }
		if [[ $which == eino && -z $peer ]]; then
			continue
		fi
		if [[ $which == baton && -n $before ]]; then
			"$tmp/before.test" -test.run='^$' -test.bench="$re" -test.benchmem -test.count=1 -test.benchtime="$benchtime" >>"$out/core-before.txt"
		fi
		"$tmp/$which.test" -test.run='^$' -test.bench="$re" -test.benchmem -test.count=1 -test.benchtime="$benchtime" >>"$out/core-$which.txt"
	done
done

benchstat=$(command -v benchstat || true)
if [[ -z $benchstat && -x "$(go env GOPATH)/bin/benchstat" ]]; then
	benchstat="$(go env GOPATH)/bin/benchstat"
fi

{
	if [[ -n $benchstat ]]; then
		echo "== baton (benchstat)"
		"$benchstat" "$out/core-baton.txt"
		if [[ -n $before ]]; then
			echo
			echo "== baton before ($before) vs after (benchstat)"
			"$benchstat" before="$out/core-before.txt" after="$out/core-baton.txt"
		fi
		if [[ -n $peer ]]; then
			# Same names on both sides, so that benchstat puts them in one table:
			# eino's Transfer is compared with baton's Run and Stream of a transfer.
			grep -E '^(Benchmark(Transfer|TransferStream|TransferChain10)-|goos|goarch|cpu)' "$out/core-baton.txt" >"$tmp/baton"
			{
				grep -E '^(goos|goarch|cpu)' "$out/core-eino.txt"
				sed -n 's/^BenchmarkEinoTransfer-/BenchmarkTransfer-/p' "$out/core-eino.txt"
				sed -n 's/^BenchmarkEinoTransfer-/BenchmarkTransferStream-/p' "$out/core-eino.txt"
				sed -n 's/^BenchmarkEinoTransferChain10-/BenchmarkTransferChain10-/p' "$out/core-eino.txt"
			} >"$tmp/eino"
			echo
			echo "== baton vs eino (benchstat; eino's one transfer is listed under both Transfer and TransferStream)"
			"$benchstat" baton="$tmp/baton" eino="$tmp/eino"
		fi
	else
		echo "(benchstat not found: go install golang.org/x/perf/cmd/benchstat@latest)"
	fi

	echo
	echo "== medians and ratios (eino / baton; higher means baton is ahead)"
	awk '
	function mid(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function median(key,   n, i, a) {
		n = cnt[key]
		for (i = 1; i <= n; i++) a[i] = val[key, i]
		return mid(a, n)
	}
	# paired is the median of the per-round ratios peer/base: rounds are
	# interleaved, so each ratio compares runs made under the same load.
	function paired(peer, base, unit,   n, i, a) {
		n = cnt[base SUBSEP unit]
		if (cnt[peer SUBSEP unit] < n) n = cnt[peer SUBSEP unit]
		for (i = 1; i <= n; i++) a[i] = val[peer SUBSEP unit, i] / val[base SUBSEP unit, i]
		return mid(a, n)
	}
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
		if (FILENAME ~ /core-before\.txt$/) name = "before:" name
		for (f = 3; f < NF; f += 2) {
			unit = $(f + 1)
			if (unit != "ns/op" && unit != "B/op" && unit != "allocs/op") continue
			key = name SUBSEP unit
			cnt[key]++; val[key, cnt[key]] = $f
			if (!(name in seen)) { seen[name] = 1; order[++nn] = name }
		}
	}
	END {
		printf "%-26s %12s %10s %10s %5s\n", "benchmark", "ns/op", "B/op", "allocs/op", "runs"
		for (k = 1; k <= nn; k++) {
			b = order[k]
			printf "%-26s %12.0f %10.0f %10.0f %5d\n", b, median(b SUBSEP "ns/op"), median(b SUBSEP "B/op"), median(b SUBSEP "allocs/op"), cnt[b SUBSEP "ns/op"]
		}
		split("Transfer:EinoTransfer TransferStream:EinoTransfer TransferChain10:EinoTransferChain10 before:Transfer:EinoTransfer before:TransferStream:EinoTransfer before:TransferChain10:EinoTransferChain10", pairs, " ")
		printf "\n%-46s %8s %8s %10s %16s\n", "ratio eino/baton (of medians)", "time", "bytes", "allocs", "time (paired)"
		for (k = 1; k in pairs; k++) {
			if (split(pairs[k], p, ":") == 3) { p[1] = p[1] ":" p[2]; p[2] = p[3] }
			if (!((p[1] SUBSEP "ns/op") in cnt) || !((p[2] SUBSEP "ns/op") in cnt)) continue
			printf "%-46s %7.1fx %7.1fx %9.1fx %15.1fx\n", p[2] " / " p[1],
				median(p[2] SUBSEP "ns/op") / median(p[1] SUBSEP "ns/op"),
				median(p[2] SUBSEP "B/op") / median(p[1] SUBSEP "B/op"),
				median(p[2] SUBSEP "allocs/op") / median(p[1] SUBSEP "allocs/op"),
				paired(p[2], p[1], "ns/op")
		}
	}' "$out/core-baton.txt" "$out/core-eino.txt" ${before:+"$out/core-before.txt"}
} | tee "$out/core-summary.txt"
