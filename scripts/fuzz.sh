#!/usr/bin/env bash
# Runs every fuzz target for a while and keeps the corpus it grows in the
# package's testdata/fuzz/<Target>/, so that plain `go test` replays it.
#
#   scripts/fuzz.sh [DURATION] [PACKAGE_PATTERN]     (default 60s ./...)
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-60s}
pattern=${2:-./...}
cache=$(go env GOCACHE)/fuzz
for pkg in $(go list "$pattern"); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "== $pkg $target ($dur)"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$dur" "$pkg"
    if [ -d "$cache/$pkg/$target" ]; then
      mkdir -p "$dir/testdata/fuzz/$target"
      cp -n "$cache/$pkg/$target"/* "$dir/testdata/fuzz/$target/" 2>/dev/null || true
    fi
  done
done
