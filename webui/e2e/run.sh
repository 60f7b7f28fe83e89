#!/usr/bin/env bash
# Browser tests of the web UI: builds baton, starts `baton serve` on a free
# loopback port with a temporary SQLite database and the example networks,
# creates an API key with `baton keys create`, and drives Debian's Chromium
# with playwright-core (installed with npm ci from package-lock.json) through
# test.mjs and, on a 390 px phone screen, mobile.mjs; eval.mjs opens the HTML
# report of `baton eval` (the same binary); inspect.mjs the inspector (a run's steps,
# a step's request and answer, a fork). Screenshots, the report and the
# server log go to webui/e2e/artifacts/.
# The last line says PASS or FAIL; the exit code is non-zero on failure.
set -euo pipefail
cd "$(dirname "$0")"
. ../../scripts/lib/nodesuite.sh
suite_start "browser tests"

if [ ! -x /usr/bin/chromium ]; then
  echo "installing Debian's chromium"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq || fail "apt-get update"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null || fail "apt-get install chromium"
fi
npm_install
serve_start browser "$ART/serve.log"

status=0
BATON_URL="$URL" BATON_KEY="$KEY" BATON_BIN="$TMP/baton" ROOT="$ROOT" ARTIFACTS="$ART" node --test --test-concurrency=1 test.mjs mobile.mjs eval.mjs inspect.mjs || status=$?
ls "$ART"
suite_end "$status" "see the output above and the screenshots in $ART"
