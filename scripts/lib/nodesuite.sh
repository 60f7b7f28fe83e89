# Sourced by the Node test runners (webui/e2e/run.sh, e2e/openai/run.sh)
# from their own folder: empties its artifacts/, installs its packages,
# builds baton, starts `baton serve` on a free loopback port with a
# temporary SQLite database and the example networks, and stops it on exit.
#
#   suite_start LABEL      the suite is called LABEL in its PASS and FAIL
#                          lines; empties ./artifacts (in $ART)
#   fail MESSAGE           says LABEL: FAIL (MESSAGE) and exits non-zero
#   npm_install            checks that node is there and installs the
#                          packages with npm ci from package-lock.json
#   serve_start NAME LOG   builds, creates an API key named NAME (in $KEY),
#                          starts serve with its log in LOG and waits for its
#                          address (in $URL); the binary is $TMP/baton
#   suite_end STATUS HINT  with a non-zero STATUS (the tests' exit code),
#                          shows the end of the server log ($ART/serve.log)
#                          and fails, pointing at HINT; else says PASS
#
# ROOT is the repository's root.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TMP=$(mktemp -d)
PID=""
serve_cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap serve_cleanup EXIT

suite_start() {
  SUITE=$1
  ART="$(pwd)/artifacts"
  rm -rf "$ART"
  mkdir -p "$ART"
}

fail() { echo "$SUITE: FAIL ($*)"; exit 1; }

npm_install() {
  command -v node >/dev/null || fail "node is not installed"
  npm ci --no-audit --no-fund --loglevel=error >/dev/null || fail "npm ci"
}

serve_start() {
  local name=$1 log=$2
  (cd "$ROOT" && go build -o "$TMP/baton" ./cmd/baton) || fail "go build"
  local db="sqlite:$TMP/baton.db"
  KEY=$("$TMP/baton" keys create --owner e2e --name "$name" --database "$db" 2>/dev/null) || fail "baton keys create"
  "$TMP/baton" serve --addr 127.0.0.1:0 --database "$db" \
    --network "$ROOT/examples/support/network.yaml" \
    --network "$ROOT/examples/research/network.yaml" >"$log" 2>&1 &
  PID=$!
  URL=""
  for _ in $(seq 1 150); do
    URL=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -n1 | sed 's/^listening on //' || true)
    [ -n "$URL" ] && break
    kill -0 "$PID" 2>/dev/null || { cat "$log"; fail "baton serve exited"; }
    sleep 0.2
  done
  [ -n "$URL" ] || { cat "$log"; fail "baton serve did not start"; }
  echo "baton serve at $URL"
}

suite_end() {
  if [ "$1" -ne 0 ]; then
    tail -n 30 "$ART/serve.log"
    fail "$2"
  fi
  echo "$SUITE: PASS"
}
