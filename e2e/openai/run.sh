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
. ../../scripts/lib/nodesuite.sh
suite_start "openai client tests"
npm_install
serve_start openai "$ART/serve.log"

status=0
BATON_URL="$URL" BATON_KEY="$KEY" node --test --test-concurrency=1 test.mjs || status=$?
suite_end "$status" "see the output above and $ART/serve.log"
