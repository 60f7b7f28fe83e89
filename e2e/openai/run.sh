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

. "$ROOT/scripts/lib/serve.sh"
serve_start openai "$ART/serve.log"

status=0
BATON_URL="$URL" BATON_KEY="$KEY" node --test --test-concurrency=1 test.mjs || status=$?
if [ "$status" -ne 0 ]; then
  tail -n 30 "$ART/serve.log"
  fail "see the output above and $ART/serve.log"
fi
echo "openai client tests: PASS"
