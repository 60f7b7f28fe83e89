#!/usr/bin/env bash
# The official OpenAI Node client (openai) and the Vercel AI SDK
# (@ai-sdk/openai-compatible; @ai-sdk/openai, whose default is the Responses
# API) against a real `baton serve`: builds baton, serves the example
# networks on a free loopback port with a temporary SQLite database, creates
# an API key with `baton keys create`, installs the packages with npm ci from
# package-lock.json and runs test.mjs. The server log goes to
# e2e/openai/artifacts/. The last line says PASS or FAIL; the exit code is
# non-zero on failure.
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
ROOT=$(cd ../.. && pwd)
ART="$HERE/artifacts"
rm -rf "$ART"
mkdir -p "$ART"

fail() { echo "openai client tests: FAIL ($*)"; exit 1; }

command -v node >/dev/null || fail "node is not installed"
npm ci --no-audit --no-fund --loglevel=error >/dev/null || fail "npm ci"

TMP=$(mktemp -d)
PID=""
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

(cd "$ROOT" && go build -o "$TMP/baton" ./cmd/baton) || fail "go build"
DB="sqlite:$TMP/baton.db"
KEY=$("$TMP/baton" keys create --owner e2e --name openai --database "$DB" 2>/dev/null) || fail "baton keys create"

"$TMP/baton" serve --addr 127.0.0.1:0 --database "$DB" \
  --network "$ROOT/examples/support/network.yaml" \
  --network "$ROOT/examples/research/network.yaml" >"$ART/serve.log" 2>&1 &
PID=$!
URL=""
for _ in $(seq 1 150); do
  URL=$(grep -o 'listening on http://[0-9.:]*' "$ART/serve.log" | head -n1 | sed 's/^listening on //' || true)
  [ -n "$URL" ] && break
  kill -0 "$PID" 2>/dev/null || { cat "$ART/serve.log"; fail "baton serve exited"; }
  sleep 0.2
done
[ -n "$URL" ] || { cat "$ART/serve.log"; fail "baton serve did not start"; }
echo "baton serve at $URL"

status=0
BATON_URL="$URL" BATON_KEY="$KEY" node --test --test-concurrency=1 test.mjs || status=$?
if [ "$status" -ne 0 ]; then
  tail -n 30 "$ART/serve.log"
  fail "see the output above and $ART/serve.log"
fi
echo "openai client tests: PASS"
